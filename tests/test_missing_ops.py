"""Ops and checks that were missing or differed from CPU (issue #13, sections
2 and 3), in Strict, Debug and DeferAndFuse: complex Python scalars, round
with decimals, angle, complex/polar, prelu, rrelu, hash_tensor,
remainder(Scalar, Tensor), addbmm, masked_select(out=), the ZeroTensor
autograd makes (torch.func.hessian), CPU's refusals of complex ordering and
mixed-dtype heaviside, CPU's warnings, and one clear NotImplementedError for
sparse and quantized tensors. CPU PyTorch is the oracle throughout.
"""
import warnings

import pytest
import torch
import torch.nn.functional as F

from _helpers import DEV, assert_same, assert_same_error, check, check_scenario, make_tensor, tpu_only
from _helpers import each_eager_mode  # noqa: F401

NAN, INF = float("nan"), float("inf")


def same_error_and_words(fn, *args):
    cpu_e, dev_e = assert_same_error(fn, *args)
    assert str(cpu_e).split("\n")[0] in str(dev_e), (str(cpu_e), str(dev_e))


# -- complex Python scalars ---------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_scalar_fill_and_full(dtype):
    check_scenario(lambda d: torch.zeros(3, dtype=dtype, device=d).fill_(1.5 - 2j))
    check_scenario(lambda d: torch.full((2, 3), 0.25 + 1j, dtype=dtype, device=d))
    check_scenario(lambda d: torch.full((2,), 1 + 2j, device=d))  # dtype inferred: complex64


def test_complex_scalar_setitem_index_fill_masked_fill_where():
    def scenario(d):
        z = torch.zeros(4, dtype=torch.complex64, device=d)
        z[1] = 3 - 1j
        z[2:] = 2j
        y = torch.zeros(4, dtype=torch.complex64, device=d).index_fill_(0, torch.tensor([0, 3], device=d), -1 + 1j)
        m = torch.tensor([True, False, True, False], device=d)
        w = torch.where(m, torch.ones(4, dtype=torch.complex64, device=d), 2j)
        return z, y, z.masked_fill(m, 0.5j), w
    check_scenario(scenario)


def test_complex_scalar_arithmetic():
    x = make_tensor((3, 4), seed=1)
    check(lambda t: t * (1 + 2j), x)
    check(lambda t: t.to(torch.complex64) + 2j, x)
    check(lambda t: t.to(torch.complex128).add(1, alpha=1j), x)
    check(lambda t: t.to(torch.complex64).pow(0.5 + 0.5j), x.abs() + 0.1, atol=1e-5, rtol=1e-5)


def test_complex_scalar_into_real_tensor():
    # a zero imaginary part fills a real tensor (the real part, at full precision); a non-zero one is refused
    check_scenario(lambda d: torch.zeros(3, dtype=torch.float64, device=d).fill_(0.1 + 0j))
    check_scenario(lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(7 + 0j))
    same_error_and_words(lambda t: t.fill_(1 + 1j), torch.zeros(3))
    same_error_and_words(lambda t: t.masked_fill(t > -1, 1j), torch.zeros(3))


# -- rounding, angle, complex construction -------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("decimals", [2, 1, 0, -1, -2])
def test_round_decimals(dtype, decimals):
    x = (make_tensor((4, 6), seed=2, dtype=torch.float64) * 321.0).to(dtype)
    check(lambda t: torch.round(t, decimals=decimals), x)
    check(lambda t: t.clone().round_(decimals=decimals), x)
    check(lambda t: torch.round(t, decimals=decimals, out=torch.empty_like(t)), x)


def test_round_decimals_halfway_and_integer_refusal():
    check(lambda t: torch.round(t, decimals=1), torch.tensor([0.25, 0.35, -0.25, 1.05, 2.5, NAN, INF]))
    assert_same_error(lambda t: torch.round(t, decimals=2), torch.arange(4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.uint8], ids=str)
def test_angle_real(dtype):
    x = torch.tensor([-2.0, -0.0, 0.0, 3.0, NAN, -INF, INF]) if dtype.is_floating_point else torch.arange(-3, 4)
    if dtype == torch.uint8:
        x = torch.arange(0, 6)
    check(torch.angle, x.to(dtype))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_angle_complex(dtype):
    z = torch.complex(make_tensor((3, 5), seed=3, dtype=torch.float64), make_tensor((3, 5), seed=4, dtype=torch.float64))
    check(torch.angle, z.to(dtype))
    check(lambda t: torch.angle(t, out=torch.empty(0, device=t.device)), z.to(torch.complex64))


