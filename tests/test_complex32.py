"""complex32 (ComplexHalf) on 'tpu' (issue #13, section 3): storage, copies,
views and the ops CPU computes for it, against CPU (exact values; copies bit for bit) in every eager
mode and under torch.compile; the ops CPU refuses for complex32 raise CPU's
NotImplementedError. The device holds each value as an opaque 32-bit word
(two float16 halves) and computes in complex64, rounding every result."""
import warnings

import pytest
import torch

from _helpers import DEV, assert_same_error, each_eager_mode, tpu_only  # noqa: F401  (each_eager_mode: a fixture)

pytestmark = [tpu_only, pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
              pytest.mark.filterwarnings("ignore:BComplex32 support is experimental"),
              pytest.mark.filterwarnings("ignore:Casting complex values to real")]

NAN, INF = float("nan"), float("inf")


def operands():
    x = torch.tensor([1.5 + 2j, -3 + 0.5j, complex(NAN, 1), complex(INF, -2), 1e-3 - 7e4j, 0j], dtype=torch.complex32)
    y = torch.tensor([0.5 - 1j, 2 + 2j, 1, -0.25j, 3e4 + 1j, complex(-0.0, 0)], dtype=torch.complex32)
    f = torch.tensor([1.5, 2.0, -1.0, NAN, 6e4, -0.0], dtype=torch.float16)
    return x, y, f


def bits(t):
    if t.dtype.is_complex or t.dtype.is_floating_point:
        return t.contiguous().view(torch.uint8)
    return t


def same(got, ref):
    """Exactly CPU's values and dtype (NaN where CPU has NaN, any payload)."""
    got = got.cpu()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    as_real = (lambda t: torch.view_as_real(t.to(torch.complex64))) if ref.dtype.is_complex else (lambda t: t)
    torch.testing.assert_close(as_real(got), as_real(ref), rtol=0, atol=0, equal_nan=True)


def idx(t, *v):
    return torch.tensor(list(v), device=t.device)


# Ops CPU computes for complex32, each as f(x, y, f16).
COMPUTED = {
    "copy": lambda x, y, f: x.clone(),
    "add": lambda x, y, f: x + y,
    "sub": lambda x, y, f: x - y,
    "mul": lambda x, y, f: x * y,
    "neg": lambda x, y, f: -x,
    "add_f16": lambda x, y, f: x + f,
    "mul_f16": lambda x, y, f: x * f,
    "add_f32_promotes": lambda x, y, f: x + f.float(),
    "add_c64_promotes": lambda x, y, f: x + y.to(torch.complex64),
    "f16_times_complex_scalar": lambda x, y, f: f * (1 + 2j),
    "f16_eq_complex_scalar": lambda x, y, f: f == (1.5 + 0j),
    "eq": lambda x, y, f: x == y,
    "ne": lambda x, y, f: x != y,
    "abs": lambda x, y, f: x.abs(),
    "sgn": lambda x, y, f: x.sgn(),
    "isnan": lambda x, y, f: x.isnan(),
    "isinf": lambda x, y, f: x.isinf(),
    "isfinite": lambda x, y, f: x.isfinite(),
    "conj": lambda x, y, f: x.conj().resolve_conj(),
    "real": lambda x, y, f: x.real.clone(),
    "imag": lambda x, y, f: x.imag.clone(),
    "view_as_real": lambda x, y, f: torch.view_as_real(x).clone(),
    "view_f16": lambda x, y, f: x.view(torch.float16).clone(),
    "view_as_complex": lambda x, y, f: torch.view_as_complex(f.reshape(3, 2)).clone(),
    "to_c64": lambda x, y, f: x.to(torch.complex64),
    "to_f16": lambda x, y, f: x.to(torch.float16),
    "to_f32": lambda x, y, f: x.to(torch.float32),
    "from_f16": lambda x, y, f: f.to(torch.complex32),
    "from_c64": lambda x, y, f: (x.to(torch.complex64) * 1.001).to(torch.complex32),
    "complex": lambda x, y, f: torch.complex(f, f.flip(0)),
    "cat": lambda x, y, f: torch.cat([x, y]),
    "stack": lambda x, y, f: torch.stack([x, y]),
    "where": lambda x, y, f: torch.where(f > 0, x, y),
    "masked_fill": lambda x, y, f: x.masked_fill(f > 0, 2 - 1j),
    "index": lambda x, y, f: x[idx(x, 4, 0, 2)],
    "index_select": lambda x, y, f: x.index_select(0, idx(x, 1, 1)),
    "boolean_mask": lambda x, y, f: x[f > 0],
    "setitem": lambda x, y, f: (lambda z: (z.__setitem__(slice(1, 3), 2 + 3j), z)[1])(x.clone()),
    "fill_": lambda x, y, f: x.clone().fill_(1 + 1j),
    "add_": lambda x, y, f: x.clone().add_(y),
    "mul_scalar_": lambda x, y, f: x.clone().mul_(2),
    "copy_from_f16": lambda x, y, f: torch.empty(6, dtype=torch.complex32, device=x.device).copy_(f),
    "copy_into_c64": lambda x, y, f: torch.empty(6, dtype=torch.complex64, device=x.device).copy_(x),
    "full": lambda x, y, f: torch.full((2, 3), 1 - 2j, dtype=torch.complex32, device=x.device),
    "zeros_like": lambda x, y, f: torch.zeros_like(x),
    "transpose": lambda x, y, f: x.reshape(2, 3).t().contiguous(),
    "expand": lambda x, y, f: x[:2].expand(3, 2).contiguous(),
    "roll": lambda x, y, f: x.roll(2),
    "tril": lambda x, y, f: x.reshape(2, 3).tril(),
    "repeat": lambda x, y, f: x.repeat(2),
    "nonzero": lambda x, y, f: x.nonzero(),
    "any": lambda x, y, f: x.any(),
    "addcmul": lambda x, y, f: torch.addcmul(x, x, y),
    "isclose": lambda x, y, f: x.isclose(y),
}

