"""torch.compile(backend="tpu"): Dynamo -> AOTAutograd -> one fused DeferAndFuse graph per
ATen graph, against eager 'tpu' and the CPU oracle; guards and recompiles, symbolic shapes,
graph breaks, input mutation write-back, errors."""
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _helpers import DEV, assert_same, check_scenario, make_tensor, to_cpu, tpu_only

pytestmark = tpu_only

if True:  # imported lazily so the CPU stand-in run can collect this module
    try:
        import torch_tpu
        import torch_tpu._compile as tpu_compile
        from torch_tpu.execution_mode import EagerMode, eager_mode, get_eager_mode, set_eager_mode
    except ImportError:  # pragma: no cover - CPU stand-in without the backend
        pass

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from models import TinyGPT  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    import torch._dynamo
    torch._dynamo.reset()
    before = get_eager_mode()
    yield
    set_eager_mode(before)
    torch._dynamo.reset()


def delta(before, key):
    return tpu_compile.stats()[key] - before[key]


def compiled_or_eager(fn, compiled):
    return torch.compile(fn, backend="tpu") if compiled else fn


def train_step(model, opt, loss_fn, x, y):
    """One optimizer step on (x, y) as a function of nothing, returning the loss."""
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


# ---------------------------------------------------------------------------
# registration

def test_backend_registered_lazily_without_importing_dynamo():
    from test_errors import run_python
    res = run_python("""
        import sys, torch, torch_tpu
        assert "torch._dynamo" not in sys.modules, "import torch_tpu imported Dynamo"
        from torch._dynamo import list_backends
        assert "tpu" in list_backends(), list_backends()
        f = torch.compile(lambda x: (x * 2).exp(), backend="tpu")
        print(f(torch.ones(3, device="tpu")).cpu().tolist())
    """)
    assert res.returncode == 0, res.stderr
    assert "7.389" in res.stdout


