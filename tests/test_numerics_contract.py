"""Silent wrong values (issue #13, section 1), in every mode.

CPU PyTorch is the oracle for values, dtype, NaN and the error type: complex
magnitudes and predicates, NaN through min/max/clamp, erf's saturation,
floor division and remainder rounding, the default dtype in promotion, and
out= (computed in the result dtype, then cast; bad out= raise like CPU).
"""
import math

import pytest
import torch
import torch.nn.functional as F

from _helpers import DEV, assert_same, assert_same_error, check, check_scenario, make_tensor
from _helpers import each_eager_mode  # noqa: F401  (every test runs in STRICT, DEBUG and DEFER_AND_FUSE)

NAN, INF = float("nan"), float("inf")


def cplx(shape, dtype=torch.complex64, seed=0):
    re = make_tensor(shape, seed=seed, dtype=torch.float64)
    im = make_tensor(shape, seed=seed + 50, dtype=torch.float64)
    return torch.complex(re, im).to(dtype)


# ==========================================================================
# 1. complex magnitudes, var/std, conj views
# ==========================================================================

@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_abs(dtype):
    check(torch.abs, torch.tensor([3 + 4j, -5 - 12j, 0j], dtype=dtype))
    check(torch.abs, cplx((3, 4), dtype))


@pytest.mark.parametrize("fn", [torch.var, torch.std, lambda t: torch.var(t, 1), lambda t: torch.std(t, 0, correction=0),
                                lambda t: torch.var_mean(t, 1), lambda t: torch.std_mean(t)],
                         ids=["var", "std", "var_dim", "std_dim_corr0", "var_mean", "std_mean"])
def test_complex_var_std(fn):
    check(fn, cplx((3, 5)), atol=1e-5, rtol=1e-5)


def test_complex_matmul_with_conj_transpose():
    m = cplx((3, 4))
    check(lambda t: t @ t.mH, m, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.mm(t.conj(), t.mT), m, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.bmm(t.unsqueeze(0), t.mH.unsqueeze(0)), m, atol=1e-5, rtol=1e-5)


def test_view_as_real_of_conj_view():
    m = cplx((2, 3))
    assert_same_error(lambda t: torch.view_as_real(t.conj()), m)
    check(lambda t: torch.view_as_real(t.conj().resolve_conj()), m)
    check(lambda t: torch.view_as_real(t.conj_physical()), m)


# ==========================================================================
# 2. complex isnan / isinf / isfinite
# ==========================================================================

