"""Operators against the CPU oracle: forward values and, for floating point
inputs, gradients through autograd."""

import copy

import pytest
import torch
import torch.nn.functional as F

from _helpers import (DEV, assert_same, check, check_scenario, dtype_id, make_tensor,
                      to_device)
from _helpers import each_eager_mode  # noqa: F401  (every test runs in STRICT, DEBUG and DEFER_AND_FUSE)

# Tolerances ---------------------------------------------------------------

F32_MATMUL_TOL = dict(atol=1e-5, rtol=1e-5)       # 'highest' precision, no TF32/bf16
TRANSCENDENTAL_TOL = dict(atol=1e-5, rtol=1e-5)
LOW_PRECISION_TOL = {
    torch.float16: dict(atol=1e-3, rtol=1e-3, grad_atol=1e-2, grad_rtol=1e-2),
    torch.bfloat16: dict(atol=1e-2, rtol=2e-2, grad_atol=5e-2, grad_rtol=5e-2),
}
BF16_MATMUL_TOL = dict(atol=5e-2, rtol=2e-2, grad_atol=1e-1, grad_rtol=5e-2)


def rg(shape, dtype=torch.float32, seed=0, **kw):
    """Input tensor that requires grad."""
    return make_tensor(shape, dtype, seed=seed, requires_grad=True, **kw)


# ==========================================================================
# Elementwise binary arithmetic
# ==========================================================================

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,))]


def _operands(op, shape_a, shape_b, dtype=torch.float32):
    # for div keep both operands away from zero (each one is a denominator once)
    kw = dict(low=0.5, high=2.0) if op == "div" else {}
    return rg(shape_a, dtype, seed=1, **kw), rg(shape_b, dtype, seed=2, **kw)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES,
                         ids=["same", "outer", "trailing", "scalar_tensor"])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(op, shapes):
    a, b = _operands(op, *shapes)
    check(BINARY[op], a, b)
    check(BINARY[op], b, a)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_python_scalar(op):
    x = rg((3, 4), low=0.5, high=2.0) if op == "div" else rg((3, 4))
    f = BINARY[op]
    check(lambda t: f(t, 2.5), x)
    check(lambda t: f(t, -3), x)
    check(lambda t: f(1.5, t) if op != "div" else 1.5 / t, x)
    check(lambda t: f(t, 0.0) if op != "div" else f(t, 4), x)


def test_alpha():
    a, b = rg((3, 4), seed=1), rg((3, 4), seed=2)
    check(lambda x, y: torch.add(x, y, alpha=2.5), a, b)
    check(lambda x, y: torch.sub(x, y, alpha=0.5), a, b)
    check(lambda x, y: torch.add(x, y[0], alpha=-1), a, b)
    ia, ib = make_tensor((5,), torch.int64, seed=1), make_tensor((5,), torch.int64, seed=2)
    check(lambda x, y: torch.add(x, y, alpha=3), ia, ib)
    check(lambda x, y: torch.sub(x, y, alpha=2), ia, ib)
    check(lambda x, y: x.add_(y, alpha=4), ia, ib)


def _t(dtype, shape=(3, 4), seed=0, **kw):
    return make_tensor(shape, dtype, seed=seed, **kw)


PROMOTION_CASES = {
    "int64+float32": (torch.add, lambda: (_t(torch.int64), _t(torch.float32, seed=1))),
    "int32*2.5": (torch.mul, lambda: (_t(torch.int32), 2.5)),
    "int64+2": (torch.add, lambda: (_t(torch.int64), 2)),
    "int64/int64": (torch.div, lambda: (_t(torch.int64), _t(torch.int64, seed=1, low=1))),
    "int64//int64_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"),
                           lambda: (_t(torch.int64), _t(torch.int64, seed=1, low=1))),
    "uint8+int8": (torch.add, lambda: (_t(torch.uint8), _t(torch.int8, seed=1))),
    "bool+bool": (torch.add, lambda: (_t(torch.bool), _t(torch.bool, seed=1))),
    "float32*bool": (torch.mul, lambda: (_t(torch.float32), _t(torch.bool, seed=1))),
    "float16+float32": (torch.add, lambda: (_t(torch.float16), _t(torch.float32, seed=1))),
    "int32+float16": (torch.add, lambda: (_t(torch.int32), _t(torch.float16, seed=1))),
    "bfloat16+float16": (torch.add, lambda: (_t(torch.bfloat16), _t(torch.float16, seed=1))),
    "int32-int64": (torch.sub, lambda: (_t(torch.int32), _t(torch.int64, seed=1))),
    "float64_0d+float32": (torch.add, lambda: (_t(torch.float64, ()), _t(torch.float32))),
    "int64_0d*float16": (torch.mul, lambda: (_t(torch.int64, ()), _t(torch.float16))),
    "float32_0d*int64": (torch.mul, lambda: (_t(torch.float32, ()), _t(torch.int64))),
    "int8*float_scalar": (torch.mul, lambda: (_t(torch.int8), -0.75)),
}