@pytest.mark.slow
def test_backend_registered_when_dynamo_was_imported_first():
    from test_errors import run_python
    res = run_python("""
        import torch, torch._dynamo
        import torch_tpu
        from torch._dynamo.backends.registry import lookup_backend
        from torch_tpu._compile.backend import tpu_backend
        assert lookup_backend("tpu") is tpu_backend
        print("ok")
    """, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------------------
# numerics: compiled vs eager 'tpu' vs CPU

def test_forward_and_backward_one_fused_graph_each_cached():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to("tpu")
    f = torch.compile(model, backend="tpu")
    x = torch.randn(5, 8).to("tpu")

    def run():
        model.zero_grad(set_to_none=True)
        out = f(x)
        out.square().sum().backward()
        return out.detach(), [p.grad for p in model.parameters()]

    torch_tpu.sync()
    g_start = torch_tpu.defer_stats()
    run()  # compiles; the forward and the backward graph each run as one fused graph
    torch_tpu.sync()
    c0, g0, s0 = torch.tpu.compile_stats()["compiles"], torch_tpu.defer_stats(), tpu_compile.stats()
    reasons = lambda g: g["materialisations_by_reason"]  # noqa: E731
    for kind in ("forward", "backward"):
        key = f"compiled graph ({kind})"
        assert reasons(g0).get(key, 0) - reasons(g_start).get(key, 0) == 1, (g_start, g0)
    out, grads = run()
    torch_tpu.sync()
    g1 = torch_tpu.defer_stats()
    assert torch.tpu.compile_stats()["compiles"] == c0  # the second call compiles nothing
    # ... and records nothing: both graphs replay their captured executables
    assert delta(s0, "graph_replays") == 2, tpu_compile.stats()
    assert g1["graphs_executed"] == g0["graphs_executed"]
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    cpu_model.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    ref = cpu_model(x.cpu())
    ref.square().sum().backward()
    assert_same([out, grads], [ref.detach(), [p.grad for p in cpu_model.parameters()]],
                atol=1e-5, rtol=1e-5)


def _gpt(device):
    torch.manual_seed(0)
    model = TinyGPT(vocab=64, width=32, layers=1, heads=2, context=16).to(device)
    data = torch.randint(0, 64, (2, 9)).to(device)
    return model, data[:, :-1], data[:, 1:]


def _cnn(device):
    torch.manual_seed(0)

    def block(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())
    model = nn.Sequential(block(3, 8, 1), block(8, 16, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(16, 10)).to(device)
    x = torch.randn(4, 3, 8, 8).to(device)
    y = torch.randint(0, 10, (4,)).to(device)
    return model, x, y


def _loss(name, out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _training(name, device, compiled, steps=3):
    """`steps` AdamW steps of one model; the whole step (forward, backward,
    optimizer.step) is one compiled function. Returns losses, parameters,
    buffers and optimizer state."""
    model, x, y = (_gpt if name == "gpt" else _cnn)(device)
    if name == "gpt":
        # the key part of the qkv bias has a mathematically zero gradient (softmax
        # is shift-invariant): its rounding noise, normalised by Adam, would
        # dominate the comparison
        for blk in model.blocks:
            blk.qkv.bias.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = _loss(name, model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    step = compiled_or_eager(step, compiled)
    losses = [step(x, y) for _ in range(steps)]
    state = [v for s in opt.state.values() for k, v in s.items() if k != "step"]
    steps = [s["step"].item() for s in opt.state.values()]
    step_devices = {s["step"].device.type for s in opt.state.values()}
    return losses, list(model.parameters()), list(model.buffers()), state, steps, step_devices


def _forward(name, device, compiled):
    model, x, _ = (_gpt if name == "gpt" else _cnn)(device)
    model.eval()
    f = compiled_or_eager(model, compiled)
    with torch.no_grad():
        return f(x), f(x)


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_forward_matches_eager_and_cpu(name):
    ref = _forward(name, "cpu", False)
    eager = _forward(name, "tpu", False)
    comp = _forward(name, "tpu", True)
    assert_same(comp, ref, atol=1e-4, rtol=1e-4)
    assert_same(comp, to_cpu(eager), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_training_steps_match_eager_and_cpu(name):
    s0 = tpu_compile.stats()
    ref = _training(name, "cpu", False)
    eager = _training(name, "tpu", False)
    comp = _training(name, "tpu", True)
    assert_same(comp[:5], ref[:5], atol=1e-4, rtol=1e-4)
    assert_same(comp[:5], to_cpu(eager[:5]), atol=1e-5, rtol=1e-5)
    assert comp[4] and set(comp[4]) == {3.0}
    # eager keeps the step counters on the CPU (capturable=False); compiled,
    # the fresh optimizer is made capturable as on CUDA: counters on the device
    assert ref[5] == {"cpu"} and eager[5] == {"cpu"} and comp[5] == {"tpu"}
    assert delta(s0, "graph_runs") > 0


@pytest.mark.slow
@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_partitioners_agree(partitioner):
    torch.manual_seed(0)
    model, x, y = _gpt("tpu")
    f = torch.compile(model, backend="tpu", options={"partitioner": partitioner})
    loss = _loss("gpt", f(x), y)
    loss.backward()
    cpu_model, cx, cy = _gpt("cpu")
    ref = _loss("gpt", cpu_model(cx), cy)
    ref.backward()
    assert_same([loss, [p.grad for p in model.parameters()]],
                [ref, [p.grad for p in cpu_model.parameters()]], atol=1e-4, rtol=1e-4)


def test_compiled_training_step_compiles_once():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 6).to("tpu"), torch.tensor([0, 1, 2, 1]).to("tpu")

    step = torch.compile(train_step(model, opt, F.cross_entropy, x, y), backend="tpu")

    compiles = []
    for _ in range(5):
        step()
        torch_tpu.sync()
        compiles.append(torch.tpu.compile_stats()["compiles"])
    # step 1 creates the optimizer state (a different graph); from step 2 on
    # nothing compiles, neither in Dynamo nor in PJRT
    assert compiles[2:] == [compiles[1]] * 3, compiles


def test_runs_inside_user_defer_mode_and_restores_it():
    f = torch.compile(lambda a, b: torch.tanh(a @ b) + 1, backend="tpu")
    a, b = make_tensor((4, 5)), make_tensor((5, 3), seed=1)
    outer = get_eager_mode()  # STRICT unless the environment chose a mode for the suite
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        out = f(a.to("tpu"), b.to("tpu"))
        assert get_eager_mode() is EagerMode.DEFER_AND_FUSE
        out = out * 2
    assert get_eager_mode() is outer
    assert_same(out, (torch.tanh(a @ b) + 1) * 2, atol=1e-5, rtol=1e-5)
    with eager_mode(EagerMode.DEBUG):
        out = f(a.to("tpu"), b.to("tpu"))
        assert get_eager_mode() is EagerMode.DEBUG
    assert_same(out, torch.tanh(a @ b) + 1, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------
# input mutation write-back

def test_batch_norm_running_stats_written_back():
    def scenario(device):
        torch.manual_seed(0)
        bn = nn.BatchNorm2d(3).to(device).train()
        f = compiled_or_eager(bn, device != "cpu")
        x = torch.randn(4, 3, 5, 5).to(device)
        outs = [f(x), f(x * 2 + 1)]
        return outs, bn.running_mean, bn.running_var, bn.num_batches_tracked
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_batch_norm_variants():
    """train (functional running stats), eval with gradients (no-training
    variant) and track_running_stats=False (no-stats variant)."""
    def scenario(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.BatchNorm1d(4), nn.BatchNorm1d(4, affine=False),
                              nn.BatchNorm1d(4, track_running_stats=False))
        model[0].running_mean.uniform_()  # on CPU: the same values on both devices
        model = model.to(device)
        x = torch.randn(6, 4).to(device).requires_grad_()
        f = compiled_or_eager(model, device != "cpu")
        results = []
        for train in (True, False):
            model.train(train)
            x.grad = None
            out = f(x)
            out.square().sum().backward()
            results += [out, x.grad, model[0].weight.grad]
        return results, model[0].running_mean, model[1].running_var
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_inplace_on_input_views_written_back():
    def fn(x, buf, counter):
        buf[:, 1].mul_(2)           # in-place through a view of an input
        buf.t()[0].add_(x[0])       # ... and through a transposed view
        x.add_(1)                   # in-place on an input
        counter += 1                # a CPU scalar tensor mixed in
        return (x * buf.t()).sum(0) * counter

    def scenario(device):
        x = torch.arange(12, dtype=torch.float32).reshape(4, 3).to(device)
        buf = torch.ones(3, 4).to(device)
        counter = torch.tensor(1.0)  # stays on CPU
        f = compiled_or_eager(fn, device != "cpu")
        out = [f(x, buf, counter), f(x, buf, counter)]
        assert counter.device.type == "cpu"
        return out, x, buf, counter.item(), x._version > 0, buf._version > 0
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------
# guards, recompiles, shapes

def test_recompiles_only_on_real_changes():
    f = torch.compile(lambda x: torch.tanh(x) * 3, backend="tpu", dynamic=False)
    s = tpu_compile.stats()
    x = torch.randn(3, 4).to("tpu")
    f(x)
    f(x)
    f(torch.randn(3, 4).to("tpu"))            # new values: no recompile
    assert delta(s, "invocations") == 1
    f(x.double())                              # dtype
    assert delta(s, "invocations") == 2
    f(x.clone().requires_grad_())              # requires_grad
    assert delta(s, "invocations") == 3
    f(torch.randn(5, 4).to("tpu"))            # shape
    assert delta(s, "invocations") == 4
    f(torch.randn(5, 4).to("tpu"))
    f(x)
    assert delta(s, "invocations") == 4
    assert delta(s, "static_specialisations") == 0


def test_second_shape_is_specialised_statically():
    """dynamic=None: at the second shape Dynamo's automatic dynamic sends a graph
    with symbolic sizes; it runs with concrete sizes, one static executable each."""
    def fn(x, w):
        return F.gelu(x @ w).sum(-1) + x.shape[0]
    f = torch.compile(fn, backend="tpu")
    w = make_tensor((6, 3), seed=1)
    s = tpu_compile.stats()
    outs, refs, compiles = [], [], []
    for rows in (2, 3, 5, 3, 2, 5, 4, 4):
        x = make_tensor((rows, 6), seed=rows)
        outs.append(f(x.to("tpu"), w.to("tpu")))
        refs.append(fn(x, w))
        torch_tpu.sync()
        compiles.append(torch.tpu.compile_stats()["compiles"])
    assert_same(outs, refs, atol=1e-5, rtol=1e-5)
    assert delta(s, "invocations") == 2             # static (rows 2), then symbolic
    # rows 3, 5, 4 and 2 again: Dynamo tries its newest cache entry (the
    # symbolic one) first; its executable for rows 2 is the cached one
    assert delta(s, "static_specialisations") == 4
    assert compiles[3:6] == [compiles[2]] * 3 and compiles[7] == compiles[6], compiles


def test_changing_python_float_is_a_runtime_scalar():
    """A Python float that changes becomes a (CPU scalar) graph input, not a
    recompile per value, and the fused executable is reused."""
    f = torch.compile(lambda x, a: torch.tanh(x * a), backend="tpu")
    x = make_tensor((3, 4))
    s = tpu_compile.stats()
    outs, compiles = [], []
    for a in (0.5, 0.7, 0.9, 1.1):
        outs.append(f(x.to("tpu"), a))
        torch_tpu.sync()
        compiles.append(torch.tpu.compile_stats()["compiles"])
    assert_same(outs, [torch.tanh(x * a) for a in (0.5, 0.7, 0.9, 1.1)], atol=1e-6, rtol=1e-6)
    assert delta(s, "invocations") == 2
    assert compiles[2:] == [compiles[1]] * 2, compiles


def test_mark_dynamic_specialised_with_grad():
    torch.manual_seed(0)
    lin = nn.Linear(4, 2).to("tpu")
    f = torch.compile(lin, backend="tpu")
    s = tpu_compile.stats()
    for rows in (3, 7):
        x = make_tensor((rows, 4), seed=rows)
        xd = x.to("tpu")
        torch._dynamo.mark_dynamic(xd, 0)
        out = f(xd)
        out.sum().backward()
        ref = F.linear(x, lin.weight.detach().cpu(), lin.bias.detach().cpu())
        assert_same(out, ref, atol=1e-5, rtol=1e-5)
    assert delta(s, "static_specialisations") == 2
    torch.testing.assert_close(lin.bias.grad.cpu(), torch.full((2,), 10.0))


def test_dynamic_true_one_trace_one_executable_per_shape():
    """torch.compile(dynamic=True): Dynamo traces once with symbolic sizes;
    each call runs with its concrete sizes, one static executable per shape
    (a shape seen before compiles nothing), results equal to CPU."""
    def fn(x, w):
        return torch.softmax(x @ w, -1).cumsum(0) * x.shape[0]
    torch._dynamo.reset()
    f = torch.compile(fn, backend="tpu", dynamic=True)
    w = make_tensor((8, 6), seed=1)
    s = tpu_compile.stats()
    outs, refs, compiles = [], [], []
    for rows in (2, 7, 13, 7, 2):
        x = make_tensor((rows, 8), seed=rows)
        outs.append(f(x.to("tpu"), w.to("tpu")))
        refs.append(fn(x, w))
        torch_tpu.sync()
        compiles.append(torch.tpu.compile_stats()["compiles"])
    assert_same(outs, refs, atol=1e-5, rtol=1e-5)
    assert delta(s, "invocations") == 1
    assert delta(s, "static_specialisations") == 3
    assert compiles[3:] == [compiles[2]] * 2, compiles


def test_dynamic_true_training_step_matches_cpu():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1))
    net_t = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1))
    net_t.load_state_dict(net.state_dict())
    net_t.to("tpu")
    opt, opt_t = torch.optim.SGD(net.parameters(), lr=0.1), torch.optim.SGD(net_t.parameters(), lr=0.1)

    def step(n, x, o):
        o.zero_grad()
        loss = n(x).square().mean()
        loss.backward()
        o.step()
        return loss
    torch._dynamo.reset()
    cstep = torch.compile(step, backend="tpu", dynamic=True)
    for b in (4, 7, 12, 7):
        x = make_tensor((b, 8), seed=b)
        torch.testing.assert_close(cstep(net_t, x.to("tpu"), opt_t).cpu(), step(net, x, opt), atol=1e-6, rtol=1e-5)
    for p, q in zip(net.parameters(), net_t.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), atol=1e-6, rtol=1e-5)