@pytest.mark.parametrize("fn", [torch.isnan, torch.isinf, torch.isfinite], ids=["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_predicates(fn, dtype):
    z = torch.tensor([complex(1, NAN), complex(NAN, 1), complex(1, INF), complex(-INF, 0), complex(1, 2),
                      complex(NAN, INF)], dtype=dtype)
    check(fn, z)


# ==========================================================================
# 3. NaN through min/max, clamp and friends
# ==========================================================================

def nan_input(dtype=torch.float32):
    x = make_tensor((3, 5), dtype=torch.float32, seed=3)
    x[0, 2] = NAN
    x[2, 0] = NAN
    x[2, 4] = NAN
    return x.to(dtype)


REDUCTIONS = {
    "amax": torch.amax, "amin": torch.amin,
    "amax_dim": lambda t: torch.amax(t, 1), "amin_dim0": lambda t: torch.amin(t, 0, keepdim=True),
    "max": torch.max, "min": torch.min,
    "max_dim": lambda t: tuple(torch.max(t, 1)), "min_dim": lambda t: tuple(torch.min(t, 0)),
    "max_dim_keepdim": lambda t: tuple(torch.max(t, 1, keepdim=True)),
    "aminmax": lambda t: tuple(torch.aminmax(t)), "aminmax_dim": lambda t: tuple(torch.aminmax(t, dim=1)),
    "argmax": lambda t: torch.argmax(t, 1), "argmin": torch.argmin,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_nan_in_min_max_reductions(name, dtype):
    check(REDUCTIONS[name], nan_input(dtype))
    check(REDUCTIONS[name], make_tensor((3, 5), dtype=dtype, seed=4))  # and still right without NaN


def test_nan_in_full_row_and_all_nan():
    x = torch.full((2, 3), NAN)
    x[1] = torch.tensor([1.0, NAN, -2.0])
    for fn in REDUCTIONS.values():
        check(fn, x)


ELEMENTWISE = {
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "max_binary": lambda a, b: torch.max(a, b),
    "min_binary": lambda a, b: torch.min(a, b),
    "clamp_tensor": lambda a, b: torch.clamp(a, min=b),
    "clamp_tensor_max": lambda a, b: torch.clamp(a, max=b),
    "clamp_both": lambda a, b: torch.clamp(a, min=b, max=b + 1),
    "clamp_min_tensor": lambda a, b: torch.clamp_min(a, b),
    "clamp_max_tensor": lambda a, b: torch.clamp_max(a, b),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_nan_in_binary_min_max(name, dtype):
    a = nan_input(dtype)
    b = make_tensor((3, 5), dtype=dtype, seed=5)
    b[1, 1] = NAN
    b[0, 2] = NAN
    check(ELEMENTWISE[name], a, b)
    check(ELEMENTWISE[name], b, a)


@pytest.mark.parametrize("fn", [
    lambda t: torch.clamp(t, -0.5, 0.5),
    lambda t: torch.clamp(t, min=0.1),
    lambda t: torch.clamp(t, max=0.1),
    lambda t: torch.clamp(t, min=NAN),
    lambda t: torch.clamp(t, max=NAN),
    lambda t: torch.clamp(t, min=NAN, max=1.0),
    lambda t: torch.clamp_min(t, NAN),
    lambda t: F.hardtanh(t),
    lambda t: F.hardtanh(t, -0.3, 0.2),
    lambda t: F.relu6(t),
    lambda t: F.relu(t),
    lambda t: t.clone().clamp_(-0.5, 0.5),
], ids=["clamp", "clamp_min", "clamp_max", "clamp_min_nan", "clamp_max_nan", "clamp_min_nan_max", "clamp_min_fn_nan",
        "hardtanh", "hardtanh_range", "relu6", "relu", "clamp_"])
def test_nan_in_clamp_like(fn):
    check(fn, nan_input())


@pytest.mark.parametrize("fn", [
    lambda x, m: x * m.float(),
    lambda x, m: m.to(x.dtype) * x,
    lambda x, m: x.float().reshape(-1, 1) @ m.float().reshape(1, -1),
], ids=["mul_mask", "mask_mul_f16", "outer_product"])
def test_inf_times_bool_cast_is_nan(fn):
    # IEEE: inf * 0 and NaN * 0 are NaN. Once fused (DeferAndFuse), XLA's
    # simplifier turns multiply(x, convert(bool)) into select(bool, x, 0),
    # which gives 0 (fuzzer seed 1037); bool -> float is emitted as a select.
    x = torch.tensor([INF, -INF, NAN, 2.0, INF], dtype=torch.float16)
    m = torch.tensor([False, False, False, True, True])
    check(fn, x, m)


# ==========================================================================
# 4. erf saturates to exactly 1 like CPU
# ==========================================================================

def test_erf_saturates_to_one():
    check(torch.erf, torch.tensor([4.0, -4.0, 3.9, 5.0, 10.0, INF, -INF]))
    check(lambda t: torch.erf(t).long(), torch.tensor([4.0, -4.0, 6.0]))
    x = torch.linspace(-6, 6, 2001)
    check(torch.erf, x, atol=2e-7, rtol=0)
    assert torch.erf(torch.tensor(4.0).to(DEV)).item() == 1.0


# ==========================================================================
# 5. floor division and remainder rounding
# ==========================================================================

def test_floor_divide_infinities():
    check(lambda t: t // 2, torch.tensor([INF, -INF, NAN, 7.0, -7.0]))
    check(lambda t: torch.floor_divide(t, torch.tensor([2.0, -2.0, INF, INF, 0.0]).to(t.device)),
          torch.tensor([INF, -INF, 3.0, -3.0, 1.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=["f32", "f64", "f16", "bf16"])
def test_floor_divide_random_values(dtype):
    a = (make_tensor((400,), seed=6, dtype=torch.float64) * 100).to(dtype)
    b = (make_tensor((400,), seed=7, dtype=torch.float64) * 3).to(dtype)
    b[:10] = torch.tensor([0.1, -0.1, 0.3, -0.3, 0.7, 1e-3, -1e-3, 0.0, -0.0, 2.0]).to(dtype)
    check(torch.floor_divide, a, b)
    check(lambda x, y: torch.div(x, y, rounding_mode="floor"), a, b)
    check(torch.remainder, a, b)
    check(lambda x: x // 0.3, a)


def test_remainder_mixed_int_and_reduced_float():
    a = torch.arange(-600, 600, 7, dtype=torch.int16)
    b = torch.linspace(-9.5, 9.5, a.numel()).to(torch.bfloat16)
    check(torch.remainder, a, b)
    check(torch.remainder, a, b.to(torch.float16))
    check(torch.floor_divide, a, b)
    check(torch.add, a, b)
    check(torch.mul, a, b)


SCALAR_OPS = {
    "add": lambda t: t + 1.1, "sub": lambda t: t - 1.1, "rsub": lambda t: 1.1 - t,
    "add_alpha": lambda t: torch.add(t, 1.1, alpha=2), "add_": lambda t: t.clone().add_(1.1),
    "add_0d_tensor": lambda t: t + torch.tensor(1.1), "pow": lambda t: t.abs() ** 1.1,
    "rpow": lambda t: 1.1 ** (t / 4), "remainder": lambda t: t % 1.1, "fmod": lambda t: torch.fmod(t, 1.1),
    "atan2": lambda t: torch.atan2(t, torch.tensor(1.1)), "eq": lambda t: t == 1.1015625,
    # mul and div read the scalar at full precision on CPU
    "mul": lambda t: t * 1.1, "div": lambda t: t / 1.1, "floor_divide": lambda t: t // 1.1,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_reduced_float_scalar_operand_rounding(op, dtype):
    # CPU rounds a Python scalar to the tensor's bf16/f16 before the op (bf16 +
    # 1.1 adds 1.1015625), except in mul and div: bit-exact, not within tolerance.
    x = (make_tensor((4000,), seed=3, dtype=torch.float32) * 3).to(dtype)
    check(SCALAR_OPS[op], x, atol=0, rtol=0)


@pytest.mark.parametrize("dst", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64],
                         ids=["u8", "i8", "i16", "i32", "i64"])
@pytest.mark.parametrize("src", [torch.float32, torch.float16, torch.bfloat16, torch.float64],
                         ids=["f32", "f16", "bf16", "f64"])
def test_float_to_int_casts_wrap_like_cpu(src, dst):
    # CPU truncates through int64 (uint8, int64) or int32 (int8/16/32); NaN, inf and out-of-range become
    # the minimum, then wrap: -2.0 -> uint8 254, -300.0 -> int8 -44. XLA's convert saturates.
    x = torch.tensor([-2.0, -1.5, -300.0, 300.0, 255.7, 1e10, -1e10, NAN, INF, -INF, 3e9, -3e9, 4294967596.0])
    check(lambda t: t.to(dst), x.to(src), atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_sort_topk_nan_and_signed_zero(dtype):
    # NaN sorts above everything whatever its sign bit, -0.0 equals 0.0 (stable order kept).
    x = torch.tensor([0.0, -0.0, NAN, 1.0, -NAN, -INF, 2.0, 0.0]).to(dtype)
    for descending in (False, True):
        check(lambda t: torch.sort(t, descending=descending, stable=True), x, atol=0, rtol=0)
    # topk's order among equal values is unspecified (CPU picks by nth_element): values only
    check(lambda t: torch.topk(t, 3).values, x, atol=0, rtol=0)
    check(lambda t: torch.topk(t, 3, largest=False).values, x, atol=0, rtol=0)


@pytest.mark.parametrize("case", ["bool_relu", "bool_sub_float", "bool_argmax", "bool_topk", "int_mul_float_inplace",
                                  "uint8_fill_negative", "int_pow_negative", "int_float_alpha", "int_remainder_zero",
                                  "int_floor_divide_zero", "abs_bool", "bitwise_and_float", "bool_pow_bool",
                                  "bool_floor_divide", "bool_pow_negative"])
def test_cpu_kernel_refusals(case):
    # What CPU's kernels refuse (meta functions accept it): the same exception type on the device.
    i32 = torch.arange(-3, 3, dtype=torch.int32)
    b = torch.tensor([True, False, True])
    fns = {
        "bool_relu": (torch.relu, b), "bool_sub_float": (lambda t: t - 2.75, b), "bool_argmax": (torch.argmax, b),
        "bool_topk": (lambda t: t.topk(1), b), "int_mul_float_inplace": (lambda t: t.mul_(1.1), i32),
        "uint8_fill_negative": (lambda t: t.fill_(-2.75), i32.to(torch.uint8)),
        "int_pow_negative": (lambda t: t ** -2, i32), "int_float_alpha": (lambda t: torch.add(t, t, alpha=0.5), i32),
        "int_remainder_zero": (lambda t: (t % torch.zeros_like(t)).cpu(), i32),
        "int_floor_divide_zero": (lambda t: (t // 0).cpu(), i32), "abs_bool": (torch.abs, b),
        "bitwise_and_float": (lambda t: torch.bitwise_and(t, t), i32.float()),
        "bool_pow_bool": (lambda t: t ** t, b), "bool_floor_divide": (lambda t: t // t, b),
        "bool_pow_negative": (lambda t: t ** -3, b),
    }
    fn, arg = fns[case]
    assert_same_error(fn, arg)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_sign_of_nan_and_negative_zero(dtype):
    # CPU computes (0 < x) - (x < 0): sign(NaN) is 0, sign(-0.0) is +0.0
    x = torch.tensor([NAN, -0.0, 0.0, -2.0, 3.0, INF, -INF]).to(dtype)
    check(torch.sign, x, atol=0, rtol=0)
    check(lambda t: torch.sign(t).signbit(), x)


def test_inplace_and_functional_do_not_share_executables():
    # mul_.Tensor and mul.Tensor have the same lowering and overload name; their results differ in dtype
    a, b = torch.ones(3, dtype=torch.float16), torch.ones(3)

    def mixed(x, y):
        x = x.clone()
        x.add_(y)          # in-place: stays f16
        return x, x + y    # functional: promotes to f32
    check(mixed, a, b, atol=0, rtol=0)
    i = torch.ones((), dtype=torch.int64)
    check(lambda t: t * 1.1, i)
    assert_same_error(lambda t: t.mul_(1.1), i)  # after the functional one ran with the same operands


# ==========================================================================
# 6. the default dtype takes part in promotion after the first op
# ==========================================================================

@pytest.mark.parametrize("default", [torch.float64, torch.float32, torch.float16], ids=["f64", "f32", "f16"])
def test_default_dtype_in_promotion(default):
    def scenario(device):
        old = torch.get_default_dtype()
        out = []
        try:
            for d in (torch.float32, default):
                torch.set_default_dtype(d)
                x = torch.tensor([1, 2], dtype=torch.uint8, device=device)
                out += [x + 5.5, x * 0.5, torch.sqrt(x), x / 3]
        finally:
            torch.set_default_dtype(old)
        return out
    check_scenario(scenario)


def test_default_dtype_after_first_op_dtype():
    old = torch.get_default_dtype()
    x = torch.tensor([1], dtype=torch.uint8, device=DEV)
    try:
        assert (x + 5.5).dtype == torch.float32
        torch.set_default_dtype(torch.float64)
        y = x + 5.5
        assert y.dtype == torch.float64
        assert y.cpu().item() == 6.5
    finally:
        torch.set_default_dtype(old)


# ==========================================================================
# 7. out= computes in the result dtype, then casts; bad out= raise like CPU
# ==========================================================================

def test_out_computes_in_result_dtype():
    def scenario(device):
        a = torch.full((3,), 33000.0, dtype=torch.float16, device=device)
        out = torch.zeros(3, dtype=torch.float64, device=device)
        torch.add(a, a, out=out)
        out2 = torch.zeros(3, dtype=torch.float32, device=device)
        torch.mul(a, a, out=out2)
        out3 = torch.zeros(3, dtype=torch.float64, device=device)
        torch.sub(a.to(torch.bfloat16), 1e-3, out=out3)
        return out, out2, out3
    check_scenario(scenario)


def test_out_same_dtype_still_exact():
    def scenario(device):
        a = torch.arange(6.0, device=device).reshape(2, 3)
        out = torch.empty(2, 3, device=device)
        torch.add(a, 1.5, out=out)
        cnt = torch.empty(2, dtype=torch.int64, device=device)
        torch.sum(torch.ones(2, 3, dtype=torch.int64, device=device), 1, out=cnt)
        s = torch.empty(2, dtype=torch.float64, device=device)
        torch.sum(a.to(torch.float16), 1, out=s)
        return out, cnt, s
    check_scenario(scenario)


def test_out_dtype_that_result_cannot_cast_to_raises():
    a = make_tensor((3,))
    err_cpu, err_dev = assert_same_error(lambda t: torch.add(t, t, out=torch.empty(3, dtype=torch.int64, device=t.device)), a)
    assert type(err_dev) is RuntimeError
    assert "can't be cast to the desired output type Long" in str(err_dev)
    assert_same_error(lambda t: torch.mul(t, 2.5, out=torch.empty(3, dtype=torch.bool, device=t.device)), a)
    assert_same_error(lambda t: torch.sqrt(t, out=torch.empty(3, dtype=torch.int32, device=t.device)), a)


@pytest.mark.skipif(DEV == "cpu", reason="needs a second device type")
def test_out_on_another_device_raises():
    a = make_tensor((3,)).to(DEV)
    same_device = "Expected all tensors to be on the same device, but found at least two devices"
    with pytest.raises(RuntimeError, match=same_device):
        torch.add(a, a, out=torch.empty(3))
    with pytest.raises(RuntimeError, match=same_device):
        torch.sqrt(a, out=torch.empty(3))
    with pytest.raises(RuntimeError, match=same_device):
        torch.add(a.cpu(), a.cpu(), out=torch.empty(3, device=DEV))


# ==========================================================================
# gcd / lcm (issue #13, missing ops): CPU's Euclid and its int promotion
# ==========================================================================

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8],
                         ids=["i64", "i32", "i16", "i8", "u8"])
def test_gcd_lcm(dtype):
    hi = 100 if dtype in (torch.int8, torch.uint8) else 10 ** 6
    g = torch.Generator().manual_seed(1)
    a = torch.randint(0 if dtype == torch.uint8 else -hi, hi, (500,), generator=g).to(dtype)
    b = torch.randint(0 if dtype == torch.uint8 else -hi, hi, (500,), generator=g).to(dtype)
    a[:3], b[2:5] = 0, 0
    check(torch.gcd, a, b, atol=0, rtol=0)
    check(torch.lcm, a, b, atol=0, rtol=0)  # 8/16-bit products wrap after abs, as C++'s int promotion does
    check(lambda x, y: x.clone().gcd_(y), a, b, atol=0, rtol=0)


def test_gcd_longest_euclid_chain():
    # consecutive Fibonacci numbers take the most steps (91 for int64)
    a = torch.tensor([4660046610375530309, 7540113804746346429, 1134903170], dtype=torch.int64)
    b = torch.tensor([7540113804746346429, 4660046610375530309, 1836311903], dtype=torch.int64)
    check(torch.gcd, a, b, atol=0, rtol=0)
    assert_same_error(torch.gcd, torch.tensor([1.0]), torch.tensor([2.0]))


# ==========================================================================
# 9. deterministic algorithms fill uninitialised memory (NaN / max) as CPU does
# ==========================================================================

@pytest.fixture
def deterministic_fill():
    was, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(was, warn_only=warn_only)
    torch.utils.deterministic.fill_uninitialized_memory = fill


FILL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.int8,
               torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", FILL_DTYPES, ids=[str(d).replace("torch.", "") for d in FILL_DTYPES])
def test_deterministic_empty_is_filled(deterministic_fill, dtype):
    def scenario(device):
        src = torch.zeros(3, 4, dtype=dtype, device=device).t()
        return (torch.empty(2, 3, dtype=dtype, device=device),
                torch.empty_like(src), torch.empty_like(src).stride(),
                torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=device),
                src.new_empty(5), src.new_empty_strided((2, 2), (1, 2)),
                torch.empty(0, dtype=dtype, device=device))
    expected, _ = check_scenario(scenario)
    if dtype.is_floating_point or dtype.is_complex:
        assert expected[0].isnan().all()  # the oracle really fills


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.uint8, torch.bool], ids=["f32", "i32", "u8", "bool"])
def test_deterministic_resize_growth_is_filled(deterministic_fill, dtype):
    def scenario(device):
        x = torch.ones(2, dtype=dtype, device=device)
        x.resize_(5)                       # the old values stay, the new ones are NaN / max
        y = torch.zeros(0, dtype=dtype, device=device)
        y.resize_(2, 3)
        z = torch.ones(2, 3, dtype=dtype, device=device)
        z.resize_(2, 2)                    # shrinking fills nothing
        z.resize_(3, 3)                    # growth past the old storage only
        w = torch.ones(4, dtype=dtype, device=device)
        o = torch.zeros(1, dtype=dtype, device=device)
        torch.maximum(w, w, out=o)         # out= resized, then written over
        return x, y, z, o
    check_scenario(scenario)


def test_deterministic_fill_can_be_turned_off(deterministic_fill):
    torch.utils.deterministic.fill_uninitialized_memory = False
    x = torch.empty(64, device=DEV)
    x.fill_(1.0)
    assert torch.equal(x.cpu(), torch.ones(64))
    torch.utils.deterministic.fill_uninitialized_memory = True
    assert torch.empty(64, device=DEV).isnan().all().item()


def test_deterministic_fill_keeps_results_of_ops(deterministic_fill):
    # Ops that allocate their results internally must still return computed values.
    a, b = make_tensor((5, 6)), make_tensor((6, 3), seed=1)
    check(lambda x, y: (x @ y, torch.cat([x, x]), x.clone(), F.softmax(x, 1), x.t().contiguous(),
                        torch.zeros_like(x), x.new_zeros(3), x.sum(0)), a, b)


# ==========================================================================
# 10. out= of another dtype: CPU's kernels cast or refuse, op by op
# ==========================================================================

def _idx(device, rows=4):
    return torch.tensor([[0, 2]] * rows, device=device)


# f32 input; the out= tensor's dtype varies. Refused on CPU: TensorIterator ops
# that do not promote ("Found dtype Double but expected Float"), structured
# kernels ("Expected out tensor to have dtype float, but got double instead"),
# and ops with their own check. Allowed: ops that promote, then cast.
OUT_DTYPE_CASES = {
    # refused
    "clamp": lambda x, o: torch.clamp(x, 0.2, 0.8, out=o),
    "clamp_min": lambda x, o: torch.clamp_min(x, 0.2, out=o),
    "neg": lambda x, o: torch.neg(x, out=o),
    "abs": lambda x, o: torch.abs(x, out=o),
    "floor": lambda x, o: torch.floor(x, out=o),
    "round": lambda x, o: torch.round(x, out=o),
    "sign": lambda x, o: torch.sign(x, out=o),
    "gelu": lambda x, o: torch.ops.aten.gelu.out(x, out=o),
    "hardtanh": lambda x, o: torch.ops.aten.hardtanh.out(x, out=o),
    "leaky_relu": lambda x, o: torch.ops.aten.leaky_relu.out(x, out=o),
    "softplus": lambda x, o: torch.ops.aten.softplus.out(x, out=o),
    "mm": lambda x, o: torch.mm(x, x.t(), out=o),
    "addmm": lambda x, o: torch.addmm(x[:, :4], x, x.t(), out=o),
    "bmm": lambda x, o: torch.bmm(x[None], x.t()[None], out=o),
    "softmax": lambda x, o: torch._softmax(x, 1, False, out=o),
    "log_softmax": lambda x, o: torch._log_softmax(x, 1, False, out=o),
    "gather": lambda x, o: torch.gather(x, 1, _idx(x.device), out=o),
    "tril": lambda x, o: torch.tril(x, out=o),
    "index_select": lambda x, o: torch.index_select(x, 0, torch.tensor([0, 2], device=x.device), out=o),
    "where": lambda x, o: torch.where(x > 0.5, x, x * 2, out=o),
    "amax": lambda x, o: torch.amax(x, 1, out=o),
    "nan_to_num": lambda x, o: torch.nan_to_num(x, out=o),
    "masked_fill": lambda x, o: torch.ops.aten.masked_fill.Scalar_out(x, x > 0.5, 1.0, out=o),
    "sort": lambda x, o: torch.sort(x, 1, out=(o, torch.empty(0, dtype=torch.long, device=x.device))),
    "take": lambda x, o: torch.take(x, torch.tensor([0, 3], device=x.device), out=o),
    "cat": lambda x, o: torch.cat([x, x], out=o),
    # allowed (computed in float32, then cast)
    "clamp_tensor": lambda x, o: torch.clamp(x, x * 0.5, x * 0.9, out=o),
    "add": lambda x, o: torch.add(x, 0.5, out=o),
    "exp": lambda x, o: torch.exp(x, out=o),
    "maximum": lambda x, o: torch.maximum(x, 0.5 * x, out=o),
    "pow": lambda x, o: torch.pow(x, 3, out=o),
    "sum": lambda x, o: torch.sum(x, 1, out=o),
    "mean": lambda x, o: torch.mean(x, 1, out=o),
    "var": lambda x, o: torch.var(x, 1, out=o),
    "cumsum": lambda x, o: torch.cumsum(x, 1, out=o),
    "threshold": lambda x, o: torch.ops.aten.threshold.out(x, 0.5, 0.0, out=o),
}
OUT_DTYPES = [torch.float64, torch.float16, torch.int64, torch.bool]


def _same_out_behaviour(fn, x, out_dtype):
    """fn(x, out) on CPU and DEV: the same exception type, or the same values in out."""
    try:
        cpu_out = torch.empty(0, dtype=out_dtype)
        fn(x, cpu_out)
        cpu_err = None
    except Exception as e:  # noqa: BLE001
        cpu_err = e
    dev_out = torch.empty(0, dtype=out_dtype, device=DEV)
    if cpu_err is not None:
        with pytest.raises(Exception) as dev_err:
            fn(x.to(DEV), dev_out)
            dev_out.cpu()
        assert type(dev_err.value) is type(cpu_err), (
            f"CPU raised {type(cpu_err).__name__}: {cpu_err}; {DEV} raised {type(dev_err.value).__name__}: "
            f"{dev_err.value}")
        return cpu_err, dev_err.value
    fn(x.to(DEV), dev_out)
    assert_same(dev_out, cpu_out)
    return None, None


@pytest.mark.parametrize("out_dtype", OUT_DTYPES, ids=["f64", "f16", "i64", "bool"])
@pytest.mark.parametrize("name", list(OUT_DTYPE_CASES))
def test_out_dtype_refused_or_cast_as_cpu(name, out_dtype):
    x = make_tensor((4, 5), low=0.0, high=1.0)
    _same_out_behaviour(OUT_DTYPE_CASES[name], x, out_dtype)


def test_out_dtype_errors_name_the_dtypes():
    x = make_tensor((4, 5), low=0.0, high=1.0)
    cpu, dev = _same_out_behaviour(OUT_DTYPE_CASES["clamp"], x, torch.float64)
    assert "Found dtype Double but expected Float" in str(cpu) and "Found dtype Double but expected Float" in str(dev)
    cpu, dev = _same_out_behaviour(OUT_DTYPE_CASES["mm"], x, torch.float64)
    assert str(cpu).splitlines()[0] in str(dev)
    # The executable of the allowed signature is cached; the refused one never is.
    for _ in range(2):
        _same_out_behaviour(OUT_DTYPE_CASES["clamp"], x, torch.float64)
        _same_out_behaviour(OUT_DTYPE_CASES["add"], x, torch.float64)


def test_out_dtype_check_ignores_value_errors_of_zero_twins():
    # The dtype check runs the op on zero-filled CPU twins: integer division by
    # those zeros must not be mistaken for a refused out= dtype.
    a = torch.tensor([7, -7, 9], dtype=torch.int64)
    b = torch.tensor([2, 2, -4], dtype=torch.int64)
    for fn in (lambda x, y, o: torch.floor_divide(x, y, out=o), lambda x, y, o: torch.remainder(x, y, out=o),
               lambda x, y, o: torch.div(x, y, rounding_mode="trunc", out=o)):
        expected = torch.empty(0, dtype=torch.float64)
        fn(a, b, expected)
        got = torch.empty(0, dtype=torch.float64, device=DEV)
        fn(a.to(DEV), b.to(DEV), got)
        assert_same(got, expected)


def test_bool_sums_and_scans_as_cpu():
    # sum(dtype=torch.bool) reads elements as != 0 (0.3 is true; it used to be
    # truncated to 0); CPU has no bool cumsum/cumprod kernel (they used to
    # return a silent all-False tensor).
    x = torch.tensor([[0.3, 0.5, 0.0], [0.0, 0.0, -0.2], [0.0, 0.0, 0.0]])
    check(lambda t: (torch.sum(t, 1, dtype=torch.bool), torch.sum(t, dtype=torch.bool),
                     torch.sum(t, 0, out=torch.empty(0, dtype=torch.bool, device=t.device))), x)
    b = x != 0
    check(lambda t: (t.cumsum(0), t.cumprod(1)), b)  # a bool input alone promotes to int64
    for fn in (lambda t: torch.cumsum(t, 1, dtype=torch.bool), lambda t: torch.cumprod(t, 0, dtype=torch.bool),
               lambda t: torch.cumsum(t, 1, out=torch.empty(0, dtype=torch.bool, device=t.device)),
               lambda t: (t != 0).cumsum_(0), lambda t: (t != 0).cumprod_(1)):
        assert_same_error(fn, x)


# ==========================================================================
# 11. pointwise results follow a channels_last input's layout, as on CPU
# ==========================================================================

def _cl(t):
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def _per_channel(y):
    return y[0][(slice(None),) + (slice(0, 1),) * (y.dim() - 2)]   # (C, 1, 1[, 1])


CL_CASES = {
    "relu": lambda x, y: torch.relu(x),
    "add_scalar": lambda x, y: x + 1.5,
    "mul_cl_cl": lambda x, y: x * _cl(y),
    "add_cl_contiguous": lambda x, y: x + y,           # the first full-size input decides: channels_last
    "add_contiguous_cl": lambda x, y: y + x,           # ... contiguous
    "bias": lambda x, y: x * _per_channel(y),           # a broadcast operand does not decide
    "bias_first": lambda x, y: _per_channel(y) - x,
    "row_first": lambda x, y: y[0, 0, 0] + x,
    "exp_sigmoid": lambda x, y: torch.sigmoid(x.exp()),
    "where": lambda x, y: torch.where(x > 0, x, 0.0),
    "compare": lambda x, y: x > 0.1,
    "cast_promote": lambda x, y: x.half() + 1,
    "gelu": lambda x, y: F.gelu(x),
    "clamp": lambda x, y: x.clamp(-0.5, 0.5),
    "chain_then_view": lambda x, y: (x * 2).movedim(1, -1).reshape(-1, x.shape[1])[:5],
    "sum_of_result": lambda x, y: (x + 1).sum((2, 3)),
    "inplace_on_result": lambda x, y: (x * 3).add_(y),
    # not pointwise: the layout CPU's kernels choose
    "conv": lambda x, y: _conv(x, torch.ones((4, 3) + (2,) * (x.dim() - 2), device=x.device)),
    "conv_cl_weight": lambda x, y: _conv(y.to(x.device), _cl(torch.ones((4, 3) + (2,) * (x.dim() - 2),
                                                                      device=x.device))),
    "batch_norm": lambda x, y: F.batch_norm(x, None, None, training=True),
    "avg_pool": lambda x, y: (F.avg_pool2d if x.dim() == 4 else F.avg_pool3d)(x, 2),
    "max_pool": lambda x, y: (F.max_pool2d if x.dim() == 4 else F.max_pool3d)(x, 2),
    "cat": lambda x, y: torch.cat([x, x * 2], 1),
    "interpolate": lambda x, y: F.interpolate(x, scale_factor=2),
}


def _conv(x, w):
    return (F.conv2d if x.dim() == 4 else F.conv3d)(x, w)


@pytest.mark.parametrize("rank", [4, 5], ids=["2d", "3d"])
@pytest.mark.parametrize("name", list(CL_CASES))
def test_channels_last_results_match_cpu_strides(name, rank):
    shape = (2, 3, 4, 5) if rank == 4 else (2, 3, 2, 3, 4)
    x, y = _cl(make_tensor(shape)), make_tensor(shape, seed=1)
    fn = CL_CASES[name]
    cpu_out, dev_out = fn(x, y), fn(x.to(DEV), y.to(DEV))
    assert_same(dev_out, cpu_out, check_stride=True)
    fmt = torch.channels_last if rank == 4 else torch.channels_last_3d
    assert dev_out.is_contiguous(memory_format=fmt) == cpu_out.is_contiguous(memory_format=fmt)


def test_channels_last_result_is_not_a_view():
    x = _cl(make_tensor((2, 3, 4, 5))).to(DEV)
    r = x.relu()
    assert r._base is None and not r._is_view()
    assert r.untyped_storage().nbytes() == r.numel() * r.element_size()
    # the storage holds channels_last (physical) order, as CPU's does
    flat = torch.as_strided(r, (r.numel(),), (1,)).cpu()
    assert torch.equal(flat, torch.as_strided(x.cpu().relu(), (r.numel(),), (1,)))


def test_channels_last_cnn_training_matches_cpu():
    # Forward, loss and every gradient of a small channels_last CNN (results
    # travel in channels_last order between the ops, through autograd).
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 4, 3), torch.nn.GELU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2))
    net = net.to(memory_format=torch.channels_last)
    x = _cl(make_tensor((2, 3, 8, 8)))

    def run(device):
        m = __import__("copy").deepcopy(net).to(device)
        out = m(x.to(device))
        out.square().sum().backward()
        return [out] + [p.grad for p in m.parameters()]

    expected, actual = run("cpu"), run(DEV)
    assert_same(actual, expected, atol=1e-4, rtol=1e-4)


def test_channels_last_compiled_matches_cpu_strides():
    torch._dynamo.reset()
    fn = torch.compile(lambda t: (t * 2 + 1).relu(), backend="tpu") if DEV == "tpu" else (lambda t: (t * 2 + 1).relu())
    x = _cl(make_tensor((2, 3, 4, 5)))
    expected = (x * 2 + 1).relu()
    for _ in range(2):  # the recorded call, then the replay
        assert_same(fn(x.to(DEV)), expected, check_stride=True)
    torch._dynamo.reset()


# ==========================================================================
# Found by the fuzzer (tests/fuzz): each case a program that differed from CPU
# ==========================================================================

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["f32", "f64", "bf16"])
def test_hypot_does_not_overflow_or_underflow(dtype):
    big = 1e300 if dtype == torch.float64 else 1.9e21
    x = torch.tensor([big, 3.0, 0.0, INF, NAN, 1e-30, -big, 0.0], dtype=torch.float64).to(dtype)
    y = torch.tensor([1e-3, -4.0, 0.0, NAN, 1.0, 1e-30, big, -INF], dtype=torch.float64).to(dtype)
    check(torch.hypot, x, y)


def test_out_of_another_dtype_where_meta_is_stricter_than_cpu():
    # The reference meta of abs.out wants Float for a complex input; CPU casts
    # the magnitude into a complex out.
    z = torch.tensor([-3 + 4j, 112.625 + 0j], dtype=torch.complex64)
    check(lambda t: torch.abs(t, out=torch.empty(0, dtype=torch.complex64, device=t.device)), z)
    assert_same_error(lambda t: torch.abs(t, out=torch.empty(0, dtype=torch.complex128, device=t.device)), z)
    assert_same_error(lambda t: torch.abs(t, out=torch.empty(0, dtype=torch.int64, device=t.device)), z)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_into_a_size_0_dim_raises_at_the_op(accumulate):
    # Every index is out of bounds, known while lowering: CPU's IndexError at
    # once, not a device-side check reported at a later sync point.
    def f(t):
        t = t.clone()
        t.index_put_((torch.tensor([0, -1], device=t.device),), torch.tensor(7.0, device=t.device),
                     accumulate=accumulate)
        return t
    cpu, dev = assert_same_error(f, torch.empty(0))
    assert str(cpu).splitlines()[0] in str(dev)
    x = torch.ones(3, device=DEV) * 2  # nothing pending is left behind for the next op
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]


def test_unsupported_dtype_is_not_implemented_like_cpu():
    # A Python complex scalar with a float16 tensor makes a ComplexHalf
    # operand: CPU's ordering comparisons refuse it with NotImplementedError
    # (test_complex32.py covers what CPU computes for complex32).
    x = torch.tensor([1.0, 2.0], dtype=torch.float16)
    assert_same_error(lambda t: t > (1 + 2j), x)
    with pytest.raises(NotImplementedError, match="dtype Bits16 is not supported on 'tpu'"):
        torch.zeros(2, dtype=torch.bits16, device=DEV)


def _special_complex(dtype=torch.complex64, big=True):
    # big=False for exponents: exp(i 1e30 log 7) has no meaningful phase in float
    parts = [0.0, -0.0, 1.5, -2.0, INF, -INF, NAN] + ([100.0, -100.0, 1e30] if big else [10.0, -10.0])
    return torch.tensor([complex(r, i) for r in parts for i in parts], dtype=dtype)


def _parts(t):
    return torch.view_as_real(t.resolve_conj())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "sigmoid", "reciprocal", "pow_1.1", "pow_2",
                                  "pow_0.5", "pow_-1", "rpow_0.001", "rpow_7", "div_by", "pow_tt"])
