// Elementwise arithmetic on two or more operands: add/sub/mul/div and their
// integer forms (floor division, remainder, fmod, gcd/lcm, shifts), powers,
// comparisons, logical and bitwise ops, where/clamp/lerp/addcmul/masked_fill,
// and the binary math of torch (hypot, logaddexp, xlogy, fmax/fmin,
// copysign, heaviside). Output shape and dtype come from PyTorch's meta
// functions (c.out()), so broadcasting and type promotion match CPU.

#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"
#include "ops/elementwise.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using namespace ew;

// Integer division, remainder and fmod by zero raise on CPU (RuntimeError
// "ZeroDivisionError"); the device checks every divisor the same way.
void check_int_divisor(LowerCtx& c, const Value& d) {
  if (!shlo::is_integral(d.type.elem)) return;
  Value ok = c.b.compare(Compare::NE, d, cst(c, 0, d));
  c.check(ok, c.b.convert(d, ElemType::S64), {false, "ZeroDivisionError"});
}

// _assert_async(self[, assert_msg]): a one-element tensor must be nonzero.
// CUDA checks it on the device and reports at a later sync; so do we (the
// device-side check mechanism; at the op itself in Debug mode). Its size is
// known while lowering, so a tensor that is not one element raises at once
// with is_nonzero's words, as on CPU and CUDA.
std::vector<Value> assert_async(LowerCtx& c) {
  const Value& x = c.t(0);
  int64_t n = x.type.numel();
  if (n == 0) throw std::runtime_error("Boolean value of Tensor with no values is ambiguous");
  if (n > 1) throw std::runtime_error("Boolean value of Tensor with more than one value is ambiguous");
  std::string msg = "Expected Tensor with single nonzero value, but got zero";
  if (c.has(1)) msg = c.str(1).empty() ? "Assertion is failed" : c.str(1);
  Value v = c.b.reshape(x, {});
  Value ok = c.b.compare(Compare::NE, v, cst(c, 0, v));
  c.check(ok, c.b.constant_int(0, ElemType::S64), {false, msg, /*with_value=*/false});
  return {};
}

Value alpha_times(LowerCtx& c, size_t alpha_arg, const Value& v) {
  if (!c.has(alpha_arg)) return v;
  return c.b.mul(v, c.scalar_like(alpha_arg, v));
}

std::vector<Value> add_like(LowerCtx& c, const char* op) {
  ElemType ct = accumulate_type(c.out().elem);
  if (ct == ElemType::Pred) {  // bool + bool is logical or
    Value a = in(c, 0, ct), b = in(c, 1, ct);
    return finish(c, c.b.binary("or", a, b));
  }
  Value a = in(c, 0, ct), b = in(c, 1, ct);
  return finish(c, c.b.binary(op, a, alpha_times(c, 2, b)));
}

std::vector<Value> binary(LowerCtx& c, const char* op) {
  ElemType ct = accumulate_type(c.out().elem);
  return finish(c, c.b.binary(op, in(c, 0, ct), in(c, 1, ct)));
}

// maximum/minimum: Builder::max/min propagate NaN like CPU.
std::vector<Value> max_min(LowerCtx& c, bool is_max) {
  ElemType ct = accumulate_type(c.out().elem);
  Value a = in(c, 0, ct), b = in(c, 1, ct);
  return finish(c, is_max ? c.b.max(a, b) : c.b.min(a, b));
}

Value floor_div_int(Builder& b, const Value& a, const Value& d) {
  // Python floor division for integers: truncate, then step down when the signs differ.
  Value q = b.div(a, d);
  Value r = b.binary("remainder", a, d);
  Value zero = b.constant(0, a.type.elem, a.type.dims);
  Value nonzero = b.compare(Compare::NE, r, zero);
  Value sign_differs = b.compare(Compare::NE, b.compare(Compare::LT, r, zero), b.compare(Compare::LT, d, zero));
  Value adjust = b.binary("and", nonzero, sign_differs);
  return b.select(adjust, b.sub(q, b.constant(1, a.type.elem, a.type.dims)), q);
}