def test_unknown_option_rejected():
    f = torch.compile(lambda x: x * 2, backend="tpu", options={"nope": 1})
    with pytest.raises(Exception, match="unknown torch.compile options"):
        f(torch.ones(3, device="tpu"))


# ---------------------------------------------------------------------------
# graph breaks and errors

def test_graph_breaks_fall_back_to_eager(capsys):
    def fn(x, w):
        y = torch.tanh(x @ w)
        print("between graphs")
        s = y.sum().item()
        z = y * s + 1
        return z.softmax(-1), s

    s0 = tpu_compile.stats()
    x, w = make_tensor((4, 5)), make_tensor((5, 3), seed=1)
    f = torch.compile(fn, backend="tpu")
    out = f(x.to("tpu"), w.to("tpu"))
    assert_same(out, fn(x, w), atol=1e-5, rtol=1e-5)
    assert "between graphs" in capsys.readouterr().out
    assert delta(s0, "invocations") >= 2  # the function was split


_UNLOWERED = [("special_zeta", lambda x: torch.special.zeta(x + 2, x + 1)),
              ("polygamma", lambda x: torch.polygamma(2, x + 1)),
              ("i0", torch.i0)]


def test_op_without_lowering_raises_not_implemented_naming_it():
    x = torch.rand(4).to("tpu")
    for name, op in _UNLOWERED:  # the first one eager 'tpu' still rejects
        try:
            op(x).cpu()
        except NotImplementedError:
            break
    else:
        pytest.skip("every candidate op has a lowering now; pick another one")
    f = torch.compile(lambda x: op(x * 0.5) + 1, backend="tpu")
    with pytest.raises(NotImplementedError, match=f"aten::{name}"):
        f(x)
    assert get_eager_mode() is EagerMode.STRICT  # mode restored
    assert (x + 1).sum().item() == pytest.approx((x.cpu() + 1).sum().item())


