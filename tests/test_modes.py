"""Execution modes: the API, Debug (blocking, errors at the op, NaN check) and
DeferAndFuse (recorded graphs fused at sync points), each against the CPU oracle."""
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _helpers import check_scenario, tpu_only

pytestmark = tpu_only

if True:  # imported lazily so the CPU stand-in run can collect this module
    try:
        import torch_tpu
        from torch_tpu.execution_mode import EagerMode, eager_mode, get_eager_mode, set_eager_mode
    except ImportError:  # pragma: no cover - CPU stand-in without the backend
        pass


@pytest.fixture(autouse=True)
def restore_mode():
    before = get_eager_mode()
    yield
    set_eager_mode(before)
    torch_tpu._C._set_debug_nans(False)


ALL_MODES = ["STRICT", "DEBUG", "DEFER_AND_FUSE"]


@pytest.mark.skipif(any(os.environ.get(v, "") not in ("", "0") for v in
                        ("TORCH_TPU_DEFER_AND_FUSE", "TPU_DEFER_AND_FUSE",
                         "TORCH_TPU_LAUNCH_BLOCKING", "TPU_LAUNCH_BLOCKING")),
                    reason="a mode was chosen through the environment")
def test_default_is_strict():
    assert get_eager_mode() is EagerMode.STRICT


def test_aliases():
    assert EagerMode.DEFER_NEVER is EagerMode.STRICT
    assert EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING is EagerMode.DEBUG
    from torch_tpu._internal.execution_mode import EagerMode as E2
    assert E2 is EagerMode


def test_set_as_call_and_as_context_manager():
    set_eager_mode(EagerMode.DEBUG)
    assert get_eager_mode() is EagerMode.DEBUG
    set_eager_mode(EagerMode.STRICT)
    assert get_eager_mode() is EagerMode.STRICT
    with set_eager_mode(EagerMode.DEBUG):
        assert get_eager_mode() is EagerMode.DEBUG
        with eager_mode(EagerMode.STRICT):
            assert get_eager_mode() is EagerMode.STRICT
        assert get_eager_mode() is EagerMode.DEBUG
    assert get_eager_mode() is EagerMode.STRICT


def test_backward_thread_sees_the_mode():
    seen = []

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            seen.append(get_eager_mode())
            return g

    x = torch.ones(3, device="tpu", requires_grad=True)
    with eager_mode(EagerMode.DEBUG):
        Probe.apply(x).sum().backward()
    assert seen == [EagerMode.DEBUG]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_views_and_training_match_cpu_in_each_mode(mode):
    mode = EagerMode[mode]
    def scenario(device):
        torch.manual_seed(0)
        base = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6)
        v = base[1:, ::2].t()
        v.mul_(2)
        base.diagonal().add_(1)
        model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(base), torch.tensor([0, 1, 2, 1], device=device))
            loss.backward()
            opt.step()
            losses.append(loss)
        return base, v, base._version, losses
    with eager_mode(mode):
        check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_debug_nan_check_names_the_op():
    torch_tpu._C._set_debug_nans(True)
    x = torch.zeros(4, device="tpu")
    with eager_mode(EagerMode.DEBUG):
        with pytest.raises(RuntimeError, match=r"div.*NaN or Inf|NaN or Inf.*div"):
            x / x
        assert (x + 1).sum().item() == 4  # still usable
    (x / x).cpu()  # strict mode does not check


def test_launch_blocking_env_starts_in_debug():
    from test_errors import run_python
    res = run_python("""
        import torch, torch_tpu
        from torch_tpu.execution_mode import get_eager_mode
        print(get_eager_mode().name)
    """, TORCH_TPU_LAUNCH_BLOCKING="1")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("DEBUG")


# ---------------------------------------------------------------------------
# DeferAndFuse