// Python floor division for floats, as CPU computes it: from fmod, so that
// inf // 2 is NaN (fmod(inf, 2) is NaN) and the quotient rounds like CPU's
// (a - fmod(a, b)) / b rather than floor(a / b), which can be one off.
Value floor_div_float(Builder& b, const Value& a, const Value& d) {
  auto k = [&](double v) { return b.constant(v, a.type.elem, a.type.dims); };
  Value mod = b.binary("remainder", a, d);
  Value div = b.div(b.sub(a, mod), d);
  Value fix = b.binary("and", b.compare(Compare::NE, mod, k(0)),
                       b.compare(Compare::NE, b.compare(Compare::LT, d, k(0)), b.compare(Compare::LT, mod, k(0))));
  div = b.select(fix, b.sub(div, k(1)), div);
  Value fl = b.unary("floor", div);
  fl = b.select(b.compare(Compare::GT, b.sub(div, fl), k(0.5)), b.add(fl, k(1)), fl);
  // a zero quotient keeps the sign of a / b
  Value q = b.div(a, d);
  fl = b.select(b.compare(Compare::EQ, div, k(0)), b.mul(k(0), q), fl);  // copysign(0, a / b): |q| < 1 here
  // division by zero: a / b (inf or NaN)
  return b.select(b.compare(Compare::EQ, d, k(0)), q, fl);
}

std::vector<Value> div_mode(LowerCtx& c, const std::string& mode);

std::vector<Value> div(LowerCtx& c) { return div_mode(c, c.has(2) ? c.str(2) : ""); }

std::vector<Value> div_mode(LowerCtx& c, const std::string& mode) {
  ElemType out = c.out().elem;
  c.full_precision_scalars = true;
  if (mode.empty() || shlo::is_float(out)) {
    ElemType ct = accumulate_type(out);
    Value q = divide(c.b, in(c, 0, ct), in(c, 1, ct));
    if (mode == "trunc") {
      Value x = c.b.div(in(c, 0, ct), in(c, 1, ct));
      q = c.b.mul(c.b.unary("sign", x), c.b.unary("floor", c.b.unary("abs", x)));
    } else if (mode == "floor") {
      q = floor_div_float(c.b, in(c, 0, ct), in(c, 1, ct));
    }
    return finish(c, q);
  }
  Value a = in(c, 0, out), d = in(c, 1, out);
  check_int_divisor(c, d);
  if (mode == "trunc") return {c.b.div(a, d)};
  return {floor_div_int(c.b, a, d)};
}

// << and >>: arithmetic right shift for signed types, as on CPU.
std::vector<Value> shift(LowerCtx& c, bool left) {
  ElemType t = c.out().elem;
  Value a = in(c, 0, t), n = in(c, 1, t);
  const char* op = left ? "shift_left" : shlo::is_unsigned_int(t) ? "shift_right_logical" : "shift_right_arithmetic";
  return {c.b.binary(op, a, n)};
}

// Integer x^y as CPU computes it: square-and-multiply over every bit of y, so the
// result wraps as CPU's does (XLA's integer power squares only six times: 3^169 in
// int32 came out as 3^41); y < 0 gives 1 for x = 1, +-1 for x = -1, else 0.
Value ipow(Builder& b, Value x, Value y) {
  if (x.type.dims != y.type.dims) {
    auto dims = x.type.rank() >= y.type.rank() ? x.type.dims : y.type.dims;
    x = b.broadcast_to(x, dims), y = b.broadcast_to(y, dims);
  }
  ElemType t = x.type.elem;
  auto dims = x.type.dims;
  auto ik = [&](int64_t v) { return b.constant_int(v, t, dims); };
  const int bits = shlo::byte_size(t) * 8 - (shlo::is_signed_int(t) ? 1 : 0);
  Value r = ik(1), base = x;
  for (int i = 0; i < bits; ++i) {
    Value bit = b.binary("and", b.binary("shift_right_logical", y, ik(i)), ik(1));
    r = b.select(b.compare(Compare::EQ, bit, ik(1)), b.mul(r, base), r);
    if (i + 1 < bits) base = b.mul(base, base);
  }
  if (!shlo::is_signed_int(t)) return r;
  Value odd = b.compare(Compare::EQ, b.binary("and", y, ik(1)), ik(1));
  Value neg = b.select(b.compare(Compare::EQ, x, ik(1)), ik(1),
                       b.select(b.compare(Compare::EQ, x, ik(-1)), b.select(odd, ik(-1), ik(1)), ik(0)));
  return b.select(b.compare(Compare::LT, y, ik(0)), neg, r);
}