# Ops CPU refuses for complex32 (NotImplementedError naming ComplexHalf).
REFUSED = {
    "exp": lambda x, y, f: x.exp(),
    "sum": lambda x, y, f: x.sum(),
    "div": lambda x, y, f: x / y,
    "cumsum": lambda x, y, f: x.cumsum(0),
    "flip": lambda x, y, f: x.flip(0),
    "matmul": lambda x, y, f: x.reshape(2, 3) @ y.reshape(3, 2),
    "f16_gt_complex_scalar": lambda x, y, f: f > (1 + 2j),
    "equal": lambda x, y, f: torch.equal(x, y),
}


@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_complex32_op_matches_cpu_bits(name):
    fn = COMPUTED[name]
    x, y, f = operands()
    ref = fn(x, y, f)
    got = fn(x.to(DEV), y.to(DEV), f.to(DEV))
    assert got.device.type == DEV
    same(got, ref)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_complex32_refusals_match_cpu(name):
    x, y, f = operands()
    cpu, dev = assert_same_error(lambda a, b, c: REFUSED[name](a, b, c), x, y, f)
    assert isinstance(dev, NotImplementedError) and "ComplexHalf" in str(dev)


def test_complex32_views_write_through():
    x, _, f = operands()
    for t in (x, x.to(DEV)):
        r = torch.view_as_real(t)
        r[:, 1] = 0.5  # every imaginary part, through the view
        t[0] = 7 - 1j  # and the first element, seen by the real view
    same(t, x)
    same(torch.view_as_real(t), torch.view_as_real(x))


def test_complex32_host_copies_keep_bits():
    # every 16-bit pattern pair survives a round trip, NaN payloads included
    words = torch.arange(0, 1 << 16, 7, dtype=torch.int32)
    raw = ((words << 16) | (words ^ 0x7E01)).to(torch.int32)
    c = raw.view(torch.complex32)
    assert torch.equal(c.to(DEV).cpu().view(torch.int32), raw)
    assert torch.equal(c.to(DEV).clone().cpu().view(torch.int32), raw)


def test_complex32_under_compile():
    def fn(x, y, f):
        z = x * y + f
        return z, z.abs(), torch.view_as_real(z).sum(-1), z == x

    x, y, f = operands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fn(x, y, f)
    got = torch.compile(fn, backend="tpu")(x.to(DEV), y.to(DEV), f.to(DEV))
    for g, r in zip(got, ref):
        same(g, r)


# -- bcomplex32 (BComplex32: bfloat16 halves) ------------------------------------
# CPU holds it and moves it (copies, cat, indexing, views) and compares it
# (eq/ne, which bf16 == complex scalar computes in); it refuses arithmetic.