def _mlp_training(device, steps, after_step=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    x = torch.randn(8, 16).to(device)
    y = torch.tensor([0, 1, 2, 3, 3, 2, 1, 0]).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if after_step:
            after_step()
    return losses, [p.detach() for p in model.parameters()]


def test_defer_training_loop_compiles_its_step_once():
    compiles, graphs = [], []

    def after_step():
        torch_tpu.sync()
        compiles.append(torch.tpu.compile_stats()["compiles"])
        graphs.append(torch_tpu.defer_stats()["graphs_executed"])

    with eager_mode(EagerMode.DEFER_AND_FUSE):
        check_scenario(lambda d: _mlp_training(d, 8, after_step if d != "cpu" else None),
                       atol=1e-5, rtol=1e-4)
    # step 1 also creates the optimizer state, so steps 1 and 2 differ; from
    # step 2 on every step is one cached fused graph: nothing compiles again
    assert compiles[1:] == [compiles[1]] * 7, compiles
    assert all(b > a for a, b in zip(graphs, graphs[1:])), graphs


def test_defer_records_instead_of_running_and_fuses():
    x = torch.randn(64, 64).to("tpu")
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        s0 = torch_tpu.defer_stats()
        y = x
        for _ in range(10):
            y = torch.tanh(y * 1.01 + 0.5)
        s1 = torch_tpu.defer_stats()
        assert s1["ops_recorded"] - s0["ops_recorded"] >= 30
        assert s1["graphs_executed"] == s0["graphs_executed"]  # nothing ran yet
        out = y.cpu()  # sync point
        s2 = torch_tpu.defer_stats()
    ref = x.cpu()
    for _ in range(10):
        ref = torch.tanh(ref * 1.01 + 0.5)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert s2["graphs_executed"] == s1["graphs_executed"] + 1
    # 30 recorded results, only the last is referenced: the rest were never materialised
    assert s2["values_dropped"] - s1["values_dropped"] >= 29
    assert s2["materialisations_by_reason"]


@pytest.mark.parametrize("grow", [True, False])
def test_defer_records_storage_resizes(grow):
    # Storage work goes through the same executor as ops: growing or
    # shrinking a storage whose value is still pending is recorded too, not
    # a sync point.
    x = torch.randn(6, 5).to("tpu")
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        y = x * 2 + 1
        g0 = torch_tpu.defer_stats()["graphs_executed"]
        y.untyped_storage().resize_((40 if grow else 12) * 4)
        z = torch.empty(0, device="tpu").set_(y.untyped_storage(), 0, (12,), (1,)) * 3
        assert torch_tpu.defer_stats()["graphs_executed"] == g0
        out = z.cpu()
        assert torch_tpu.defer_stats()["graphs_executed"] == g0 + 1
    ref = (x.cpu() * 2 + 1).view(-1)[:12] * 3
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("sync_point", ["item", "tolist", "print", "synchronize", "save", "leave_mode"])
def test_defer_sync_points_give_correct_values(sync_point, tmp_path, capsys):
    x = torch.arange(6, dtype=torch.float32).to("tpu")
    set_eager_mode(EagerMode.STRICT)
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        g0 = torch_tpu.defer_stats()["graphs_executed"]
        y = (x * 2).sum()
        if sync_point == "item":
            assert y.item() == 30.0
        elif sync_point == "tolist":
            assert (x * 2).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        elif sync_point == "print":
            print(y)
            assert "30." in capsys.readouterr().out
        elif sync_point == "synchronize":
            torch.tpu.synchronize()
            assert torch_tpu.defer_stats()["graphs_executed"] == g0 + 1
        elif sync_point == "save":
            torch.save(y, tmp_path / "y.pt")
            assert torch.load(tmp_path / "y.pt").item() == 30.0
    if sync_point == "leave_mode":
        assert torch_tpu.defer_stats()["graphs_executed"] == g0 + 1
        assert y.item() == 30.0


def test_defer_inplace_through_views_and_versions():
    def scenario(device):
        base = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6)
        col = base[:, 2]
        row = base[1]
        row.mul_(3)
        col.add_(1)
        base.t()[0].sub_(2)
        torch.add(base[2], 5, out=base[3])
        return base, col, row, base._version
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        check_scenario(scenario)


