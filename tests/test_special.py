"""Special functions (csrc/ops/special.cc) against the CPU implementations,
over ranges wider than the OpInfo samples: both sides of every series /
asymptotic-expansion switch point, poles and edge values."""
import pytest
import torch

import torch_tpu  # noqa: F401

S = torch.special


def _check(fn, *args, rtol=1e-4, atol=1e-5):
    expected = fn(*args)
    actual = fn(*[a.to("tpu") for a in args])
    if isinstance(expected, tuple):
        for e, a in zip(expected, actual):
            torch.testing.assert_close(a.cpu(), e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        torch.testing.assert_close(actual.cpu(), expected, rtol=rtol, atol=atol, equal_nan=True)


X = torch.cat([torch.linspace(-40, 40, 801),
               torch.tensor([0.0, -0.0, 1e-30, 8.99, 9.01, 11.99, 12.01, 29.9, 30.1, float("nan")])])

UNARY = {
    "i0e": S.i0e, "i1e": S.i1e, "k0": S.modified_bessel_k0, "k1": S.modified_bessel_k1,
    "k0e": S.scaled_modified_bessel_k0, "k1e": S.scaled_modified_bessel_k1,
    "j0": S.bessel_j0, "j1": S.bessel_j1, "y0": S.bessel_y0, "y1": S.bessel_y1,
    "spherical_j0": S.spherical_bessel_j0, "airy_ai": S.airy_ai, "lgamma": torch.lgamma,
    "digamma": torch.digamma, "log_ndtr": S.log_ndtr, "erfcx": S.erfcx, "entr": S.entr,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    _check(UNARY[name], X)


def test_i0_i1():
    x = torch.linspace(-80, 80, 321)
    _check(torch.i0, x)
    _check(S.i1, x)


def test_erfinv_ndtri():
    p = torch.linspace(0, 1, 101)
    _check(torch.erfinv, p * 2 - 1)
    _check(S.ndtri, p)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma(n):
    x = torch.linspace(-9.95, 9.95, 200)  # no poles
    _check(lambda v: torch.polygamma(n, v), x)


def test_zeta_igamma():
    torch.manual_seed(0)
    x, q = torch.rand(500) * 10 - 2, torch.rand(500) * 12 - 3
    _check(S.zeta, x, q)
    a = torch.cat([torch.rand(500) * 20, torch.tensor([0.0, 0.0, 1.0, -1.0, 2.0, float("inf")])])
    z = torch.cat([torch.rand(500) * 30, torch.tensor([0.0, 1.0, 0.0, 1.0, -1.0, 1.0])])
    _check(torch.igamma, a, z)
    _check(torch.igammac, a, z)


POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
         "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
         "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYS)
def test_orthogonal_polynomial(name):
    # runtime degrees (truncated toward zero, negative -> 0) through a while loop
    x = torch.linspace(-3, 3, 25).repeat(15)
    n = torch.arange(-2, 13).repeat_interleave(25).float() + 0.3
    _check(getattr(S, name), x, n)


def test_frexp_nextafter():
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-40, -3e-39, 6e37, float("inf"), float("-inf")])
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        _check(torch.frexp, x.to(dt), rtol=0, atol=0)
    y = torch.tensor([1.0, -1.0, 0.0, float("inf"), float("-inf"), float("nan")])
    xx, yy = x.repeat_interleave(len(y)), y.repeat(len(x))
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        _check(torch.nextafter, xx.to(dt), yy.to(dt), rtol=0, atol=0)