def test_complex_special_values_as_cpu(name, dtype):
    # glibc's cexp/cpow (C99 Annex G) and c10's Smith division give these on
    # CPU; each part is compared on its own (a NaN part stays NaN, inf stays
    # inf with its sign), with a few ulps for the finite parts.
    z = _special_complex(dtype)
    fns = {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sigmoid": torch.sigmoid, "reciprocal": torch.reciprocal,
           "pow_1.1": lambda t: t ** 1.1, "pow_2": lambda t: t ** 2, "pow_0.5": lambda t: t ** 0.5,
           "pow_-1": lambda t: t ** -1, "rpow_0.001": lambda t: 0.001 ** t, "rpow_7": lambda t: 7.0 ** t,
           "div_by": lambda t: torch.flip(t, [0]) / t, "pow_tt": lambda t: torch.pow(torch.flip(t, [0]), t)}
    fn = fns[name]
    if name in ("rpow_0.001", "rpow_7", "pow_tt", "pow_2"):
        # pow_2: XLA:CPU contracts a*a - b*b into a fused multiply-add, so
        # (1e30 + inf i)^2 has real part 1e60 - inf = -inf where CPU rounds
        # 1e30 * 1e30 to inf first (inf - inf = NaN): an overflowing product
        # beside an infinite one is left out.
        z = _special_complex(dtype, big=False)
    cpu = _parts(fn(z))
    dev = _parts(fn(z.to(DEV)).cpu())
    torch.testing.assert_close(dev, cpu, equal_nan=True, atol=1e-5, rtol=2e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1.0, 2.0, 3.0, -2.0, 0.0, 1.0, 1.1])