@pytest.mark.parametrize("case", list(PROMOTION_CASES))
def test_type_promotion(case):
    op, make_args = PROMOTION_CASES[case]
    check(op, *make_args())  # assert_same compares the result dtype too


def test_inplace_type_promotion():
    f = make_tensor((3, 4))
    i = make_tensor((3, 4), torch.int64)
    check(lambda x, y: x.add_(y), f, i)            # float += int
    check(lambda x, y: x.mul_(y), f, i.to(torch.bool))
    check(lambda x: x.mul_(2), i)
    check(lambda x, y: x.sub_(y), make_tensor((3, 4), torch.float16), f)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_low_precision(op, dtype):
    a, b = _operands(op, (3, 4), (4,), dtype)
    check(BINARY[op], a, b, **LOW_PRECISION_TOL[dtype])
    check(lambda t: BINARY[op](t, 1.5), a, **LOW_PRECISION_TOL[dtype])


# ==========================================================================
# Elementwise unary
# ==========================================================================

POS = dict(low=0.2, high=3.0)

UNARY = {
    # name: (fn, input kwargs)
    "neg": (torch.neg, {}),
    "abs": (torch.abs, {}),
    "exp": (torch.exp, {}),
    "log": (torch.log, POS),
    "sqrt": (torch.sqrt, POS),
    "rsqrt": (torch.rsqrt, POS),
    "tanh": (torch.tanh, {}),
    "sigmoid": (torch.sigmoid, {}),
    "relu": (torch.relu, {}),
    "gelu": (F.gelu, {}),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), {}),
    "silu": (F.silu, {}),
    "pow_2": (lambda t: t ** 2, {}),
    "pow_3": (lambda t: torch.pow(t, 3), {}),
    "pow_half": (lambda t: t ** 0.5, POS),
    "pow_neg": (lambda t: torch.pow(t, -1.5), POS),
    "pow_0": (lambda t: t ** 0, {}),
    "scalar_pow_tensor": (lambda t: 2 ** t, {}),
    "scalar_pow_tensor_float": (lambda t: torch.pow(1.5, t), {}),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    fn, kw = UNARY[name]
    x = rg((3, 5), **kw)
    check(fn, x, **TRANSCENDENTAL_TOL)


def test_unary_wide_range():
    # larger magnitudes: saturation of tanh/sigmoid, exp near overflow, relu zeros
    x = make_tensor((64,), low=-30.0, high=30.0, requires_grad=True)
    for fn in (torch.tanh, torch.sigmoid, torch.relu, F.silu, F.gelu, torch.exp,
               lambda t: F.gelu(t, approximate="tanh")):
        check(fn, x, **TRANSCENDENTAL_TOL)


def test_pow_tensor_tensor():
    base = rg((3, 4), seed=1, **POS)
    exponent = rg((3, 4), seed=2)
    check(torch.pow, base, exponent, **TRANSCENDENTAL_TOL)
    check(torch.pow, base, rg((4,), seed=3), **TRANSCENDENTAL_TOL)  # broadcast
    ib, ie = make_tensor((6,), torch.int64, low=-3, high=4), make_tensor((6,), torch.int64,
                                                                         low=0, high=4, seed=1)
    check(torch.pow, ib, ie)