// x^y; complex as glibc's cpow: exp(y log x) with C99 products and exponentials.
Value powv(Builder& b, const Value& x, const Value& y) {
  if (shlo::is_complex(x.type.elem)) return cexp_c99(b, cmul_c99(b, y, clog_c99(b, x)));
  if (shlo::is_integral(x.type.elem)) return ipow(b, x, y);
  return b.binary("power", x, y);
}

std::vector<Value> pow_tt(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  return finish(c, powv(c.b, in(c, 0, ct), in(c, 1, ct)));
}

std::vector<Value> compare(LowerCtx& c, Compare dir) {
  ElemType ct = c.common;
  if (ct == ElemType::F16 || ct == ElemType::BF16) ct = ElemType::F32;
  Value a = in(c, 0, ct), b = in(c, 1, ct);
  return finish(c, c.b.compare(dir, a, b));
}

// CPU promotes both operands to their common dtype before testing them for
// zero: logical_and(uint8, tensor(256)) is False (256 wraps to 0 in uint8).
std::vector<Value> logical(LowerCtx& c, const char* op) {
  Value a = c.b.convert(in(c, 0, c.common), ElemType::Pred), b = c.b.convert(in(c, 1, c.common), ElemType::Pred);
  return finish(c, c.b.binary(op, a, b));
}

std::vector<Value> bitwise(LowerCtx& c, const char* op) {
  ElemType ct = c.out().elem;
  return {c.b.binary(op, in(c, 0, ct), in(c, 1, ct))};
}

std::vector<Value> clamp(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value x = in(c, 0, ct);
  if (c.has(1)) x = c.b.max(x, broadcast_convert(c.b, c.t(1), x.type));
  if (c.has(2)) x = c.b.min(x, broadcast_convert(c.b, c.t(2), x.type));
  return finish(c, x);
}

std::vector<Value> clamp_min(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value x = in(c, 0, ct);
  return finish(c, c.b.max(x, broadcast_convert(c.b, c.t(1), x.type)));
}

std::vector<Value> clamp_max(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value x = in(c, 0, ct);
  return finish(c, c.b.min(x, broadcast_convert(c.b, c.t(1), x.type)));
}

std::vector<Value> where(LowerCtx& c) {
  Value cond = in(c, 0, ElemType::Pred);
  ElemType ct = c.out().elem;
  return {c.b.select(cond, in(c, 1, ct), in(c, 2, ct))};
}

std::vector<Value> addcmul(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value s = in(c, 0, ct), a = in(c, 1, ct), b = in(c, 2, ct);
  return finish(c, c.b.add(s, c.b.mul(c.scalar_like(3, s), c.b.mul(a, b))));
}

std::vector<Value> addcdiv(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value s = in(c, 0, ct), a = in(c, 1, ct), b = in(c, 2, ct);
  return finish(c, c.b.add(s, c.b.mul(c.scalar_like(3, s), c.b.div(a, b))));
}

std::vector<Value> lerp(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value s = in(c, 0, ct), e = in(c, 1, ct);
  Value w = broadcast_convert(c.b, c.t(2), s.type);
  return finish(c, c.b.add(s, c.b.mul(w, c.b.sub(e, s))));
}

std::vector<Value> masked_fill(LowerCtx& c) {
  ElemType ct = c.out().elem;
  Value x = in(c, 0, ct);
  Value m = in(c, 1, ElemType::Pred);
  return {c.b.select(m, broadcast_convert(c.b, c.t(2), x.type), x)};
}

