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


# --------------------------------------------------------------------------
# Sampling ops models use (generate's multinomial, dropout masks from a
# probability tensor, shuffles) and the remaining distributions. The same
# statistics are asserted on CPU (TTPU_TEST_DEVICE=cpu) and on the device.
# --------------------------------------------------------------------------

P4 = torch.tensor([0.1, 0.0, 0.6, 0.3])


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_frequencies(replacement):
    torch.manual_seed(0)
    p = P4.to(DEV)
    if replacement:
        s = torch.multinomial(p, N, replacement=True)
    else:  # one draw per row from many copies of the distribution
        s = torch.multinomial(p.expand(N // 10, 4).contiguous(), 1).view(-1)
    assert s.dtype == torch.int64 and s.device.type == torch.device(DEV).type
    s = s.cpu()
    freq = torch.bincount(s, minlength=4).double() / s.numel()
    assert freq[1] == 0, "a zero-probability category is never drawn"
    tol = 0.01 if replacement else 0.02
    assert (freq - P4.double()).abs().max() < tol, freq


def test_multinomial_without_replacement_distinct_and_weighted():
    torch.manual_seed(1)
    w = torch.arange(1.0, 51.0).expand(2000, 50).contiguous()
    s = torch.multinomial(w.to(DEV), 10).cpu()
    assert s.shape == (2000, 10)
    assert all(len(set(r)) == 10 for r in s.tolist()), "samples in a row are distinct"
    first = torch.bincount(s[:, 0], minlength=50).double() / 2000
    # the first draw follows the weights: category 49 is drawn ~50x as often as 0
    assert first[25:].sum() > 0.7
    # a row with k positive weights and k draws returns exactly those categories
    w2 = torch.tensor([[0.0, 2.0, 0.0, 1.0, 5.0]])
    assert sorted(torch.multinomial(w2.to(DEV), 3).cpu()[0].tolist()) == [1, 3, 4]


def test_multinomial_seeded_and_bad_input_like_cpu():
    torch.manual_seed(3)
    a = torch.multinomial(P4.to(DEV), 20, replacement=True)
    torch.manual_seed(3)
    assert _same(a, torch.multinomial(P4.to(DEV), 20, replacement=True))
    for bad in ([0.5, -1.0], [0.0, 0.0], [float("nan"), 1.0], [float("inf"), 1.0]):
        for replacement in (False, True):
            t = torch.tensor(bad)
            with pytest.raises(RuntimeError) as cpu_err:
                torch.multinomial(t, 2, replacement=replacement)
            with pytest.raises(RuntimeError) as dev_err:
                torch.multinomial(t.to(DEV), 2, replacement=replacement).cpu()
            assert str(cpu_err.value).splitlines()[0] in str(dev_err.value), (bad, replacement)


def test_bernoulli_tensor_p():
    torch.manual_seed(4)
    p = torch.linspace(0, 1, 11).repeat(N // 10)[:N].to(DEV)
    x = torch.bernoulli(p).cpu()
    pc = p.cpu()
    assert set(x.unique().tolist()) <= {0.0, 1.0}
    assert (x[pc == 0] == 0).all() and (x[pc == 1] == 1).all()
    for v in (0.2, 0.5, 0.9):
        sel = (pc - v).abs() < 1e-6
        assert abs(x[sel].mean().item() - v) < 0.02, v
    y = torch.empty(1000, 3, device=DEV).bernoulli_(torch.tensor([0.0, 0.5, 1.0], device=DEV)).cpu()
    assert (y[:, 0] == 0).all() and (y[:, 2] == 1).all() and abs(y[:, 1].mean().item() - 0.5) < 0.06


def test_normal_tensor_overloads():
    torch.manual_seed(5)
    mean = torch.tensor([-5.0, 0.0, 10.0]).repeat(N // 3)
    std = torch.tensor([0.5, 1.0, 3.0]).repeat(N // 3)
    for draw in (lambda: torch.normal(mean.to(DEV), std.to(DEV)),
                 lambda: torch.normal(mean.to(DEV), 2.0) + 0 * std.to(DEV),
                 lambda: torch.normal(1.0, std.to(DEV))):
        x = draw().cpu().double().view(-1, 3)
        assert x.shape == (N // 3, 3)
    x = torch.normal(mean.to(DEV), std.to(DEV)).cpu().double().view(-1, 3)
    assert (x.mean(0) - torch.tensor([-5.0, 0.0, 10.0], dtype=torch.float64)).abs().max() < 0.05
    assert (x.std(0) - torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64)).abs().max() < 0.05
    y = torch.normal(1.0, std.to(DEV)).cpu().double().view(-1, 3)
    assert (y.mean(0) - 1.0).abs().max() < 0.05
    with pytest.raises(RuntimeError, match="std >= 0"):
        torch.normal(torch.zeros(3, device=DEV), torch.tensor([1.0, -1.0, 1.0], device=DEV)).cpu()


def test_other_distributions():
    torch.manual_seed(6)
    ln = torch.empty(N, device=DEV).log_normal_(0.5, 0.25).cpu().double()
    assert ln.min() > 0 and abs(ln.log().mean().item() - 0.5) < 0.01 and abs(ln.log().std().item() - 0.25) < 0.01
    ca = torch.empty(N, device=DEV).cauchy_(2.0, 0.5).cpu().double()
    assert abs(ca.median().item() - 2.0) < 0.02  # the median; a Cauchy has no mean
    assert abs(((ca - 2.0).abs() < 0.5).double().mean().item() - 0.5) < 0.01  # quartiles at median +- sigma
    ge = torch.empty(N, device=DEV).geometric_(0.25).cpu().double()
    assert ge.min() >= 1 and (ge == ge.round()).all()
    assert abs(ge.mean().item() - 4.0) < 0.06
    assert abs((ge == 1).double().mean().item() - 0.25) < 0.01


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_randperm_is_a_permutation(n):
    torch.manual_seed(7)
    p = torch.randperm(n, device=DEV)
    assert p.dtype == torch.int64 and p.shape == (n,)
    assert sorted(p.cpu().tolist()) == list(range(n))
    if n == 1000:
        assert not torch.equal(p.cpu(), torch.arange(n))
        torch.manual_seed(7)
        assert _same(p, torch.randperm(n, device=DEV))
        # every position sees many values over many draws
        firsts = torch.stack([torch.randperm(10, device=DEV)[0] for _ in range(300)]).cpu()
        assert torch.bincount(firsts, minlength=10).min() > 10