def test_defer_error_surfaces_at_sync_naming_ops():
    a = torch.randn(4, 4).to("tpu")
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        # shape errors are still raised at the op (shapes are known when recording)
        with pytest.raises(RuntimeError, match="size|shape"):
            a + torch.randn(3).to("tpu")
    # a failure while running the fused graph names the ops of that graph
    torch_tpu._C._set_debug_nans(False)
    b = torch.ones(4).to("tpu")
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        z = (b * 2).exp()
        torch_tpu._C._inject_graph_failure(True)
        try:
            with pytest.raises(RuntimeError, match=r"DeferAndFuse graph.*mul.*exp"):
                z.cpu()
        finally:
            torch_tpu._C._inject_graph_failure(False)
        # the process stays usable
        assert (b + 1).sum().item() == 8.0


def test_defer_backward_end_is_a_sync_point():
    w = torch.randn(8, 8).to("tpu").requires_grad_()
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        reasons0 = dict(torch_tpu.defer_stats()["materialisations_by_reason"])
        loss = (w.tanh() * 3).sum()
        loss.backward()
        reasons1 = torch_tpu.defer_stats()["materialisations_by_reason"]
        assert reasons1.get("end of backward()", 0) == reasons0.get("end of backward()", 0) + 1
        (g,) = torch.autograd.grad((w * w).sum(), w)
        assert torch_tpu.defer_stats()["materialisations_by_reason"].get("end of grad()", 0) >= 1
    wc = w.detach().cpu()
    torch.testing.assert_close(w.grad.cpu(), 3 * (1 - wc.tanh() ** 2))
    torch.testing.assert_close(g.cpu(), 2 * wc)


def test_defer_repeated_scalars_and_view_offsets_upload_once():
    # Scalar arguments and view offsets become device constants shared by
    # every later call with the same value: repeating a step uploads nothing.
    x_cpu = torch.randn(16, 16)
    x = x_cpu.to("tpu")

    def step():
        return x[4:8] * 0.37 + x[8:12].t()[:4, :4].sum() * 1.5

    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch.stack([step() for _ in range(10)]).cpu()
        before = torch.tpu.compile_stats()["host_to_device"]
        outs = torch.stack([step() for _ in range(10)]).cpu()
        uploads = torch.tpu.compile_stats()["host_to_device"] - before
    ref = x_cpu[4:8] * 0.37 + x_cpu[8:12].t()[:4, :4].sum() * 1.5
    torch.testing.assert_close(outs, ref.expand(10, 4, 16))
    assert uploads == 0


def test_defer_donates_dead_inputs_only():
    w_cpu, g_cpu = torch.randn(64, 64), torch.randn(64, 64)
    w, g = w_cpu.to("tpu"), g_cpu.to("tpu")
    view = w[:8]  # shares w's storage: the old buffer is still reachable through it until the update
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch_tpu.sync()
        d0 = torch_tpu.defer_stats()["args_donated"]
        w.add_(g, alpha=-0.1)
        w.mul_(0.9)
        torch_tpu.sync()
        d1 = torch_tpu.defer_stats()["args_donated"]
    expect = (w_cpu - 0.1 * g_cpu) * 0.9
    torch.testing.assert_close(w.cpu(), expect)
    torch.testing.assert_close(view.cpu(), expect[:8])
    torch.testing.assert_close(g.cpu(), g_cpu)  # still referenced: never donated
    assert d1 > d0  # w's old buffer was dead after the in-place update: its memory was reused


def test_defer_donated_handles_retire_after_completion():
    # A donated argument's handle is kept until its execution is seen complete
    # (destroying it earlier blocks the host until the device finishes, which
    # serialised recording the next step with running this one); synchronize
    # retires every one of them, so none leak.
    w_cpu, g_cpu = torch.randn(256, 256), torch.randn(256, 256)
    w, g = w_cpu.to("tpu"), g_cpu.to("tpu")
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        torch.tpu.synchronize()
        assert torch.tpu.compile_stats()["donated_in_flight"] == 0
        for _ in range(3):
            w.add_(g, alpha=-0.1)
            torch_tpu.sync()
        assert torch.tpu.compile_stats()["donated_in_flight"] > 0
        torch.tpu.synchronize()
        assert torch.tpu.compile_stats()["donated_in_flight"] == 0
    torch.testing.assert_close(w.cpu(), w_cpu - 0.3 * g_cpu, rtol=1e-5, atol=1e-5)