std::vector<Value> logical_not(LowerCtx& c) {
  return finish(c, c.b.unary("not", in(c, 0, ElemType::Pred)));
}

std::vector<Value> bitwise_not(LowerCtx& c) { return {c.b.unary("not", in(c, 0, c.out().elem))}; }

// pow.Tensor_Scalar(self, exponent) as CPU computes it: exponent 0 fills 1
// and 1 copies (every dtype); float32/64, bfloat16 and complex take sqrt for
// 0.5, rsqrt for -0.5, 1/x for -1, x*x, x*x*x and 1/(x*x) for 2, 3 and -2
// (float16 always calls pow). The exponent is a runtime operand (one
// executable for every value), so the cases are selects the compiler folds
// when the exponent is a constant (torch.compile) and fuses otherwise. They
// differ from pow in more than rounding: sqrt(-inf) is NaN, pow(-inf, 0.5) inf.
std::vector<Value> pow_tensor_scalar(LowerCtx& c) {
  ElemType out = c.out().elem;
  ElemType ct = accumulate_type(out);
  Builder& b = c.b;
  Value x = in(c, 0, ct);
  Value e = ew_scalar(c, 1, x);
  Value r = powv(b, x, e);
  auto is = [&](double v) { return b.compare(Compare::EQ, e, cst(c, v, e)); };
  if ((shlo::is_float(out) && out != ElemType::F16) || shlo::is_complex(out)) {
    Value one = cst(c, 1, x), xx = multiply(b, x, x);
    r = b.select(is(2), xx, r);
    r = b.select(is(3), multiply(b, xx, x), r);
    r = b.select(is(-2), divide(b, one, xx), r);
    Value root = shlo::is_complex(out) ? csqrt_c99(b, x) : b.unary("sqrt", x);
    r = b.select(is(0.5), root, r);
    r = b.select(is(-0.5), divide(b, one, root), r);
    r = b.select(is(-1), divide(b, one, x), r);
  }
  r = b.select(is(1), x, r);
  r = b.select(is(0), cst(c, 1, x), r);
  return finish(c, r);
}

std::vector<Value> pow_scalar_base(LowerCtx& c) {
  // pow.Scalar(self: Scalar, exponent: Tensor)
  ElemType ct = accumulate_type(c.out().elem);
  Value e = in(c, 1, ct);
  Value base = ew_scalar(c, 0, e);
  return finish(c, powv(c.b, base, e));
}

std::vector<Value> rsub(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value a = in(c, 0, ct), b = in(c, 1, ct);
  return finish(c, c.b.sub(b, alpha_times(c, 2, a)));
}

std::vector<Value> fmod(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value a = in(c, 0, ct), d = in(c, 1, ct);
  check_int_divisor(c, d);
  return finish(c, c.b.binary("remainder", a, d));
}

std::vector<Value> remainder(LowerCtx& c) {
  // Python modulo: result has the sign of the divisor.
  ElemType ct = accumulate_type(c.out().elem);
  Value a = in(c, 0, ct), d = in(c, 1, ct);
  check_int_divisor(c, d);
  Builder& b = c.b;
  Value r = b.binary("remainder", a, d);
  Value zero = cst(c, 0, r);
  Value fix = b.binary("and", b.compare(Compare::NE, r, zero),
                       b.compare(Compare::NE, b.compare(Compare::LT, r, zero), b.compare(Compare::LT, d, zero)));
  return finish(c, b.select(fix, b.add(r, d), r));
}

// complex(real, imag) and polar(abs, angle): a complex result from two
// broadcast real operands of the part type (only the out= overloads have
// kernels; the functional forms are composites over them).
std::vector<Value> complex_from(LowerCtx& c, bool polar) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  TensorType pt{part_type(out.elem), out.dims};
  Value x = broadcast_convert(b, c.t(0), pt), y = broadcast_convert(b, c.t(1), pt);
  if (polar) {
    Value r = x;
    x = b.mul(r, b.unary("cosine", y));
    y = b.mul(r, b.unary("sine", y));
  }
  return {b.op("complex", {x, y}, out)};
}