def test_complex_and_polar():
    a, b = make_tensor((3, 4), seed=5), make_tensor((4,), seed=6)
    check(torch.complex, a, b)
    check(lambda r, i: torch.complex(r, i, out=torch.empty(3, 4, dtype=torch.complex64, device=r.device)), a, b)
    check(torch.complex, a.double(), b.double())
    check(torch.polar, a.abs(), b, atol=1e-6, rtol=1e-6)
    check(lambda r, t: torch.polar(r, t, out=torch.empty(0, dtype=torch.complex128, device=r.device)),
          a.abs().double(), b.double())


def test_remainder_scalar_tensor():
    x = make_tensor((3, 4), seed=7)
    check(lambda t: 0.25 % t, x)
    check(lambda t: torch.remainder(5, t), torch.tensor([3, -3, 2, -7, 4]))
    check(lambda t: torch.remainder(-7.5, t), torch.tensor([2.0, -2.0, 0.5, INF]))


# -- prelu, rrelu ----------------------------------------------------------------

def test_prelu_forward_and_gradients():
    x = make_tensor((2, 3, 4, 5), seed=8, requires_grad=True)
    w = torch.tensor([0.25, -0.5, 0.1], requires_grad=True)
    check(F.prelu, x, w)
    check(F.prelu, make_tensor((4, 6), seed=9, requires_grad=True), torch.tensor([0.3], requires_grad=True))


def test_prelu_module_trains_like_cpu():
    def scenario(d):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.PReLU(8), torch.nn.Linear(8, 1)).to(d)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x = make_tensor((16, 6), seed=10).to(d)
        for _ in range(3):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        return [p.detach() for p in m.parameters()]
    check_scenario(scenario, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_rrelu_eval_is_leaky_relu_with_mean_slope(dtype):
    x = make_tensor((5, 7), seed=11).to(dtype)
    check(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)
    check(lambda t: torch.ops.aten.rrelu_with_noise(t, torch.zeros_like(t), 0.2, 0.4, False), x)


@tpu_only
def test_rrelu_training_draws_slopes_in_range_and_grad_is_the_noise():
    lower, upper = 0.1, 0.3
    x = make_tensor((64, 33), seed=12).to(DEV).requires_grad_()
    torch.tpu.manual_seed(3)
    y = F.rrelu(x, lower, upper, training=True)
    y.sum().backward()
    xc, yc, g = x.detach().cpu(), y.detach().cpu(), x.grad.cpu()
    pos = xc > 0
    assert torch.equal(yc[pos], xc[pos]) and torch.equal(g[pos], torch.ones_like(g[pos]))
    slope = yc[~pos] / xc[~pos]
    assert slope.min() >= lower - 1e-6 and slope.max() <= upper + 1e-6
    assert slope.std() > 0.03  # drawn, not one slope
    torch.testing.assert_close(g[~pos], slope)  # d/dx (r * x) = r
    torch.tpu.manual_seed(3)
    assert torch.equal(F.rrelu(x.detach(), lower, upper, training=True).cpu(), yc)  # seeded: reproducible


@tpu_only
def test_rrelu_noise_argument_and_inplace():
    x = make_tensor((4, 9), seed=13).to(DEV)
    noise = torch.full_like(x, 7.0)
    torch.tpu.manual_seed(0)
    y = torch.ops.aten.rrelu_with_noise(x, noise, 0.2, 0.5, True)
    n, xc, yc = noise.cpu(), x.cpu(), y.cpu()
    assert torch.equal(n[xc > 0], torch.ones_like(n[xc > 0]))
    torch.testing.assert_close(yc, xc * n)
    z = x.clone()
    torch.tpu.manual_seed(0)
    F.rrelu_(z, 0.2, 0.5, training=True)
    assert torch.equal(z.cpu(), yc)


def test_rrelu_bounds_refused_like_cpu():
    same_error_and_words(lambda t: F.rrelu(t, 0.5, 0.2, training=True), make_tensor((3,), seed=14))


# -- hash_tensor, addbmm, masked_select(out=) ------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.int64, torch.uint8,
                                   torch.bool], ids=str)