def test_pow_scalar_exponent_cases_as_cpu(exponent, dtype):
    # CPU takes sqrt/rsqrt/reciprocal/x*x... for these exponents (float16
    # calls pow): they differ from pow at -inf, -0 and NaN, not only in rounding.
    x = torch.tensor([-INF, INF, -0.0, 0.0, NAN, -2.0, 3.0, 0.25], dtype=dtype)
    check(lambda t: t ** exponent, x)


def test_nan_to_num_of_complex_replaces_each_part():
    z = torch.tensor([complex(INF, NAN), complex(-INF, 2.0), complex(1.0, -INF)], dtype=torch.complex64)
    check(lambda t: _parts(torch.nan_to_num(t, nan=0.5, posinf=1e4, neginf=-1e4)), z)
    check(lambda t: _parts(torch.nan_to_num(t)), z)


# Found by the complex64 conformance run (tools/conformance.py --dtypes complex64)

@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3.5], ids=["2", "1", "inf", "-inf", "0", "3.5"])
def test_complex_vector_norm_uses_the_magnitude(ord):
    z = cplx((4, 5))
    check(lambda t: torch.linalg.vector_norm(t, ord), z, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.linalg.vector_norm(t, ord, dim=1), z, atol=1e-5, rtol=1e-5)


def test_complex_norms_built_on_vector_norm():
    a, b = cplx((3, 6)), cplx((3, 6), seed=7)
    check(lambda t: torch.dist(t, b.to(t.device)), a, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.nn.functional.normalize(t, dim=1), a, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.linalg.matrix_norm(t), a, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.norm(t), a, atol=1e-5, rtol=1e-5)


