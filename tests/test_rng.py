"""Random number generation on the device.

The device stream is NOT required to equal CPU's: tests check
reproducibility under seeding, state save/restore and sample statistics.
Statistics are computed on CPU in float64 from the device samples.
"""

import pytest
import torch

from _helpers import DEV, device_module, tpu_only

N = 100_000

SAMPLERS = {
    "rand": lambda: torch.rand(1000, device=DEV),
    "randn": lambda: torch.randn(1000, device=DEV),
    "randint": lambda: torch.randint(0, 1000, (1000,), device=DEV),
    "uniform_": lambda: torch.empty(1000, device=DEV).uniform_(-2.0, 3.0),
    "normal_": lambda: torch.empty(1000, device=DEV).normal_(3.0, 2.0),
    "rand_2d_bfloat16": lambda: torch.rand(10, 20, device=DEV, dtype=torch.bfloat16),
    "randn_float64": lambda: torch.randn(500, device=DEV, dtype=torch.float64),
}


def _same(a, b):
    return torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_manual_seed_reproducible(name):
    sample = SAMPLERS[name]
    torch.manual_seed(1234)
    a = sample()
    a2 = sample()  # the generator advances
    torch.manual_seed(1234)
    b = sample()
    b2 = sample()
    torch.manual_seed(4321)
    c = sample()
    assert a.device.type == torch.device(DEV).type
    assert _same(a, b) and _same(a2, b2), "same seed must give the same samples"
    assert not _same(a, a2), "consecutive draws must differ"
    assert not _same(a, c), "different seeds must give different samples"


def test_rng_state_save_restore():
    mod = device_module()
    torch.manual_seed(7)
    torch.rand(10, device=DEV)
    state = mod.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    a = torch.randn(100, device=DEV)
    b = torch.randint(0, 50, (100,), device=DEV)
    assert not _same(torch.randn(100, device=DEV), a)
    mod.set_rng_state(state)
    assert _same(torch.randn(100, device=DEV), a)
    assert _same(torch.randint(0, 50, (100,), device=DEV), b)
    # the state is a copy: drawing afterwards does not change it
    mod.set_rng_state(state)
    assert _same(torch.randn(100, device=DEV), a)


@tpu_only
def test_tpu_manual_seed_replays():
    torch.tpu.manual_seed(99)
    a = torch.rand(50, device="tpu")
    torch.tpu.manual_seed(99)
    assert _same(torch.rand(50, device="tpu"), a)
    torch.tpu.manual_seed_all(99)
    assert _same(torch.rand(50, device="tpu"), a)
    assert torch.tpu.initial_seed() == 99


@tpu_only
def test_device_rng_independent_of_cpu_rng():
    torch.manual_seed(5)
    a = torch.rand(50, device="tpu")
    torch.manual_seed(5)
    torch.rand(1000)  # consuming the CPU generator does not move the device one
    assert _same(torch.rand(50, device="tpu"), a)


@tpu_only
def test_second_device_seeded_by_manual_seed(two_devices):
    torch.manual_seed(11)
    a = torch.rand(50, device="tpu:1")
    assert a.device == torch.device("tpu:1")
    torch.manual_seed(11)
    assert _same(torch.rand(50, device="tpu:1"), a)


# --------------------------------------------------------------------------
# Statistics on 100k samples
# --------------------------------------------------------------------------


def _draw(fn):
    torch.manual_seed(2024)
    t = fn()
    assert t.device.type == torch.device(DEV).type
    assert t.numel() == N
    return t.cpu().double().flatten()


def _not_degenerate(x):
    # a healthy float32 stream has (almost) no repeated values, and
    # neighbouring samples are uncorrelated
    assert x.unique().numel() > 0.99 * N
    corr = torch.corrcoef(torch.stack([x[:-1], x[1:]]))[0, 1].item()
    assert abs(corr) < 0.02, corr


def test_rand_statistics():
    x = _draw(lambda: torch.rand(N, device=DEV))
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean().item() - 0.5) < 0.005
    assert abs(x.std().item() - (1 / 12) ** 0.5) < 0.005
    # each tenth of [0, 1) gets about 10% of the samples
    hist = torch.histc(x, bins=10, min=0.0, max=1.0) / N
    assert (hist - 0.1).abs().max() < 0.01, hist
    _not_degenerate(x)


def test_randn_statistics():
    x = _draw(lambda: torch.randn(N, device=DEV))
    assert abs(x.mean().item()) < 0.02
    assert abs(x.std().item() - 1.0) < 0.015
    assert abs((x.abs() < 1).double().mean().item() - 0.6827) < 0.01
    assert x.abs().max() < 6.5
    _not_degenerate(x)


def test_uniform_statistics():
    x = _draw(lambda: torch.empty(N, device=DEV).uniform_(-2.0, 3.0))
    assert x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean().item() - 0.5) < 0.03
    assert abs(x.std().item() - 5 / 12 ** 0.5) < 0.03
    _not_degenerate(x)


def test_normal_statistics():
    x = _draw(lambda: torch.empty(N, device=DEV).normal_(3.0, 2.0))
    assert abs(x.mean().item() - 3.0) < 0.04
    assert abs(x.std().item() - 2.0) < 0.03
    _not_degenerate(x)


def test_randn_2d_statistics_per_column():
    # guards against rows or columns repeating the same samples
    x = _draw(lambda: torch.randn(1000, 100, device=DEV)).view(1000, 100)
    # column means of 1000 iid N(0, 1) samples have std 1/sqrt(1000) ~ 0.032
    assert 0.02 < x.mean(0).std().item() < 0.045
    assert 0.02 < x.mean(1).std().item() < 0.2  # row means over 100: std 0.1
    assert not torch.equal(x[0], x[1])
    assert not torch.equal(x[:, 0], x[:, 1])


@pytest.mark.parametrize("low,high,dtype", [(0, 10, torch.int64), (-3, 7, torch.int64),
                                            (0, 5, torch.int32)])
def test_randint_statistics(low, high, dtype):
    torch.manual_seed(2024)
    t = torch.randint(low, high, (N,), device=DEV, dtype=dtype)
    assert t.device.type == torch.device(DEV).type and t.dtype == dtype
    x = t.cpu().long()
    assert x.min().item() == low and x.max().item() == high - 1
    counts = torch.bincount(x - low, minlength=high - low).double() / N
    assert counts.numel() == high - low
    assert (counts > 0).all(), "every value in [low, high) must be drawn"
    assert (counts - 1 / (high - low)).abs().max() < 0.01, counts


def test_randint_large_range():
    torch.manual_seed(3)
    x = torch.randint(0, 2 ** 40, (N,), device=DEV).cpu()
    assert x.min() >= 0 and x.max() < 2 ** 40
    # the upper bits are used too
    assert (x >= 2 ** 39).double().mean().item() == pytest.approx(0.5, abs=0.01)
    assert x.unique().numel() > 0.99 * N


def test_rand_dtypes():
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        torch.manual_seed(1)
        x = torch.rand(N, device=DEV, dtype=dtype)
        assert x.dtype == dtype
        x = x.cpu().double()
        assert x.min() >= 0.0 and x.max() < 1.0, dtype
        assert abs(x.mean().item() - 0.5) < 0.01, dtype