def test_hash_tensor(dtype):
    x = make_tensor((3, 5), seed=15, dtype=dtype)
    check(torch.hash_tensor, x)
    check(lambda t: torch.hash_tensor(t, dim=1), x)
    check(lambda t: torch.hash_tensor(t, dim=0, keepdim=True), x)


def test_hash_tensor_complex_refused_like_cpu():
    assert_same_error(torch.hash_tensor, torch.ones(3, dtype=torch.complex64))


def test_addbmm():
    s, b1, b2 = make_tensor((3, 5), seed=16), make_tensor((4, 3, 2), seed=17), make_tensor((4, 2, 5), seed=18)
    check(torch.addbmm, s, b1, b2, atol=1e-5, rtol=1e-5)
    check(lambda *a: torch.addbmm(*a, beta=0.5, alpha=2), s, b1, b2, atol=1e-5, rtol=1e-5)
    check(lambda *a: torch.addbmm(*a, out=torch.empty(3, 5, device=a[0].device)), s, b1, b2, atol=1e-5, rtol=1e-5)
    same_error_and_words(lambda *a: torch.addbmm(*a, out=torch.empty(3, 5, dtype=torch.float64, device=a[0].device)),
                         s, b1, b2)


def test_masked_select_out():
    x = make_tensor((3, 4), seed=19)
    check(lambda t: torch.masked_select(t, t > 0, out=torch.empty(0, device=t.device)), x)
    same_error_and_words(lambda t: torch.masked_select(t, t > 0, out=torch.empty(0, dtype=torch.float64, device=t.device)), x)
    # an out whose elements share memory, or that is the input: CPU's overlap errors (it wrote before)
    m = torch.tensor([True, False, True])
    same_error_and_words(lambda t, m: torch.masked_select(t, m, out=torch.zeros(1, device=t.device).expand(2)),
                         torch.arange(3.0), m)
    same_error_and_words(lambda t, m: torch.masked_select(t, m, out=t[:2]), torch.arange(3.0), m)


# -- ZeroTensor (autograd's known-zero gradients) --------------------------------

def test_efficient_zero_tensor_and_hessian():
    check_scenario(lambda d: torch.ops.aten._efficientzerotensor([2, 3], device=d) + 1)
    check_scenario(lambda d: torch.ops.aten._efficientzerotensor([2, 3], device=d)._is_zerotensor())
    check(lambda t: torch.func.hessian(lambda z: (z ** 3).sum() + (z[0] * z[1]))(t), torch.tensor([1.0, 2.0, -0.5]))
    check(lambda t: torch.func.jacfwd(torch.sin)(t), torch.tensor([0.1, 0.2]))
    cpu_e, dev_e = assert_same_error(lambda d: torch.ops.aten._efficientzerotensor([2], device=d.device).add_(1),
                                     torch.zeros(1))
    assert "immutable" in str(dev_e)


# -- what CPU refuses: complex order, mixed-dtype heaviside, zero-size reductions --

COMPLEX_ORDER = {
    "maximum": lambda z: torch.maximum(z, z), "minimum": lambda z: torch.minimum(z, z),
    "fmax": lambda z: torch.fmax(z, z), "clamp": lambda z: z.clamp(min=0), "clamp_t": lambda z: z.clamp(max=z),
    "amax": lambda z: z.amax(), "max": lambda z: z.max(), "max_dim": lambda z: z.max(0),
    "sort": lambda z: z.sort(), "topk": lambda z: z.topk(1), "argmax": lambda z: z.argmax(),
    "lt": lambda z: z < z, "cummax": lambda z: z.cummax(0),
}


@pytest.mark.parametrize("name", list(COMPLEX_ORDER))
def test_complex_has_no_order(name):
    same_error_and_words(COMPLEX_ORDER[name], torch.tensor([1 + 2j, 3 - 1j]))


def test_heaviside_refusals():
    same_error_and_words(torch.heaviside, torch.ones(3), torch.ones(3, dtype=torch.float64))
    same_error_and_words(torch.heaviside, torch.ones(3, dtype=torch.complex64), torch.ones(3, dtype=torch.complex64))
    check(torch.heaviside, torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5, 0.5, 0.5]))