@pytest.mark.parametrize("fn", [torch.neg, torch.abs, torch.relu, lambda t: t ** 2],
                         ids=["neg", "abs", "relu", "square"])
def test_unary_int(fn):
    check(fn, make_tensor((3, 5), torch.int64))
    check(fn, make_tensor((7,), torch.int32))


@pytest.mark.parametrize("fn", [torch.exp, torch.tanh, torch.sigmoid, F.gelu, F.silu,
                                torch.rsqrt], ids=["exp", "tanh", "sigmoid", "gelu",
                                                   "silu", "rsqrt"])
def test_unary_bfloat16(fn):
    x = make_tensor((3, 5), torch.bfloat16, low=0.2, high=3.0, requires_grad=True)
    check(fn, x, **LOW_PRECISION_TOL[torch.bfloat16])


def test_unary_non_contiguous_input():
    x = rg((4, 6))
    check(lambda t: torch.exp(t.t()), x, **TRANSCENDENTAL_TOL)
    check(lambda t: torch.tanh(t[:, ::2]), x, **TRANSCENDENTAL_TOL)


# ==========================================================================
# Comparisons and where
# ==========================================================================

COMPARISONS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
               "gt": torch.gt, "ge": torch.ge}


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparison(op):
    f = COMPARISONS[op]
    # small integer valued floats so that ties occur
    a = make_tensor((3, 4), torch.int64, low=-2, high=3, seed=1).float()
    b = make_tensor((3, 4), torch.int64, low=-2, high=3, seed=2).float()
    check(f, a, b)
    check(lambda x: f(x, 1.0), a)
    check(lambda x, y: f(x[:, :1], y[0]), a, b)                      # broadcast
    ia = make_tensor((3, 4), torch.int64, low=-2, high=3, seed=3)
    check(f, ia, ia.flip(0))
    check(lambda x: f(x, 0.5), ia)                                   # int vs float scalar
    check(lambda x, y: f(x, y), ia, b)                               # int vs float tensor
    check(lambda x, y: getattr(x, op)(y), a, b)                      # method form


def test_comparison_with_nan():
    a = torch.tensor([1.0, float("nan"), 2.0, float("inf")])
    b = torch.tensor([1.0, float("nan"), 3.0, float("inf")])
    for f in COMPARISONS.values():
        check(f, a, b)


def test_where():
    cond = make_tensor((3, 4), torch.bool, seed=7)
    a, b = rg((3, 4), seed=1), rg((3, 4), seed=2)
    check(torch.where, cond, a, b)
    check(lambda c, x: torch.where(c, x, 0.0), cond, a)
    check(lambda c, y: torch.where(c, 2.5, y), cond, b)
    check(lambda c, x, y: torch.where(c[:, :1], x, y[0]), cond, a, b)   # broadcast
    check(lambda x, y: torch.where(x > y, x, y), a, b)
    ia, ib = make_tensor((3, 4), torch.int64, seed=1), make_tensor((3, 4), torch.int64, seed=2)
    check(torch.where, cond, ia, ib)
    check(lambda c, x, y: torch.where(c, x, y), cond, ia, b.detach())  # promotion


# ==========================================================================
# Factories and fills on the device
# ==========================================================================

FILL_DTYPES = [torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.int8,
               torch.float16]


@pytest.mark.parametrize("dtype", FILL_DTYPES, ids=dtype_id)
def test_fill_zero_ones_full(dtype):
    value = True if dtype == torch.bool else 3

    def scenario(device):
        t = torch.empty(3, 4, dtype=dtype, device=device)
        out = [t.fill_(value).clone()]
        out.append(t.zero_().clone())
        t[1:, ::2].fill_(value)
        out.append(t.clone())
        out.append(t.fill_(torch.tensor(value, dtype=dtype, device=device)).clone())
        out += [torch.ones(2, 3, dtype=dtype, device=device),
                torch.zeros(4, dtype=dtype, device=device),
                torch.full((2, 2), value, dtype=dtype, device=device),
                torch.ones_like(t), torch.zeros_like(t[:, 1]),
                torch.full_like(t, value), t._version]
        return out
    check_scenario(scenario)