// gcd as CPU computes it (|a|, |b|, then Euclid until a is 0), unrolled: the
// longest Euclid chain of n-bit integers (consecutive Fibonacci numbers) is
// about 1.44 n steps, so 1.5 n + 2 steps always finish. Elementwise and
// fused; no data-dependent loop.
Value gcd_of(Builder& b, Value x, Value y) {
  if (!shlo::is_integral(x.type.elem))
    throw shlo::ElementTypeError(std::string("gcd does not take ") + shlo::mlir_name(x.type.elem) + " operands");
  if (shlo::is_signed_int(x.type.elem)) x = b.unary("abs", x), y = b.unary("abs", y);
  Value zero = b.constant(0, x.type.elem, x.type.dims), one = b.constant(1, x.type.elem, x.type.dims);
  int steps = static_cast<int>(shlo::byte_size(x.type.elem)) * 12 + 2;
  for (int i = 0; i < steps; ++i) {  // (x, y) <- (y % x, x) while x != 0
    Value live = b.compare(Compare::NE, x, zero);
    Value r = b.binary("remainder", y, b.select(live, x, one));
    y = b.select(live, x, y);
    x = b.select(live, r, x);
  }
  return y;
}

std::vector<Value> gcd(LowerCtx& c) {
  ElemType t = c.out().elem;
  return finish(c, gcd_of(c.b, in(c, 0, t), in(c, 1, t)));
}

std::vector<Value> lcm(LowerCtx& c) {
  // CPU: g == 0 ? 0 : |a / g * b|
  ElemType t = c.out().elem;
  Builder& b = c.b;
  Value x = in(c, 0, t), y = in(c, 1, t);
  Value g = gcd_of(b, x, y);
  Value zero = cst(c, 0, g);
  Value nz = b.compare(Compare::NE, g, zero);
  // C++ promotes 8/16-bit operands to int: the product and its abs happen
  // in 32 bits, then the result wraps to the dtype.
  ElemType w = shlo::byte_size(t) < 4 ? ElemType::S32 : t;
  Value gw = b.convert(b.select(nz, g, cst(c, 1, g)), w);
  Value l = b.mul(b.div(b.convert(x, w), gw), b.convert(y, w));
  if (shlo::is_signed_int(w)) l = b.unary("abs", l);
  return finish(c, b.select(nz, b.convert(l, t), zero));
}

// hypot as CPU's std::hypot: no overflow or underflow in the squares.
std::vector<Value> hypot(LowerCtx& c) {
  return as_out(c, cabs_c99(c.b, ew_in(c, 0, float_compute(c)), ew_in(c, 1, float_compute(c))));
}

Value logaddexp_base(Builder& b, const Value& x, const Value& y, double ln_base) {
  // m + log_base(1 + base^-|x - y|); equal arguments (infinities included)
  // give x + log_base(2)
  Value m = b.max(x, y);
  Value d = b.unary("abs", b.sub(x, y));
  Value tail = b.div(b.unary("log_plus_one", b.unary("exponential", b.mul(neg(b, d), k(b, ln_base, d)))),
                     k(b, ln_base, d));
  Value same = b.add(x, k(b, std::log(2.0) / ln_base, x));
  return b.select(b.compare(Compare::EQ, x, y), same, b.add(m, tail));
}

template <int Base>
std::vector<Value> logaddexp(LowerCtx& c) {
  Value x = ew_in(c, 0, float_compute(c)), y = ew_in(c, 1, float_compute(c));
  // complex: CPU's helper (logaddexp2 of complex is refused: max has no complex form)
  if (Base == 0 && shlo::is_complex(x.type.elem)) return as_out(c, clogaddexp_cpu(c.b, x, y));
  return as_out(c, logaddexp_base(c.b, x, y, Base == 2 ? std::log(2.0) : 1.0));
}