def test_compile_helper():
    f = tpu_compile.compile(lambda x: x.exp() - 1)
    s = tpu_compile.stats()
    assert_same(f(torch.ones(3, device="tpu")), torch.ones(3).exp() - 1)
    assert_same(f(torch.ones(4, device="tpu")), torch.ones(4).exp() - 1)
    assert_same(f(torch.ones(5, device="tpu")), torch.ones(5).exp() - 1)
    assert delta(s, "invocations") == 2 and delta(s, "static_specialisations") == 2
    assert set(tpu_compile.stats()) >= {"invocations", "graphs_compiled", "static_specialisations",
                                        "graph_runs"}


# ---------------------------------------------------------------------------
# replay: later calls run the captured executable without recording

def test_replayed_training_matches_cpu():
    """Forward and backward graphs are replayed from the second step on; the
    losses and parameters still follow the CPU run step for step."""
    def scenario(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = torch.randn(8, 6).to(device), torch.tensor([0, 1, 2, 1, 0, 2, 1, 0]).to(device)

        f = compiled_or_eager(train_step(model, opt, F.cross_entropy, x, y), device != "cpu")
        before = tpu_compile.stats()
        losses = [f() for _ in range(5)]
        if device != "cpu":
            assert delta(before, "graph_replays") >= 8, tpu_compile.stats()
        return losses, [p.detach() for p in model.parameters()]
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_replay_writes_back_inputs_and_returns_aliases():
    def fn(x, buf):
        buf.mul_(2)
        x[1:].add_(buf[:3])
        return x * 3, buf, x.t()

    def scenario(device):
        x = torch.arange(12, dtype=torch.float32).reshape(4, 3).to(device)
        buf = torch.ones(4, 3).to(device)
        f = compiled_or_eager(fn, device != "cpu")
        before = tpu_compile.stats()
        outs = []
        for _ in range(4):
            a, b, c = f(x, buf)
            assert b is buf
            outs += [a, b.clone(), c]
        if device != "cpu":
            assert delta(before, "graph_replays") == 3
        return outs, x, buf, x._version > 0
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_replay_keyed_by_storage_offset():
    """Same shapes and strides at another storage offset: a new capture, not a
    replay of the old one (its offsets are constants of the graph)."""
    def fn(v):
        return v * 2 + 1

    def scenario(device):
        base = torch.arange(20, dtype=torch.float32).reshape(5, 4).to(device)
        f = compiled_or_eager(fn, device != "cpu")
        return [f(base[1:]), f(base[:-1]), f(base[1:]), f(base[:-1])]
    check_scenario(scenario)


def test_replay_never_consumes_a_shared_buffer():
    """An input updated in place donates its old buffer; when another tensor
    still holds that buffer the replay passes it undonated (the plugin copies
    it) and the other tensor keeps its value."""
    def fn(x):
        x.add_(1)
        return x.sum()

    def scenario(device):
        x = torch.zeros(3, 3).to(device)
        f = compiled_or_eager(fn, device != "cpu")
        f(x)
        f(x)
        y = torch.empty(3, 3, device=device)
        y.copy_(x)        # may share x's buffer
        before = tpu_compile.stats()
        s = f(x)
        if device != "cpu":
            assert delta(before, "graph_replays") == 1
        return s, x, y
    check_scenario(scenario)


def test_graph_using_rng_is_not_replayed():
    def fn(x):
        return F.dropout(x, 0.5, training=True) * 1.0

    f = torch.compile(fn, backend="tpu")
    x = torch.ones(64, 64).to("tpu")
    before = tpu_compile.stats()
    masks = [(f(x) == 0).cpu() for _ in range(3)]
    assert not torch.equal(masks[1], masks[2])  # fresh randomness on every call
    assert delta(before, "graph_replays") == 0
    assert delta(before, "not_replayable") >= 1
    assert any("random" in why for why in tpu_compile.replay_refusals())


def test_graph_with_host_path_op_is_not_replayed():
    """A host-path op (linalg) reads device data while recording; its result is
    then a constant of the recorded graph, so the graph must keep recording."""
    def fn(a):
        return torch.linalg.inv(a) * 2

    f = torch.compile(fn, backend="tpu")
    before = tpu_compile.stats()
    outs, refs = [], []
    for k in range(3):
        a = torch.eye(3) * (k + 2) + torch.ones(3, 3)
        outs.append(f(a.to("tpu")))
        refs.append(fn(a))
    assert_same(outs, refs, atol=1e-5, rtol=1e-5)
    assert delta(before, "graph_replays") == 0


def test_compiled_adamw_step_replays_every_graph():
    """Dynamo makes a fresh optimizer on 'tpu' capturable (step counters on the
    device, as it does on CUDA), so forward, backward and optimizer graphs all
    replay; the parameters follow CPU AdamW."""
    def scenario(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
        x, y = torch.randn(6, 5).to(device), torch.randn(6, 2).to(device)

        f = compiled_or_eager(train_step(model, opt, F.mse_loss, x, y), device != "cpu")
        losses = [f() for _ in range(3)]
        if device != "cpu":
            before = tpu_compile.stats()
            losses += [f() for _ in range(3)]
            runs, replays = delta(before, "graph_runs"), delta(before, "graph_replays")
            assert runs >= 9 and replays == runs, (runs, replays, tpu_compile.replay_refusals())
            assert all(s["step"].device.type == "tpu" for s in opt.state.values())
        else:
            losses += [f() for _ in range(3)]
        return losses, [p.detach() for p in model.parameters()]
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_default_torch_compile_on_tpu_tensors_uses_the_tpu_backend():
    # Inductor has no code generator for 'tpu' (its Pallas path needs jax):
    # graphs on 'tpu' tensors go to the "tpu" backend (torch_tpu/_compile/_default.py)
    import torch_tpu
    torch._dynamo.reset()
    torch_tpu._compile.reset_stats()

    def f(x, w):
        return torch.relu(x @ w * 2 + 1).sum(-1)

    x, w = torch.randn(4, 8), torch.randn(8, 3)
    xd, wd = x.to(DEV).requires_grad_(), w.to(DEV)
    out = torch.compile(f)(xd, wd)
    out.sum().backward()
    x.requires_grad_()
    ref = f(x, w)
    ref.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xd.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
    assert torch_tpu._compile.stats()["graphs_compiled"] >= 1


def test_dynamo_device_interface_answers_from_torch_tpu():
    # torch's placeholder TpuInterface (current device 0, device_count
    # unimplemented) must not be the one Dynamo finds for 'tpu'
    from torch._dynamo.device_interface import get_interface_for_device
    iface = get_interface_for_device("tpu")
    assert iface.device_count() == torch.tpu.device_count() > 0
    assert iface.is_available()
    assert iface.current_device() == torch.tpu.current_device()
    assert iface.get_raw_stream(0) == torch.tpu.current_stream(0).stream_id
    assert iface.is_dtype_supported(torch.float64) and iface.is_dtype_supported(torch.complex64)
    assert not iface.is_dtype_supported(torch.qint8)
    assert iface.is_bf16_supported()
    iface.synchronize()
    if torch.tpu.device_count() > 1:
        with iface.device(1):
            assert iface.current_device() == 1
        previous = iface.exchange_device(1)
        assert torch.tpu.current_device() == 1
        iface.exchange_device(previous)
    assert get_interface_for_device(torch.device("tpu")) is iface


def test_stream_inside_a_compiled_function():
    s = torch.tpu.Stream()

    def fn(x):
        with torch.tpu.stream(s):
            y = x * 2
        return y + 1
    x = make_tensor((4, 4))
    out = torch.compile(fn, backend="tpu")(x.to("tpu"))
    torch.tpu.synchronize()
    assert_same(out, x * 2 + 1)