def test_fill_float_values():
    def scenario(device):
        t = torch.empty(5, device=device)
        return [t.fill_(-2.75).clone(), t.fill_(float("inf")).clone(),
                t.fill_(float("nan")).clone(),
                torch.full((3,), 0.1, device=device),
                torch.full((3,), 1e-3, dtype=torch.float64, device=device)]
    check_scenario(scenario, rtol=0, atol=0)


def test_full_infers_dtype():
    def scenario(device):
        return [torch.full((2, 3), 7, device=device), torch.full((2,), 1.5, device=device),
                torch.full((2,), True, device=device), torch.ones(0, device=device)]
    check_scenario(scenario)


ARANGE_CASES = {
    "int_stop": dict(args=(10,)),
    "int_start_stop": dict(args=(-5, 5)),
    "int_step": dict(args=(2, 20, 3)),
    "int_negative_step": dict(args=(10, 0, -2)),
    "float_step": dict(args=(0, 1, 0.1)),
    "float_start_step": dict(args=(1.0, 2.5, 0.25)),
    "float_dtype": dict(args=(5,), kwargs=dict(dtype=torch.float32)),
    "float64": dict(args=(0, 3, 0.5), kwargs=dict(dtype=torch.float64)),
    "int32": dict(args=(3, 12, 2), kwargs=dict(dtype=torch.int32)),
    "empty": dict(args=(0,)),
}


@pytest.mark.parametrize("case", list(ARANGE_CASES))
def test_arange(case):
    args, kwargs = ARANGE_CASES[case]["args"], ARANGE_CASES[case].get("kwargs", {})
    check_scenario(lambda device: torch.arange(*args, device=device, **kwargs))


LINSPACE_CASES = {
    "unit": (0, 1, 7),
    "signed": (-3, 5, 10),
    "decreasing": (1, 0, 5),
    "single": (2, 2, 1),
    "empty": (0, 1, 0),
    "many": (-1.5, 2.5, 101),
}


@pytest.mark.parametrize("case", list(LINSPACE_CASES))
def test_linspace(case):
    start, end, steps = LINSPACE_CASES[case]
    check_scenario(lambda device: torch.linspace(start, end, steps, device=device))


def test_linspace_dtypes():
    check_scenario(lambda device: torch.linspace(0, 10, 6, dtype=torch.int64, device=device))
    check_scenario(lambda device: torch.linspace(-1, 1, 9, dtype=torch.float64, device=device))
    check_scenario(lambda device: torch.linspace(0, 1, 5, dtype=torch.bfloat16, device=device))


# ==========================================================================
# Reductions
# ==========================================================================