template <bool Log1p>
std::vector<Value> xlogy(LowerCtx& c) {
  // x * log(y) (or log1p(y)), 0 where x == 0 unless y is NaN
  Builder& b = c.b;
  Value x = ew_in(c, 0, float_compute(c)), y = ew_in(c, 1, float_compute(c));
  Value prod = b.mul(x, b.unary(Log1p ? "log_plus_one" : "log", y));
  Value r = b.select(b.compare(Compare::EQ, x, k(b, 0, x)), k(b, 0, x), prod);
  return as_out(c, b.select(isnan(b, y), y, r));
}

template <bool IsMax>
std::vector<Value> fmax_fmin(LowerCtx& c) {
  // NaN-ignoring max/min: a NaN operand yields the other one
  Builder& b = c.b;
  ElemType t = accumulate_type(c.out().elem);
  Value x = ew_in(c, 0, t), y = ew_in(c, 1, t);
  Value r = IsMax ? b.max(x, y) : b.min(x, y);
  if (shlo::is_float(t)) {
    r = b.select(isnan(b, x), y, r);
    r = b.select(isnan(b, y), x, r);
  }
  return as_out(c, r);
}

std::vector<Value> copysign(LowerCtx& c) {
  Builder& b = c.b;
  Value x = ew_in(c, 0, float_compute(c)), y = ew_in(c, 1, float_compute(c));
  Value a = b.unary("abs", x);
  return as_out(c, b.select(signbit(b, y), neg(b, a), a));
}

std::vector<Value> heaviside(LowerCtx& c) {
  Builder& b = c.b;
  ElemType t = c.out().elem;
  Value x = ew_in(c, 0, t), v = ew_in(c, 1, t);
  Value zero = k(b, 0, x);
  Value step = b.convert(b.compare(Compare::GT, x, zero), t);
  return {b.select(b.compare(Compare::EQ, x, zero), v, step)};
}

}  // namespace