def test_vdot_and_vecdot_conjugate_the_first_operand():
    a, b = cplx((7,)), cplx((7,), seed=3)
    check(lambda t: torch.vdot(t, b.to(t.device)), a, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.linalg.vecdot(t, b.to(t.device)), a, atol=1e-5, rtol=1e-5)
    check(lambda t: torch.vdot(t.real.contiguous(), b.real.to(t.device).contiguous()), a, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
def test_complex_linspace(steps):
    check(lambda t: torch.linspace(1 - 2j, -3 + 5j, steps, device=t.device), torch.zeros(1), atol=1e-6, rtol=1e-6)
    check(lambda t: torch.linspace(-5, 5, steps, dtype=torch.int64, device=t.device), torch.zeros(1))


def test_equal():
    x = torch.tensor([[1.0, 2.0], [NAN, 4.0]])
    for other in (x.clone(), torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([1.0, 2.0]),
                  torch.tensor([[1, 2], [3, 4]])):
        assert torch.equal(x.to(DEV), other.to(DEV)) == torch.equal(x, other)
    y = torch.tensor([[1, 2], [3, 4]])
    assert torch.equal(y.float().to(DEV), y.to(DEV)) and torch.equal(torch.zeros(0, device=DEV), torch.zeros(0, device=DEV))
    z = cplx((3,))
    assert torch.equal(z.to(DEV), z.to(DEV)) and not torch.equal(z.to(DEV), z.conj().to(DEV))
    with pytest.raises(RuntimeError, match="different devices"):
        torch.equal(x.to(DEV), torch.ones(2, 2))


# CPU's complex prod starts from 1 + 0i and multiplies naively: a lone
# infinite factor's other part becomes NaN (found by the fuzzer, seed 101512).
@pytest.mark.parametrize("x,dim", [
    (torch.tensor(complex(-math.inf, 0)), None),
    (torch.tensor([complex(-math.inf, 0)]), None),
    (torch.tensor([[complex(math.inf, 0)], [2 + 0j]]), 1),
    (torch.tensor([complex(math.nan, 0)]), None),
    (torch.tensor([[1 + 1j, 2 + 0j], [complex(math.inf, 1), 1j]]), 0),
    (torch.tensor([1 + 2j, 3 - 1j, 0.5 + 0.5j]), None),
], ids=["0d_neg_inf", "one_inf", "lanes_of_one", "nan", "inf_in_column", "finite"])
def test_complex_prod_special_values_like_cpu(x, dim):
    def f(t):
        return t.prod() if dim is None else t.prod(dim)
    ref, got = torch.view_as_real(f(x)), torch.view_as_real(f(x.to("tpu")).cpu())
    assert torch.equal(ref.isnan(), got.isnan()), (ref, got)
    torch.testing.assert_close(got.nan_to_num(), ref.nan_to_num(), rtol=1e-6, atol=0)


# ==========================================================================
# Found by OpInfo's small/large/extremal value samples
# (python tools/conformance.py --only-extremal)
# ==========================================================================

_EXTREMES = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 2.0, -2.0, 3.0])