REDUCTIONS = {
    "sum": lambda t: t.sum(),
    "sum_dim": lambda t: t.sum(1),
    "sum_dims_keepdim": lambda t: t.sum((0, 2), keepdim=True),
    "sum_neg_dim": lambda t: torch.sum(t, -1),
    "mean": lambda t: t.mean(),
    "mean_dim": lambda t: t.mean(0),
    "mean_dims_keepdim": lambda t: t.mean((1, 2), keepdim=True),
    "amax": lambda t: t.amax(),
    "amax_dim": lambda t: t.amax(1),
    "amax_dims_keepdim": lambda t: torch.amax(t, (0, 2), keepdim=True),
    "amin": lambda t: t.amin(),
    "amin_dim_keepdim": lambda t: t.amin(-1, keepdim=True),
    "max": lambda t: t.max(),
    "max_dim": lambda t: t.max(1),
    "max_dim_keepdim": lambda t: torch.max(t, 2, keepdim=True),
    "max_dim_values_indices": lambda t: tuple(t.max(dim=0)),
    "argmax": lambda t: t.argmax(),
    "argmax_dim": lambda t: t.argmax(2),
    "argmax_dim_keepdim": lambda t: torch.argmax(t, dim=1, keepdim=True),
    "sum_non_contiguous": lambda t: t.transpose(0, 2)[::2].sum(1),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_float(name):
    x = rg((3, 4, 5))
    fn = REDUCTIONS[name]
    grad = not name.startswith("argmax")
    check(fn, x, grad=grad)


def test_max_dim_returns_values_and_indices():
    x = make_tensor((3, 4, 5))
    cpu_out, dev_out = check(lambda t: t.max(dim=1), x)
    assert type(dev_out) is type(cpu_out)
    values, indices = dev_out
    assert_same(values, cpu_out.values)
    assert_same(indices, cpu_out.indices)
    assert indices.dtype == torch.int64


@pytest.mark.parametrize("name", ["max_dim", "max_dim_keepdim", "argmax", "argmax_dim",
                                  "argmax_dim_keepdim", "amax_dim", "amin", "sum_dim"])
def test_reduction_int_with_ties(name):
    # int64 values in a tiny range: many ties, indices must be the first maximum
    x = make_tensor((3, 4, 5), torch.int64, low=0, high=3)
    check(REDUCTIONS[name], x)


def test_reduction_result_dtypes():
    b = make_tensor((4, 5), torch.bool)
    i32 = make_tensor((4, 5), torch.int32)
    u8 = make_tensor((4, 5), torch.uint8)
    f = make_tensor((4, 5))
    check(torch.sum, b)                                   # bool -> int64
    check(lambda t: t.sum(0), b)
    check(torch.sum, i32)                                 # int32 -> int64
    check(lambda t: t.sum(1, keepdim=True), u8)           # uint8 -> int64
    check(lambda t: t.sum(dtype=torch.float64), f)
    check(lambda t: t.sum(0, dtype=torch.float32), i32)
    check(lambda t: t.mean(1, dtype=torch.float64), f)
    check(lambda t: (t > 0).sum(1), f)


def test_reduction_empty_and_low_precision():
    check(lambda t: t.sum(0), make_tensor((0, 3)))
    check(lambda t: t.sum(), make_tensor((0,), torch.int64))
    x = make_tensor((4, 8), torch.bfloat16, requires_grad=True)
    check(lambda t: t.sum(1), x, **LOW_PRECISION_TOL[torch.bfloat16])
    check(lambda t: t.mean(), x, **LOW_PRECISION_TOL[torch.bfloat16])


# ==========================================================================
# Matrix multiplication
# ==========================================================================

MATMUL_CASES = {
    "mm": (torch.mm, [(4, 8), (8, 5)]),
    "addmm": (torch.addmm, [(5,), (4, 8), (8, 5)]),
    "addmm_beta_alpha": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
                         [(4, 5), (4, 8), (8, 5)]),
    "bmm": (torch.bmm, [(3, 4, 6), (3, 6, 2)]),
    "matmul_1d_1d": (torch.matmul, [(6,), (6,)]),
    "matmul_2d_1d": (torch.matmul, [(4, 6), (6,)]),
    "matmul_1d_2d": (torch.matmul, [(6,), (6, 3)]),
    "matmul_2d_2d": (torch.matmul, [(4, 6), (6, 3)]),
    "matmul_batched_broadcast": (torch.matmul, [(2, 1, 4, 6), (3, 6, 5)]),
    "matmul_batched_2d": (torch.matmul, [(5, 4, 6), (6, 2)]),
    "matmul_1d_batched": (torch.matmul, [(6,), (2, 6, 3)]),
    "matmul_transposed_operands": (lambda a, b: a.t() @ b.t(), [(6, 4), (3, 6)]),
    "linear": (F.linear, [(4, 6), (3, 6), (3,)]),
    "linear_no_bias": (F.linear, [(4, 6), (3, 6)]),
    "linear_3d_input": (F.linear, [(2, 4, 6), (3, 6), (3,)]),
}


@pytest.mark.parametrize("name", list(MATMUL_CASES))
def test_matmul_float32(name):
    fn, shapes = MATMUL_CASES[name]
    args = [rg(s, seed=i) for i, s in enumerate(shapes)]
    check(fn, *args, **F32_MATMUL_TOL)


@pytest.mark.parametrize("name", ["mm", "addmm_beta_alpha", "bmm", "matmul_batched_broadcast",
                                  "linear"])
def test_matmul_bfloat16(name):
    fn, shapes = MATMUL_CASES[name]
    args = [rg(s, torch.bfloat16, seed=i) for i, s in enumerate(shapes)]
    check(fn, *args, **BF16_MATMUL_TOL)