def b_operands():
    x = torch.tensor([1.5 + 2j, -3 + 0.5j, complex(NAN, 1), complex(INF, -2), 1e-3 - 7e4j, 0j]).to(torch.bcomplex32)
    y = torch.tensor([1.5 + 2j, 2 + 2j, 1, -0.25j, 3e4 + 1j, complex(-0.0, 0)]).to(torch.bcomplex32)
    f = torch.tensor([1.5, 2.0, -1.0, NAN, 6e4, -0.0], dtype=torch.bfloat16)
    return x, y, f


B_COMPUTED = {
    "clone": lambda x, y, f: x.clone(),
    "eq": lambda x, y, f: x == y,
    "ne": lambda x, y, f: x != y,
    "bf16_eq_complex_scalar": lambda x, y, f: f == (1.5 + 0j),
    "bf16_ne_complex_scalar": lambda x, y, f: f != (2 + 1j),
    "view_as_real": lambda x, y, f: torch.view_as_real(x).clone(),
    "to_c64": lambda x, y, f: x.to(torch.complex64),
    "from_bf16": lambda x, y, f: f.to(torch.bcomplex32),
    "from_c64": lambda x, y, f: (x.to(torch.complex64) * 1.001).to(torch.bcomplex32),
    "cat": lambda x, y, f: torch.cat([x, y]),
    "index": lambda x, y, f: x[idx(x, 4, 0, 2)],
    "copy_from_bf16": lambda x, y, f: torch.empty(6, dtype=torch.bcomplex32, device=x.device).copy_(f),
    "transpose": lambda x, y, f: x.reshape(2, 3).t().contiguous(),
    "view_bf16": lambda x, y, f: x.view(torch.bfloat16).clone(),
    "to_bf16": lambda x, y, f: x.to(torch.bfloat16),
    "real": lambda x, y, f: x.real.clone(),
    "where": lambda x, y, f: torch.where(f > 0, x, y),
    "stack": lambda x, y, f: torch.stack([x, y]),
    "masked_fill": lambda x, y, f: x.masked_fill(f > 0, 2 - 1j),
    "zeros_like": lambda x, y, f: torch.zeros_like(x),
    "isnan": lambda x, y, f: x.isnan(),
}

B_REFUSED = {
    "add": lambda x, y, f: x + y,
    "mul": lambda x, y, f: x * y,
    "abs": lambda x, y, f: x.abs(),
    "fill_": lambda x, y, f: x.clone().fill_(1 + 1j),
    "bf16_times_complex_scalar": lambda x, y, f: f * 1j,
    "bf16_lt_complex_scalar": lambda x, y, f: f < 1j,
    "flip": lambda x, y, f: x.flip(0),
    "index_select": lambda x, y, f: x.index_select(0, idx(x, 1, 1)),
    "full": lambda x, y, f: torch.full((2,), 1j, dtype=torch.bcomplex32, device=x.device),
    "conj": lambda x, y, f: x.conj().resolve_conj(),
    "equal": lambda x, y, f: torch.equal(x, y),
}


@pytest.mark.parametrize("name", sorted(B_COMPUTED))
def test_bcomplex32_op_matches_cpu_bits(name):
    fn = B_COMPUTED[name]
    x, y, f = b_operands()
    ref = fn(x, y, f)
    got = fn(x.to(DEV), y.to(DEV), f.to(DEV))
    assert got.device.type == DEV
    same(got, ref)


@pytest.mark.parametrize("name", sorted(B_REFUSED))
def test_bcomplex32_refusals_match_cpu(name):
    x, y, f = b_operands()
    cpu, dev = assert_same_error(lambda a, b, c: B_REFUSED[name](a, b, c), x, y, f)
    assert isinstance(dev, NotImplementedError) and "BComplex32" in str(dev)


def test_bcomplex32_host_copies_keep_bits():
    words = torch.arange(0, 1 << 16, 7, dtype=torch.int32)
    raw = ((words << 16) | (words ^ 0x7E01)).to(torch.int32)
    c = raw.view(torch.bcomplex32)
    assert torch.equal(c.to(DEV).cpu().view(torch.int32), raw)
    assert torch.equal(c.to(DEV).clone().cpu().view(torch.int32), raw)
