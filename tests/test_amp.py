"""Mixed precision on 'tpu' (issue #16, item 2): torch.autocast("tpu") with
CUDA's cast policy, torch.amp.GradScaler("tpu") with the unscale and scale
update on the device, in Strict, Debug and DeferAndFuse and under
torch.compile. CPU is the oracle: the GradScaler ops against CPU's kernels,
autocast regions against the same casts done by hand on CPU, and a training
loop (whose ops CPU's and CUDA's policies treat alike) against CPU autocast.
"""
import contextlib

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from _helpers import DEV, ON_TPU, make_tensor, tpu_only

pytestmark = tpu_only

MODES = ["strict", "debug", "defer"]


def in_mode(mode):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    name = {"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE"}[mode]
    return eager_mode(EagerMode[name])


def test_device_module_declares_amp():
    assert torch.tpu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    assert torch.tpu.is_bf16_supported()
    assert torch.amp.is_autocast_available("tpu")
    with torch.tpu.amp.autocast(dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("tpu") and torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")
    assert isinstance(torch.tpu.amp.GradScaler(), torch.amp.GradScaler)


# --- the cast policy (CUDA's) -------------------------------------------------

def _policy_cases(x, w, m):
    """(name, fn, expected result dtype under autocast with low dtype `lo`):
    'lo' runs in the autocast dtype, 'f32' in float32, 'same' falls through."""
    return [
        ("linear", lambda lo: F.linear(x, w), "lo"),
        ("mm", lambda lo: x @ w.t(), "lo"),
        ("bmm", lambda lo: torch.bmm(x[None], w.t()[None]), "lo"),
        ("addmm", lambda lo: torch.addmm(x[:, 0:1], x, w.t()), "lo"),
        ("conv2d", lambda lo: F.conv2d(x[None, None], w[None, None, :3, :3]), "lo"),
        ("sdpa", lambda lo: F.scaled_dot_product_attention(x[None], x[None], x[None]), "lo"),
        ("exp", lambda lo: torch.exp(m), "f32"),
        ("log_softmax", lambda lo: torch.log_softmax(m, -1), "f32"),
        ("softmax", lambda lo: torch.softmax(m, -1), "f32"),
        ("softmax(dtype=lo)", lambda lo: torch.softmax(m, -1, dtype=lo), "lo"),
        ("sum", lambda lo: m.sum(), "f32"),
        ("cumsum", lambda lo: m.cumsum(0), "f32"),
        ("layer_norm", lambda lo: F.layer_norm(m, (m.shape[-1],)), "f32"),
        ("mse_loss", lambda lo: F.mse_loss(m, m * 2), "f32"),
        ("norm", lambda lo: m.norm(), "f32"),
        ("pow", lambda lo: m.pow(2), "f32"),
        ("addcmul", lambda lo: torch.addcmul(x, m, m), "f32"),
        ("relu", lambda lo: torch.relu(m), "same"),
        ("add", lambda lo: m + m, "same"),
    ]


@pytest.mark.parametrize("lo", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_autocast_follows_cudas_cast_policy(lo):
    x = make_tensor((8, 8)).to(DEV)
    w = make_tensor((8, 8), seed=1).to(DEV)
    with torch.autocast(DEV, dtype=lo):
        m = F.linear(x, w)  # a low-precision activation, as in a real model
        assert m.dtype == lo
        for name, fn, want in _policy_cases(x, w, m):
            got = fn(lo).dtype
            expected = {"lo": lo, "f32": torch.float32, "same": lo}[want]
            assert got == expected, (name, got, expected)
    # outside the region nothing is cast
    assert F.linear(x, w).dtype == torch.float32


@pytest.mark.parametrize("mode", MODES)
def test_autocast_values_match_the_same_casts_on_cpu(mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8), nn.LogSoftmax(-1))
    x = make_tensor((4, 16), seed=3)
    # CPU oracle: the casts CUDA's policy makes, written out by hand.
    h = F.linear(x.bfloat16(), model[0].weight.bfloat16(), model[0].bias.bfloat16())
    h = F.gelu(h)
    h = F.linear(h, model[2].weight.bfloat16(), model[2].bias.bfloat16())
    ref = torch.log_softmax(h.float(), -1)
    dev_model = model.to(DEV)
    with in_mode(mode), torch.autocast(DEV, dtype=torch.bfloat16):
        out = dev_model(x.to(DEV))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), ref, atol=2e-2, rtol=2e-2)