def test_matmul_float32_precision_is_highest():
    # values whose products need the full float32 mantissa: a bf16/tf32 pass
    # would be off by ~1e-3 relative
    a = (1 + torch.arange(64, dtype=torch.float32) * 2 ** -20).reshape(8, 8)
    b = (1 - torch.arange(64, dtype=torch.float32).flip(0) * 2 ** -21).reshape(8, 8)
    check(torch.mm, a, b, atol=0, rtol=2e-6)
    check(lambda x, y: F.linear(x, y), a, b, atol=0, rtol=2e-6)


def test_addmm_beta_zero_ignores_nan_input():
    c = torch.full((4, 5), float("nan"))
    a, b = make_tensor((4, 8), seed=1), make_tensor((8, 5), seed=2)
    check(lambda x, y, z: torch.addmm(x, y, z, beta=0), c, a, b, **F32_MATMUL_TOL)


# ==========================================================================
# Shape ops
# ==========================================================================

SHAPE_CASES = {
    "t": lambda x, y: x[0].t(),
    "transpose": lambda x, y: x.transpose(0, 2),
    "permute": lambda x, y: x.permute(2, 0, 1),
    "permute_then_op": lambda x, y: x.permute(1, 2, 0) * 2,
    "expand": lambda x, y: x[:, :1].expand(2, 4, 5),
    "expand_new_dims": lambda x, y: y[0].expand(3, 2, 5),
    "expand_then_op": lambda x, y: x[:, :, :1].expand(2, 3, 7) + 1,
    "cat_dim0": lambda x, y: torch.cat([x[0], y, x[1, :2]], dim=0),
    "cat_dim1": lambda x, y: torch.cat([x, x[:, :1] * 2], dim=1),
    "cat_last": lambda x, y: torch.cat([x, x[..., :2]], dim=-1),
    "cat_non_contiguous": lambda x, y: torch.cat([x[0].t(), y.t()], dim=1),
    "stack_dim0": lambda x, y: torch.stack([x[0], x[1], x[0] * 3]),
    "stack_dim1": lambda x, y: torch.stack([x[0], x[1]], dim=1),
    "stack_last": lambda x, y: torch.stack([y, y * 2, y * 3], dim=-1),
}


@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_shape_ops(name):
    x = rg((2, 3, 5), seed=1)
    y = rg((4, 5), seed=2)
    check(SHAPE_CASES[name], x, y)  # an unused input gets no gradient on either device


def test_cat_mixed_dtypes_and_int():
    a = make_tensor((2, 3), torch.int64)
    b = make_tensor((1, 3), torch.float32)
    check(lambda x, y: torch.cat([x, y]), a, b)
    check(lambda x: torch.cat([x, x * 2], dim=1), a)
    check(lambda x: torch.stack([x, x]), make_tensor((3,), torch.bool))


# ==========================================================================
# softmax / log_softmax
# ==========================================================================


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax(fn, dim):
    x = rg((2, 3, 4))
    check(lambda t: fn(t, dim=dim), x, **TRANSCENDENTAL_TOL)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_large_logits_is_stable(fn):
    x = make_tensor((3, 6), low=-200.0, high=200.0, requires_grad=True)
    check(lambda t: fn(t, dim=1), x, atol=1e-5, rtol=1e-4)
    check(lambda t: fn(t.t(), dim=0), x, atol=1e-5, rtol=1e-4)


def test_softmax_bfloat16():
    x = rg((3, 7), torch.bfloat16)
    check(lambda t: F.softmax(t, dim=-1), x, **LOW_PRECISION_TOL[torch.bfloat16])
    check(lambda t: F.log_softmax(t, dim=0), x, **LOW_PRECISION_TOL[torch.bfloat16])


# ==========================================================================
# Losses
# ==========================================================================

N_CLASSES = 4


def _loss_inputs(with_weight, ignore=False):
    logits = rg((6, N_CLASSES), seed=1)
    target = make_tensor((6,), torch.int64, low=0, high=N_CLASSES, seed=2)
    if ignore:
        target[2] = -100
    weight = make_tensor((N_CLASSES,), low=0.5, high=2.0, seed=3) if with_weight else None
    return logits, target, weight