void append_arithmetic(std::vector<Lowering>& t) {
  t.push_back({"assert_async", assert_async, {"_assert_async", "_assert_async.msg"}});
  t.push_back({"gcd", gcd, {"gcd+"}});
  t.push_back({"lcm", lcm, {"lcm+"}});
  t.push_back({"add", [](LowerCtx& c) { return add_like(c, "add"); }, {"add.Tensor+"}});
  t.push_back({"sub", [](LowerCtx& c) { return add_like(c, "subtract"); }, {"sub.Tensor+"}});
  t.push_back({"rsub", rsub, {"rsub.Tensor"}});
  t.push_back({"mul", [](LowerCtx& c) {
                 if (c.out().elem == ElemType::Pred) return logical(c, "and");
                 c.full_precision_scalars = true;
                 if (shlo::is_complex(c.out().elem)) {
                   ElemType ct = accumulate_type(c.out().elem);
                   return finish(c, cmul_naive(c.b, in(c, 0, ct), in(c, 1, ct)));
                 }
                 return binary(c, "multiply");
               },
               {"mul.Tensor+"}});
  t.push_back({"div", div, {"div.Tensor+", "div.Tensor_mode+"}});
  t.push_back({"floor_divide", [](LowerCtx& c) { return div_mode(c, "floor"); },
               {"floor_divide+", "floor_divide_.Tensor"}});
  t.push_back({"lshift", [](LowerCtx& c) { return shift(c, true); },
               {"__lshift__.Scalar", "__lshift__.Tensor", "__ilshift__.Scalar", "__ilshift__.Tensor", "bitwise_left_shift.Tensor+"}});
  t.push_back({"rshift", [](LowerCtx& c) { return shift(c, false); },
               {"__rshift__.Scalar", "__rshift__.Tensor", "__irshift__.Scalar", "__irshift__.Tensor", "bitwise_right_shift.Tensor+"}});
  t.push_back({"maximum", [](LowerCtx& c) { return max_min(c, true); }, {"maximum+"}});
  t.push_back({"minimum", [](LowerCtx& c) { return max_min(c, false); }, {"minimum+"}});
  t.push_back({"pow", pow_tt, {"pow.Tensor_Tensor+", "pow_.Tensor"}});
  t.push_back({"pow_scalar", pow_tensor_scalar, {"pow.Tensor_Scalar+", "pow_.Scalar"}});
  t.push_back({"pow_scalar_base", pow_scalar_base, {"pow.Scalar+"}});
  t.push_back({"fmod", fmod, {"fmod.Tensor+"}});
  t.push_back({"remainder", remainder, {"remainder.Tensor+", "remainder.Scalar_Tensor+"}});
  t.push_back({"complex", [](LowerCtx& c) { return complex_from(c, false); }, {"complex.out"}});
  t.push_back({"polar", [](LowerCtx& c) { return complex_from(c, true); }, {"polar.out"}});
  t.push_back({"atan2", [](LowerCtx& c) { return binary(c, "atan2"); }, {"atan2+"}});
  t.push_back({"eq", [](LowerCtx& c) { return compare(c, Compare::EQ); }, {"eq.Tensor+", "eq.Scalar+"}});
  t.push_back({"ne", [](LowerCtx& c) { return compare(c, Compare::NE); }, {"ne.Tensor+", "ne.Scalar+"}});
  t.push_back({"lt", [](LowerCtx& c) { return compare(c, Compare::LT); }, {"lt.Tensor+", "lt.Scalar+"}});
  t.push_back({"le", [](LowerCtx& c) { return compare(c, Compare::LE); }, {"le.Tensor+", "le.Scalar+"}});
  t.push_back({"gt", [](LowerCtx& c) { return compare(c, Compare::GT); }, {"gt.Tensor+", "gt.Scalar+"}});
  t.push_back({"ge", [](LowerCtx& c) { return compare(c, Compare::GE); }, {"ge.Tensor+", "ge.Scalar+"}});
  t.push_back({"logical_and", [](LowerCtx& c) { return logical(c, "and"); }, {"logical_and+"}});
  t.push_back({"logical_or", [](LowerCtx& c) { return logical(c, "or"); }, {"logical_or+"}});
  t.push_back({"logical_xor", [](LowerCtx& c) { return logical(c, "xor"); }, {"logical_xor+"}});
  t.push_back({"logical_not", logical_not, {"logical_not+"}});
  t.push_back({"bitwise_and", [](LowerCtx& c) { return bitwise(c, "and"); }, {"bitwise_and.Tensor+"}});
  t.push_back({"bitwise_or", [](LowerCtx& c) { return bitwise(c, "or"); }, {"bitwise_or.Tensor+"}});
  t.push_back({"bitwise_xor", [](LowerCtx& c) { return bitwise(c, "xor"); }, {"bitwise_xor.Tensor+"}});
  t.push_back({"bitwise_not", bitwise_not, {"bitwise_not+"}});
  t.push_back({"where", where, {"where.self+"}});
  t.push_back({"clamp", clamp, {"clamp+", "clamp.Tensor+"}});
  t.push_back({"clamp_min", clamp_min, {"clamp_min+", "clamp_min.Tensor+"}});
  t.push_back({"clamp_max", clamp_max, {"clamp_max+", "clamp_max.Tensor+"}});
  // Optimizer helpers.
  t.push_back({"addcmul", addcmul, {"addcmul+"}});
  t.push_back({"addcdiv", addcdiv, {"addcdiv+"}});
  t.push_back({"lerp", lerp, {"lerp.Scalar+", "lerp.Tensor+"}});
  t.push_back({"masked_fill", masked_fill, {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Tensor", "masked_fill_.Tensor"}});
  t.push_back({"hypot", hypot, {"hypot+"}});
  t.push_back({"logaddexp", logaddexp<0>, {"logaddexp+"}});
  t.push_back({"logaddexp2", logaddexp<2>, {"logaddexp2+"}});
  t.push_back({"xlogy", xlogy<false>, {"xlogy.Tensor+"}});
  t.push_back({"xlog1py", xlogy<true>, {"special_xlog1py+"}});
  t.push_back({"fmax", fmax_fmin<true>, {"fmax+"}});
  t.push_back({"fmin", fmax_fmin<false>, {"fmin+"}});
  t.push_back({"copysign", copysign, {"copysign.Tensor+"}});
  t.push_back({"heaviside", heaviside, {"heaviside+"}});
}

}  // namespace ttpu::ops