def test_binary_cross_entropy_is_refused_under_autocast_as_on_cuda():
    p = torch.rand(4, device=DEV)
    with torch.autocast(DEV, dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
        # the logits form is the safe one
        assert F.binary_cross_entropy_with_logits(p, p).dtype == torch.float32


# --- the GradScaler ops against CPU's kernels ------------------------------------

def _grads(dtypes, bad):
    out = []
    for k, dt in enumerate(dtypes):
        g = make_tensor((5, 3), dt, seed=k) * 100
        if k == bad[0]:
            g.view(-1)[bad[1]] = bad[2]
        out.append(g)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [(-1, 0, 0.0), (1, 4, float("inf")), (0, 7, float("nan")), (2, 0, -float("inf"))],
                         ids=["finite", "inf", "nan", "-inf"])
@pytest.mark.parametrize("found_before", [0.0, 1.0])
def test_unscale_matches_cpu(mode, bad, found_before):
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    cpu = _grads(dtypes, bad)
    cpu_found, inv = torch.tensor([found_before]), torch.tensor([1 / 1024.0])
    dev = [g.to(DEV) for g in cpu]
    dev_found = cpu_found.to(DEV)
    with in_mode(mode):
        torch._amp_foreach_non_finite_check_and_unscale_(dev, dev_found, inv.to(DEV))
        got = [g.cpu() for g in dev]
    torch._amp_foreach_non_finite_check_and_unscale_(cpu, cpu_found, inv)
    assert dev_found.item() == cpu_found.item()
    for g, r in zip(got, cpu):
        torch.testing.assert_close(g, r, atol=0, rtol=0, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("found,tracker,interval,scale", [
    (0.0, 0, 3, 1024.0),      # grows the tracker
    (0.0, 2, 3, 1024.0),      # reaches the interval: the scale grows
    (0.0, 2, 3, 3.0e38),      # would grow to inf: the scale stays
    (1.0, 2, 3, 1024.0),      # inf found: backoff, tracker reset
    (float("nan"), 1, 3, 7.0),  # NaN counts as found
])
def test_update_scale_matches_cpu(mode, found, tracker, interval, scale):
    def run(device):
        s = torch.tensor([scale], device=device)
        t = torch.tensor([tracker], dtype=torch.int32, device=device)
        r = torch._amp_update_scale_(s, t, torch.tensor([found], device=device), 2.0, 0.5, interval)
        assert r is s
        return s.cpu(), t.cpu()
    with in_mode(mode):
        got = run(DEV)
    ref = run("cpu")
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1]), (got, ref)


# --- training with autocast + GradScaler, against CPU ------------------------------

def _train(device, steps, init_scale, compiled=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device, init_scale=init_scale, growth_interval=2)
    g = torch.Generator().manual_seed(1)

    def fwd(x, y):
        with torch.autocast(device, dtype=torch.float16):
            return F.mse_loss(model(x), y)

    if compiled:
        fwd = torch.compile(fwd, backend="tpu")
    losses, scales = [], []
    for _ in range(steps):
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        opt.zero_grad()
        loss = fwd(x.to(device), y.to(device))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.detach()))
        scales.append(scaler.get_scale())
    return losses, scales, [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("mode", MODES + ["compiled"])
def test_gradscaler_training_matches_cpu(mode):
    # 2**40 overflows float16 gradients: the first steps are skipped and the
    # scale backs off until it fits, then grows every 2 clean steps.
    ref_losses, ref_scales, ref_params = _train("cpu", 8, 2.0**40)
    ctx = in_mode("strict" if mode == "compiled" else mode)
    with ctx:
        losses, scales, params = _train(DEV, 8, 2.0**40, compiled=mode == "compiled")
    assert scales == ref_scales
    assert ref_scales[0] < 2.0**40 and max(ref_scales[2:]) > min(ref_scales)  # backed off, then grew
    torch.testing.assert_close(losses, ref_losses, atol=5e-3, rtol=5e-3)
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, atol=5e-3, rtol=5e-3)