@pytest.mark.parametrize("with_weight", [False, True], ids=["no_weight", "weight"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_classification_loss(loss, reduction, with_weight):
    logits, target, weight = _loss_inputs(with_weight)
    if loss == "nll_loss":
        def fn(x, t, w):
            return F.nll_loss(F.log_softmax(x, dim=1), t, weight=w, reduction=reduction)
    else:
        def fn(x, t, w):
            return F.cross_entropy(x, t, weight=w, reduction=reduction)
    check(fn, logits, target, weight, **TRANSCENDENTAL_TOL)


def test_nll_loss_on_raw_input_and_ignore_index():
    logits, target, weight = _loss_inputs(True, ignore=True)
    check(lambda x, t: F.nll_loss(x, t), logits, target)
    check(lambda x, t, w: F.nll_loss(x, t, weight=w, reduction="sum"), logits, target, weight)
    check(lambda x, t: F.cross_entropy(x, t), logits, target, **TRANSCENDENTAL_TOL)


# ==========================================================================
# threshold / activation backward / clamp
# ==========================================================================


def test_threshold():
    x = rg((4, 5))
    check(lambda t: F.threshold(t, 0.5, -1.0), x)
    check(lambda t: F.threshold(t, 0.0, 0.0), x)
    check(lambda t: F.threshold(t, -0.25, 2.0), x)


@pytest.mark.parametrize("fn", [F.relu, F.gelu, lambda t: F.gelu(t, approximate="tanh"),
                                F.silu], ids=["relu", "gelu", "gelu_tanh", "silu"])
def test_activation_backward(fn):
    x = rg((5, 6))
    check(fn, x, **TRANSCENDENTAL_TOL)
    # the backward of an activation inside a tiny network
    w = rg((6, 3), seed=4)
    check(lambda t, m: fn(t @ m).sum(dim=0), x, w, **TRANSCENDENTAL_TOL)


CLAMP_CASES = {
    "min": lambda t: torch.clamp(t, min=-0.5),
    "max": lambda t: torch.clamp(t, max=0.3),
    "min_max": lambda t: t.clamp(-0.5, 0.5),
    "clamp_inplace": lambda t: (t * 1).clamp_(-0.2, 0.7),
}


@pytest.mark.parametrize("name", list(CLAMP_CASES))
def test_clamp(name):
    check(CLAMP_CASES[name], rg((4, 5)))


def test_clamp_tensor_bounds():
    x = rg((4, 5))
    lo = rg((5,), seed=1, low=-1.0, high=-0.1)
    hi = rg((4, 1), seed=2, low=0.1, high=1.0)
    check(torch.clamp, x, lo, hi)
    check(lambda t, m: torch.clamp(t, min=m), x, lo)


def test_clamp_int():
    x = make_tensor((4, 5), torch.int64)
    check(lambda t: t.clamp(-3, 4), x)
    check(lambda t: t.clamp(min=0), x)
    check(lambda t: t.clamp_(max=2), x)


# ==========================================================================
# End to end: a tiny MLP trained for a few steps
# ==========================================================================


def _init_mlp():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(make_tensor(p.shape, seed=10 + i) * 0.3)
    return model


def _train(model, device, make_opt, data):
    model = copy.deepcopy(model).to(device)
    opt = make_opt(model.parameters())
    losses = []
    for x, y in data:
        x, y = to_device((x, y), device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, {k: v.detach() for k, v in model.state_dict().items()}


OPTIMIZERS = {
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2),
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
}


@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_mlp_training(opt):
    model = _init_mlp()
    data = [(make_tensor((10, 8), seed=20 + s),
             make_tensor((10,), torch.int64, low=0, high=4, seed=40 + s)) for s in range(5)]
    cpu_losses, cpu_state = _train(model, "cpu", OPTIMIZERS[opt], data)
    dev_losses, dev_state = _train(model, DEV, OPTIMIZERS[opt], data)
    assert_same(dev_losses, cpu_losses, rtol=1e-4, atol=1e-6)
    assert_same(dev_state, cpu_state, rtol=1e-4, atol=1e-5)
    # the weights did move
    init = model.state_dict()
    assert any(not torch.equal(cpu_state[k], init[k]) for k in init)