@pytest.mark.parametrize("fn", [lambda t: t.amax(0), lambda t: t.amin(0), lambda t: t.max(0), lambda t: t.argmax(0)],
                         ids=["amax", "amin", "max_dim", "argmax"])
def test_reduction_over_zero_size_dim(fn):
    same_error_and_words(fn, torch.zeros(0, 3))
    check(fn, make_tensor((2, 3), seed=21))


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_over_no_dims(op):
    x = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]])
    check(lambda t: getattr(t, op)(dim=[]), x)
    check(lambda t: getattr(t, op)(dim=[]), x.bool())
    check(lambda t: getattr(t, op)(dim=[0, 1]), x)


# -- CPU's warnings ---------------------------------------------------------------

def warnings_of(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(*args)
        torch.tpu.synchronize() if DEV == "tpu" else None
    return [str(x.message).split(" (Triggered")[0] for x in w]


@pytest.mark.parametrize("fn", [lambda t: t.var(0), lambda t: t.std(0), lambda t: torch.var_mean(t, 0),
                                lambda t: torch.std_mean(t, 0), lambda t: t.var(1, correction=3)],
                         ids=["var", "std", "var_mean", "std_mean", "var_corr3"])
def test_variance_without_degrees_of_freedom_warns_like_cpu(fn):
    x = torch.ones(1, 3)
    assert warnings_of(fn, x) == warnings_of(fn, x.to(DEV))
    assert warnings_of(fn, x)  # CPU does warn here
    y = torch.ones(4, 3)
    assert warnings_of(fn, y.to(DEV)) == warnings_of(fn, y)


def test_uint8_mask_index_warns_like_cpu():
    x = make_tensor((3, 4), seed=20)
    m = (x > 0).to(torch.uint8)
    fn = lambda t, mm: t[mm]  # noqa: E731
    assert warnings_of(fn, x.to(DEV), m.to(DEV)) == warnings_of(fn, x, m) != []
    check(lambda t, mm: t[mm.bool()], x, m)


# -- layouts 'tpu' does not hold --------------------------------------------------

@tpu_only
@pytest.mark.parametrize("make", [
    lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1.0, 2.0]), (3,)).to(DEV),
    lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1.0, 2.0]), (3,), device=DEV),
    lambda: torch.ones(2, 3, device=DEV).to_sparse(),
    lambda: torch.eye(3, device=DEV).to_sparse_csr(),
    # a compressed tensor's move refuses itself (CPU's kernel would build it around moved indices)
    lambda: torch.eye(3).to_sparse_csr().to(DEV),
    lambda: torch.eye(3).to_sparse_csc().to(DEV),
    lambda: torch.eye(4).to_sparse_bsr((2, 2)).to(DEV, torch.float64),
], ids=["coo_to", "coo_device", "to_sparse", "to_sparse_csr", "csr_to", "csc_to", "bsr_to"])
def test_sparse_is_one_clear_error(make):
    with pytest.raises(NotImplementedError, match="sparse tensors .* not supported on 'tpu'"):
        make()


def test_compressed_sparse_tensors_still_move_between_cpu_dtypes():
    x = torch.eye(3).to_sparse_csr()
    y = x.to(torch.float64)
    assert y.layout == torch.sparse_csr and torch.equal(y.to_dense(), torch.eye(3, dtype=torch.float64))


@tpu_only
@pytest.mark.parametrize("make", [
    lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8).to(DEV),
    lambda: torch.quantize_per_tensor(torch.ones(3, device=DEV), 0.1, 0, torch.quint8),
    lambda: torch.quantize_per_channel(torch.ones(2, 3, device=DEV), torch.ones(2), torch.zeros(2, dtype=torch.long),
                                       0, torch.qint8),
], ids=["to", "per_tensor", "per_channel"])
def test_quantized_is_one_clear_error(make):
    with pytest.raises(NotImplementedError, match="quantized tensors .* not supported on 'tpu'"):
        make()


# -- poisson, complex logcumsumexp ---------------------------------------------------

@tpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_poisson_moments_both_samplers(dtype):
    # rates below 10 use Knuth's product, 10 and above the rejection sampler
    rates = torch.tensor([0.0, 0.5, 3.0, 9.9, 10.0, 42.0, 1e4], dtype=dtype)
    n = 20000
    torch.tpu.manual_seed(0)
    s = torch.poisson(rates.expand(n, -1).contiguous().to(DEV)).cpu().double()
    assert s.dtype == torch.float64 and torch.equal(s, s.round()) and (s >= 0).all()
    mean, var = s.mean(0), s.var(0)
    r = rates.double()
    assert torch.equal(s[:, 0], torch.zeros(n, dtype=torch.float64))
    # 5 standard errors of the mean, and the variance within 10% (Poisson: var == mean)
    assert ((mean - r).abs()[1:] <= 5 * (r[1:] / n).sqrt()).all(), (mean, r)
    assert ((var[1:] / r[1:]) - 1).abs().max() < 0.1, (var, r)


@tpu_only
def test_poisson_seeded_and_out():
    rates = torch.tensor([[1.0, 20.0], [0.1, 300.0]], device=DEV).expand(50, 2, 2).contiguous()
    torch.tpu.manual_seed(5)
    a = torch.poisson(rates)
    torch.tpu.manual_seed(5)
    b = torch.ops.aten.poisson.out(rates, None, out=torch.empty_like(rates))
    assert torch.equal(a.cpu(), b.cpu())
    c1 = torch.poisson(rates, generator=torch.Generator(DEV).manual_seed(1))
    c2 = torch.poisson(rates, generator=torch.Generator(DEV).manual_seed(1))
    assert torch.equal(c1.cpu(), c2.cpu())
    assert not torch.equal(torch.poisson(rates).cpu(), torch.poisson(rates).cpu())  # the generator advances


def test_poisson_errors_like_cpu():
    same_error_and_words(lambda t: torch.poisson(t).sum().item(), torch.tensor([1.0, -1.0]))
    same_error_and_words(lambda t: torch.poisson(t).sum().item(), torch.tensor([1.0, NAN]))
    assert_same_error(torch.poisson, torch.tensor([3]))
    check_scenario(lambda d: torch.poisson(torch.tensor([INF, 0.0], device=d)))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_logcumsumexp_complex(dtype):
    z = torch.complex(make_tensor((3, 6), seed=22, dtype=torch.float64) * 3, make_tensor((3, 6), seed=23, dtype=torch.float64))
    check(lambda t: torch.logcumsumexp(t, 1), z.to(dtype), atol=1e-5, rtol=1e-5)
    check(lambda t: torch.logcumsumexp(t, 0), z.to(dtype), atol=1e-5, rtol=1e-5)


# -- complex logaddexp and renorm (CPU computes them; they were refused) -------

def complex_operands(n=24, seed=11, dtype=torch.complex64):
    g = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(n, generator=g) * 3, torch.randn(n, generator=g) * 3).to(dtype)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_logaddexp(dtype):
    x, y = complex_operands(dtype=dtype), complex_operands(seed=12, dtype=dtype)
    check(torch.logaddexp, x, y, atol=1e-5, rtol=1e-5)
    check(torch.logaddexp, x, x, atol=1e-5, rtol=1e-5)  # equal real parts: log1p(exp(0)) + x
    check(torch.logaddexp, x, y[:1], atol=1e-5, rtol=1e-5)  # broadcast


def test_complex_logaddexp_special_values():
    # NaN in any part is NaN + NaNj; equal infinite real parts: -inf keeps the smaller operand,
    # +inf is log(exp(a) + exp(b)); one infinite operand dominates
    vals = [complex(NAN, 0), complex(0, NAN), complex(-INF, 1), complex(-INF, -2), complex(INF, 0.5),
            complex(INF, 0), complex(2, 0), complex(-1, 3), complex(0, 0), complex(1e30, 1)]
    a = torch.tensor([v for v in vals for _ in vals], dtype=torch.complex64)
    b = torch.tensor([w for _ in vals for w in vals], dtype=torch.complex64)
    check(torch.logaddexp, a, b, atol=1e-6, rtol=1e-6)


def test_complex_logaddexp2_refused_like_cpu():
    x = complex_operands()
    same_error_and_words(lambda t: torch.logaddexp2(t, t), x)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_renorm(p, dtype):
    x = complex_operands(24, dtype=dtype).reshape(4, 3, 2)
    for dim in (0, 1, -1):
        check(lambda t: torch.renorm(t, p, dim, 2.5), x, atol=1e-5, rtol=1e-5)
    check(lambda t: t.clone().renorm_(p, 0, 0.5), x, atol=1e-5, rtol=1e-5)