def _maybe_compiled(fn, compiled):
    return torch.compile(fn, backend="tpu", dynamic=False) if compiled and DEV == "tpu" else fn


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("fn", [F.hardshrink, F.softshrink, lambda t: F.softshrink(t, 2.0)],
                         ids=["hardshrink", "softshrink", "softshrink_2"])
def test_shrinks_propagate_nan(fn, compiled):
    check(_maybe_compiled(fn, compiled), _EXTREMES)
    check(fn, _EXTREMES.clone().requires_grad_(), grad=True)  # the backward passes a NaN's gradient


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("fn", [torch.i0, torch.special.i1, torch.special.modified_bessel_i0,
                                torch.special.modified_bessel_i1, torch.special.i0e, torch.special.i1e],
                         ids=["i0", "i1", "modified_i0", "modified_i1", "i0e", "i1e"])
def test_bessel_i_at_infinity_like_cpu(fn, compiled):
    # CPU's I0/I1 kernels are NaN at +-inf (their expansion divides inf by inf); the scaled ones are not
    check(_maybe_compiled(fn, compiled), _EXTREMES, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_zeta_domain_and_poles_like_cpu(compiled):
    x = torch.tensor([1.0, 0.5, 0.0, -1.0, 2.0, 2.0, 2.0, 2.5, 2.0, 3.0, NAN, 2.0, 4.0])
    q = torch.tensor([2.0, 2.0, 1.0, 1.0, 0.0, -3.0, -INF, -1.5, 1.5, INF, 1.0, NAN, 0.25])
    check(_maybe_compiled(torch.special.zeta, compiled), x, q, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_polygamma_poles_like_cpu(n, compiled):
    x = torch.tensor([-INF, -3.0, -1.0, -0.0, 0.0, 1.5, -1.5, 4.0, INF, NAN])
    check(_maybe_compiled(lambda t: torch.polygamma(n, t), compiled), x, atol=1e-4, rtol=1e-4)


_POLYS = [torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
          torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
          torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
          torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p,
          torch.special.shifted_chebyshev_polynomial_t]


@pytest.mark.parametrize("fn", _POLYS, ids=lambda f: f.__name__)
def test_orthogonal_polynomials_of_huge_degree_finish_like_cpu(fn):
    # The recurrence used to run to the largest degree of the batch (up to 1e18 steps: a hang).
    # CPU stops an element once its value is NaN (overflow: inf - inf) and casts the degree to
    # int64, so a degree beyond int64 (or NaN) counts as negative: 0.
    x = torch.tensor([501.0, -1001.2, 13437.7, 4988429.0, 1e20, 3.0, 0.25, -0.5, 1.0, -1.0, NAN])
    for n in (1e20, 4988429.0, 10701.0, 1001.0, 7.0, 0.0, -3.0, NAN, 3e19):
        check(fn, x, torch.full_like(x, n), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("fn", [lambda t: t.bool(), torch.logical_not, lambda t: torch.logical_and(t, t),
                                lambda t: t.any(), lambda t: t.all(), lambda t: t.to(torch.bool) == 0],
                         ids=["bool", "logical_not", "logical_and", "any", "all", "to_bool_eq"])
def test_complex_to_bool_looks_at_both_parts(fn, compiled):
    # complex -> bool is "!= 0": a value with a zero real part and a nonzero imaginary part is True
    z = torch.tensor([-0.001j, 0j, complex(NAN, 0), 1 + 0j, complex(0, NAN), complex(-0.0, 0.0), 2j])
    check(_maybe_compiled(fn, compiled), z)
    check(_maybe_compiled(fn, compiled), z[:1])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("fn", [torch.logical_and, torch.logical_or, torch.logical_xor],
                         ids=["and", "or", "xor"])
def test_logical_ops_test_operands_in_their_common_dtype(fn, compiled):
    # CPU promotes both operands first: a 0-d int64 of 256 (or -0x7800...0, fuzz seed 104664)
    # beside a uint8 tensor wraps to 0 in uint8 and is False; a float 0.5 beside an int tensor
    # promotes the pair to float and stays True
    x = torch.tensor([[7, 0], [3, 4]], dtype=torch.uint8)
    for y in (torch.tensor(256), torch.tensor(-8646911284551352320), torch.tensor(2 ** 40), torch.tensor(3)):
        check(_maybe_compiled(fn, compiled), x, y)
    check(_maybe_compiled(fn, compiled), torch.tensor([0, 1, 2]), torch.tensor(0.5))
    check(_maybe_compiled(fn, compiled), torch.tensor([0.0, 0.25]), torch.tensor([1e-3, 0.0], dtype=torch.float64))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_complex_expm1_like_cpu(dtype, compiled):
    # CPU's formula (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y, its special values included:
    # expm1(1e8 + 0j) is inf + nan j (fuzz seed 2980); accurate near 0
    z = torch.tensor([1e8 + 0j, 786.78 + 414.17j, -14960.6 + 1309.4j, 1e-5 + 1e-6j, -1e-7 + 0j,
                      complex(NAN, 0), complex(0, INF), complex(-INF, 1.0), 0.5 - 2j], dtype=dtype)
    check(_maybe_compiled(torch.expm1, compiled), z, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_incomplete_gamma_for_large_a_near_x(dtype, compiled):
    # a = x = 13437.7 gave P = 0.350 (CPU 0.501): the fixed-length series and continued fraction
    # need about sqrt(a) terms there; Temme's uniform expansion now serves a > 20, |x/a - 1| < 0.3
    a = torch.tensor([21.0, 25, 25, 100, 1001.2, 13437.7, 4988429.0, 1e20, 50, 5, 30, 1000, 40], dtype=dtype)
    x = torch.tensor([21.0, 30, 18, 128, 1001.2, 13437.7, 4988429.0, 1e20, 36, 3, 60, 700, 51.9], dtype=dtype)
    tol = dict(atol=1e-6, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=1e-8)
    check(_maybe_compiled(torch.special.gammainc, compiled), a, x, **tol)
    check(_maybe_compiled(torch.special.gammaincc, compiled), a, x, **tol)


@pytest.mark.parametrize("fn", [torch.special.gammainc, torch.special.gammaincc], ids=["P", "Q"])
def test_incomplete_gamma_edge_rules_in_cpu_order(fn):
    # CPU checks a < 0 / x < 0, a = 0, x = 0, a = inf, x = inf in that order before NaN operands
    # propagate: P(inf, nan) = 0 and P(nan, inf) = 1 on CPU
    v = [0.0, -0.0, -1.0, 0.5, 25.0, INF, NAN, 1e20]
    a = torch.tensor([p for p in v for _ in v], dtype=torch.float64)
    x = torch.tensor([q for _ in v for q in v], dtype=torch.float64)
    check(fn, a, x, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8],
                         ids=["i32", "i64", "i16", "i8", "u8"])
def test_integer_pow_wraps_like_cpu(dtype, compiled):
    # square-and-multiply over every exponent bit (XLA's integer power squares six times:
    # 2 ** 169 and 3 ** 169 in int32 came out as 2 ** 41 and 3 ** 41; fuzz seed 3097)
    hi = torch.iinfo(dtype).max
    e = torch.tensor([0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 121, 127, min(169, hi), min(255, hi)], dtype=dtype)
    signed = dtype != torch.uint8
    x = torch.tensor([2, 3, -1, 1, 0, 5, 7, -2, 3, -3, 2, 9, 3, 11] if signed else
                     [2, 3, 255, 1, 0, 5, 7, 254, 3, 253, 2, 9, 3, 11], dtype=dtype)
    pw = _maybe_compiled(torch.pow, compiled)
    check(pw, x, e)
    check(lambda t: pw(2, t), e)
    check(lambda t: pw(t, 3), x)
    if signed:  # negative exponents: 1, +-1 or 0
        check(pw, torch.tensor([1, -1, -1, 2, 0, -3], dtype=dtype), torch.tensor([-5, -3, -4, -1, -2, -7], dtype=dtype))
