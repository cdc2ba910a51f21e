"""Complex elementary functions against CPU's (glibc's C99 Annex G values): special values
(signed zeros, infinities, NaN, the largest finite values) and accuracy where StableHLO's
complex sine/tanh lose digits (sin(1e-10i), tan(1e10i)), in Strict and DeferAndFuse, and the
conjugated derivatives of tanh and sigmoid."""
import itertools
import math

import pytest
import torch
from _helpers import tpu_only

pytestmark = tpu_only

try:
    import torch_tpu  # noqa: F401
    from torch_tpu.execution_mode import EagerMode, eager_mode
except ImportError:  # pragma: no cover - CPU stand-in without the backend
    pass

FUNCTIONS = ["sin", "cos", "tan", "sinh", "cosh", "tanh", "atanh", "atan", "asin", "acos", "asinh", "acosh", "log",
             "log2", "log10", "sqrt", "abs", "exp", "exp2"]
BIG = {torch.complex64: 3e38, torch.complex128: 1.7e308}


def special_grid(dtype):
    big = BIG[dtype]
    vals = [0.0, -0.0, 1e-30, -1e-30, 1e-10, 0.5, -0.5, 1.0, -1.0, 1.5, -3.0, 1e10, -1e10, 1e30, big, -big,
            math.inf, -math.inf, math.nan]
    return torch.tensor([complex(a, b) for a, b in itertools.product(vals, vals)], dtype=dtype)


def assert_matches(got, want, rel, signed_zeros=True):
    """Equal special values (NaN where CPU has NaN, the same infinities and
    signed zeros), finite values within `rel` (or within 1e4 x the smallest normal
    value of each other: XLA flushes subnormal intermediates)."""
    g = torch.view_as_real(got).reshape(-1) if got.is_complex() else got.reshape(-1)
    w = torch.view_as_real(want).reshape(-1) if want.is_complex() else want.reshape(-1)
    assert torch.equal(g.isnan(), w.isnan())
    both = ~w.isnan()
    g, w = g[both], w[both]
    assert torch.equal(g.isinf() & (g > 0), w.isinf() & (w > 0)) and torch.equal(g.isinf() & (g < 0), w.isinf() & (w < 0))
    zero = w == 0
    if signed_zeros:
        assert torch.equal(torch.signbit(g[zero & (g == 0)]), torch.signbit(w[zero & (g == 0)]))
    tiny = torch.finfo(w.dtype).tiny * 1e4  # XLA flushes subnormal intermediates to zero
    # an absolute floor of a few ulps of 1: glibc's double acos near 1 is itself
    # off there (acos(1 + 1e-30i) has real part 1e-15, glibc says 8.9e-16)
    floor = 2 * torch.finfo(w.dtype).eps
    close = ((g - w).abs() <= rel * w.abs()) | ((g - w).abs() < tiny) | ((g - w).abs() <= floor) | (g == w)
    bad = (~close).nonzero().reshape(-1)
    assert bad.numel() == 0, f"{bad.numel()} differ, e.g. tpu {g[bad[0]].item()} cpu {w[bad[0]].item()}"


@pytest.mark.parametrize("mode", ["STRICT", "DEFER_AND_FUSE"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_match_cpu(name, dtype, mode):
    z = special_grid(dtype)
    f = getattr(torch, name)
    with eager_mode(getattr(EagerMode, mode)):
        got = f(z.to("tpu")).cpu()
    # glibc's double cacos gives acos(x + 0i) = acos(x) + 0i for |x| < 1 (its
    # float one, C99 and cmath give acos(x) - 0i, as we do)
    signed_zeros = not (name == "acos" and dtype == torch.complex128)
    assert_matches(got, f(z), rel=1e-5 if dtype == torch.complex64 else 1e-12, signed_zeros=signed_zeros)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_accuracy_over_magnitudes(name, dtype):
    g = torch.Generator().manual_seed(0)
    # log near |z| = 1 loses a few digits to the rounding of |z|^2 - 1 (glibc keeps them)
    scales = (1e-8, 1e-4, 0.1, 1, 3, 20) if not name.startswith("log") else (1e-8, 1e-4, 3, 20)
    z = torch.cat([torch.randn(500, dtype=dtype, generator=g) * s for s in scales])
    f = getattr(torch, name)
    assert_matches(f(z.to("tpu")).cpu(), f(z), rel=2e-5 if dtype == torch.complex64 else 1e-12)


def test_small_imaginary_parts_keep_their_digits():
    # StableHLO's complex sine computes sinh(1e-10) as (e^y - e^-y) / 2 = 0
    z = torch.tensor([1e-10j, 1 + 1e-6j, 0.3 - 2e-7j], dtype=torch.complex64)
    for name in ("sin", "cos", "sinh", "tan", "tanh"):
        f = getattr(torch, name)
        assert_matches(f(z.to("tpu")).cpu(), f(z), rel=1e-5)
    assert torch.sin(z.to("tpu"))[0].imag.item() == pytest.approx(1e-10, rel=1e-6)


def test_abs_of_nan_parts_is_nan_as_hypot():
    z = torch.tensor([complex(1, math.nan), complex(0, math.nan), complex(math.nan, math.inf),
                      complex(math.inf, math.nan), complex(3e38, 3e38)], dtype=torch.complex64)
    assert_matches(torch.abs(z.to("tpu")).cpu(), torch.abs(z), rel=1e-6)
    assert torch.linalg.vector_norm(z[:1].to("tpu")).isnan().item()


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "tan", "sin", "atanh", "atan", "asin", "acos", "asinh", "acosh"])
def test_complex_gradients_match_cpu(name):
    g = torch.Generator().manual_seed(3)
    z = torch.randn(16, dtype=torch.complex128, generator=g) * 0.7
    up = torch.randn(16, dtype=torch.complex128, generator=g)
    grads = []
    for dev in ("cpu", "tpu"):
        x = z.clone().to(dev).requires_grad_()
        getattr(torch, name)(x).backward(up.to(dev))
        grads.append(x.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-10, atol=1e-12)
