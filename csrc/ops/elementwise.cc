// Elementwise lowerings: arithmetic, unary math, comparisons, activations
// and their backwards. Output shape and dtype come from PyTorch's meta
// functions (ctx.out()), so broadcasting and type promotion match CPU.
#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;

Value in(LowerCtx& c, size_t i, ElemType compute) { return ew_in(c, i, compute); }

Value cst(LowerCtx& c, double v, const Value& like) { return c.b.constant(v, like.type.elem, like.type.dims); }

std::vector<Value> finish(LowerCtx& c, const Value& v) { return as_out(c, v); }

// Integer division, remainder and fmod by zero raise on CPU (RuntimeError
// "ZeroDivisionError"); the device checks every divisor the same way.
void check_int_divisor(LowerCtx& c, const Value& d) {
  if (!shlo::is_integral(d.type.elem)) return;
  Value ok = c.b.compare(Compare::NE, d, cst(c, 0, d));
  c.check(ok, c.b.convert(d, ElemType::S64), {false, "ZeroDivisionError"});
}

std::vector<Value> unary(LowerCtx& c, const char* op) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, c.b.unary(op, x));
}

// Same-type unary (abs, neg): integers stay integers.
std::vector<Value> unary_same(LowerCtx& c, const char* op) {
  Value x = in(c, 0, accumulate_type(c.out().elem));
  return finish(c, c.b.unary(op, x));
}

// floor/ceil/round of an integer tensor is the tensor itself, as on CPU; a
// bool one is refused by the emitter's type check, as CPU refuses it.
std::vector<Value> rounding(LowerCtx& c, const char* op) {
  Value x = in(c, 0, accumulate_type(c.out().elem));
  if (shlo::is_integral(x.type.elem)) return finish(c, x);
  return finish(c, c.b.unary(op, x));
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
    Value q = c.b.div(in(c, 0, ct), in(c, 1, ct));
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

Value powv(Builder& b, const Value& x, const Value& y) { return b.binary("power", x, y); }

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

// abs of a complex tensor is its magnitude (a real result): stablehlo.abs
// takes the complex value itself; converting it to the real result type
// first would keep only the real part.
std::vector<Value> abs(LowerCtx& c) {
  Value x = c.t(0);
  if (shlo::is_complex(x.type.elem)) {
    ElemType part = x.type.elem == ElemType::C64 ? ElemType::F32 : ElemType::F64;
    return finish(c, c.b.op("abs", {x}, TensorType{part, x.type.dims}));
  }
  if (shlo::is_unsigned_int(c.out().elem)) return {in(c, 0, c.out().elem)};  // |x| of unsigned is x
  return unary_same(c, "abs");
}

std::vector<Value> logical(LowerCtx& c, const char* op) {
  Value a = in(c, 0, ElemType::Pred), b = in(c, 1, ElemType::Pred);
  return finish(c, c.b.binary(op, a, b));
}

std::vector<Value> bitwise(LowerCtx& c, const char* op) {
  ElemType ct = c.out().elem;
  return {c.b.binary(op, in(c, 0, ct), in(c, 1, ct))};
}

Value sigmoid(Builder& b, const Value& x) { return b.unary("logistic", x); }

// CHLO's erf approximation saturates below 1 (erf(4.f) = 0.99999982, where
// CPU's is exactly 1, so erf(x).long() differs): in the tails erf is
// computed as 1 - erfc(|x|), whose approximation keeps its accuracy there.
Value erf(Builder& b, const Value& x) {
  Value ax = b.unary("abs", x);
  Value tail = b.mul(b.unary("sign", x), b.sub(b.constant(1, x.type.elem, x.type.dims), b.op("chlo.erfc", {ax}, x.type)));
  return b.select(b.compare(Compare::LT, ax, b.constant(1, x.type.elem, x.type.dims)), b.op("chlo.erf", {x}, x.type), tail);
}

Value gelu(Builder& b, const Value& x, bool tanh_approx) {
  Value half = b.constant(0.5, x.type.elem, x.type.dims);
  Value one = b.constant(1.0, x.type.elem, x.type.dims);
  if (tanh_approx) {
    Value k = b.constant(std::sqrt(2.0 / M_PI), x.type.elem, x.type.dims);
    Value c3 = b.constant(0.044715, x.type.elem, x.type.dims);
    Value x3 = b.mul(b.mul(x, x), x);
    Value inner = b.mul(k, b.add(x, b.mul(c3, x3)));
    return b.mul(b.mul(half, x), b.add(one, b.unary("tanh", inner)));
  }
  Value r2 = b.constant(M_SQRT1_2, x.type.elem, x.type.dims);
  return b.mul(b.mul(half, x), b.add(one, erf(b, b.mul(x, r2))));
}

std::vector<Value> gelu_fwd(LowerCtx& c) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, gelu(c.b, x, c.has(1) && c.str(1) == "tanh"));
}

std::vector<Value> gelu_bwd(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), x = in(c, 1, ct);
  Value half = cst(c, 0.5, x), one = cst(c, 1.0, x);
  Value d;
  if (c.has(2) && c.str(2) == "tanh") {
    Value k = cst(c, std::sqrt(2.0 / M_PI), x), c3 = cst(c, 0.044715, x);
    Value x2 = b.mul(x, x);
    Value inner = b.mul(k, b.add(x, b.mul(c3, b.mul(x2, x))));
    Value t = b.unary("tanh", inner);
    Value dinner = b.mul(k, b.add(one, b.mul(cst(c, 3 * 0.044715, x), x2)));
    d = b.add(b.mul(half, b.add(one, t)), b.mul(b.mul(half, x), b.mul(b.sub(one, b.mul(t, t)), dinner)));
  } else {
    Value cdf = b.mul(half, b.add(one, erf(b, b.mul(x, cst(c, M_SQRT1_2, x)))));
    Value pdf = b.mul(b.unary("exponential", b.mul(cst(c, -0.5, x), b.mul(x, x))), cst(c, 0.5 * M_2_SQRTPI * M_SQRT1_2, x));
    d = b.add(cdf, b.mul(x, pdf));
  }
  return finish(c, b.mul(g, d));
}

std::vector<Value> silu_fwd(LowerCtx& c) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, c.b.mul(x, sigmoid(c.b, x)));
}

std::vector<Value> silu_bwd(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), x = in(c, 1, ct);
  Value s = sigmoid(b, x), one = cst(c, 1.0, x);
  return finish(c, b.mul(g, b.mul(s, b.add(one, b.mul(x, b.sub(one, s))))));
}

std::vector<Value> relu(LowerCtx& c) {
  Value x = in(c, 0, accumulate_type(c.out().elem));
  return finish(c, c.b.max(x, cst(c, 0, x)));
}

std::vector<Value> threshold(LowerCtx& c) {
  // threshold(self, threshold, value): x <= threshold ? value : x
  ElemType ct = accumulate_type(c.out().elem);
  Value x = in(c, 0, ct);
  Value th = c.scalar_like(1, x), v = c.scalar_like(2, x);
  return finish(c, c.b.select(c.b.compare(Compare::LE, x, th), v, x));
}

std::vector<Value> threshold_bwd(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  Value g = in(c, 0, ct), x = in(c, 1, ct);
  Value th = c.scalar_like(2, x);
  return finish(c, c.b.select(c.b.compare(Compare::LE, x, th), cst(c, 0, g), g));
}

std::vector<Value> sigmoid_fwd(LowerCtx& c) { return finish(c, sigmoid(c.b, in(c, 0, float_compute(c)))); }

std::vector<Value> sigmoid_bwd(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), y = in(c, 1, ct);
  return finish(c, c.b.mul(g, c.b.mul(y, c.b.sub(cst(c, 1, y), y))));
}

std::vector<Value> tanh_bwd(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), y = in(c, 1, ct);
  return finish(c, c.b.mul(g, c.b.sub(cst(c, 1, y), c.b.mul(y, y))));
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

std::vector<Value> leaky_relu(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value x = in(c, 0, ct);
  Value slope = c.scalar_like(1, x);
  return finish(c, c.b.select(c.b.compare(Compare::GT, x, cst(c, 0, x)), x, c.b.mul(x, slope)));
}

std::vector<Value> sign(LowerCtx& c) {
  ElemType ct = accumulate_type(c.out().elem);
  if (ct == ElemType::Pred) return {in(c, 0, ct)};
  Value x = in(c, 0, ct);
  if (shlo::is_unsigned_int(ct))  // stablehlo.sign takes signed types only
    return finish(c, c.b.convert(c.b.compare(Compare::NE, x, cst(c, 0, x)), ct));
  if (shlo::is_float(ct)) {
    // CPU: (0 < x) - (x < 0), so sign(NaN) is 0 and sign(-0.0) is +0.0;
    // stablehlo.sign keeps NaN and -0.0.
    Value pos = c.b.convert(c.b.compare(Compare::GT, x, cst(c, 0, x)), ct);
    Value neg = c.b.convert(c.b.compare(Compare::LT, x, cst(c, 0, x)), ct);
    return finish(c, c.b.sub(pos, neg));
  }
  return finish(c, c.b.unary("sign", x));
}

std::vector<Value> logical_not(LowerCtx& c) {
  return finish(c, c.b.unary("not", in(c, 0, ElemType::Pred)));
}

std::vector<Value> bitwise_not(LowerCtx& c) { return {c.b.unary("not", in(c, 0, c.out().elem))}; }

// A complex value is NaN (or infinite) when either part is, and finite when
// both parts are.
std::pair<Value, Value> complex_parts(Builder& b, const Value& z) {
  TensorType pt{z.type.elem == ElemType::C64 ? ElemType::F32 : ElemType::F64, z.type.dims};
  return {b.op("real", {z}, pt), b.op("imag", {z}, pt)};
}

Value is_nan(Builder& b, const Value& x) { return b.compare(Compare::NE, x, x); }

Value is_inf(Builder& b, const Value& x) {
  return b.compare(Compare::EQ, b.unary("abs", x), b.constant(INFINITY, x.type.elem, x.type.dims));
}

Value is_finite(Builder& b, const Value& x) { return b.op("is_finite", {x}, TensorType{ElemType::Pred, x.type.dims}); }

std::vector<Value> isnan(LowerCtx& c) {
  Value x = c.t(0);
  if (shlo::is_complex(x.type.elem)) {
    auto [re, im] = complex_parts(c.b, x);
    return {c.b.binary("or", is_nan(c.b, re), is_nan(c.b, im))};
  }
  if (!shlo::is_float(x.type.elem)) return {c.b.constant(0, ElemType::Pred, c.out().dims)};
  return {is_nan(c.b, x)};
}

// isinf/isposinf/isneginf/isfinite: integers are always finite.
std::vector<Value> inf_test(LowerCtx& c, int sign, bool finite) {
  Value x = c.t(0);
  Builder& b = c.b;
  if (shlo::is_complex(x.type.elem)) {  // isposinf/isneginf refuse complex in the meta function
    auto [re, im] = complex_parts(b, x);
    if (finite) return {b.binary("and", is_finite(b, re), is_finite(b, im))};
    return {b.binary("or", is_inf(b, re), is_inf(b, im))};
  }
  if (!shlo::is_float(x.type.elem)) return {b.constant(finite ? 1 : 0, ElemType::Pred, c.out().dims)};
  if (finite) return {is_finite(b, x)};
  Value pos = b.compare(Compare::EQ, x, b.constant(INFINITY, x.type.elem, x.type.dims));
  Value neg = b.compare(Compare::EQ, x, b.constant(-INFINITY, x.type.elem, x.type.dims));
  if (sign > 0) return {pos};
  if (sign < 0) return {neg};
  return {b.binary("or", pos, neg)};
}

std::vector<Value> reciprocal(LowerCtx& c) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, c.b.div(cst(c, 1, x), x));
}

std::vector<Value> square_like_pow_scalar(LowerCtx& c) {
  // pow.Tensor_Scalar(self, exponent)
  ElemType ct = accumulate_type(c.out().elem);
  Value x = in(c, 0, ct);
  Value e = ew_scalar(c, 1, x);
  return finish(c, powv(c.b, x, e));
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

}  // namespace

void append_elementwise(std::vector<Lowering>& t) {
  t.push_back({"gcd", gcd, {"gcd", "gcd_", "gcd.out"}});
  t.push_back({"lcm", lcm, {"lcm", "lcm_", "lcm.out"}});
  t.push_back({"add", [](LowerCtx& c) { return add_like(c, "add"); }, {"add.Tensor", "add_.Tensor", "add.out"}});
  t.push_back({"sub", [](LowerCtx& c) { return add_like(c, "subtract"); }, {"sub.Tensor", "sub_.Tensor", "sub.out"}});
  t.push_back({"rsub", rsub, {"rsub.Tensor"}});
  t.push_back({"mul", [](LowerCtx& c) {
                 if (c.out().elem == ElemType::Pred) return logical(c, "and");
                 c.full_precision_scalars = true;
                 return binary(c, "multiply");
               },
               {"mul.Tensor", "mul_.Tensor", "mul.out"}});
  t.push_back({"div", div, {"div.Tensor", "div_.Tensor", "div.out", "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode"}});
  t.push_back({"floor_divide", [](LowerCtx& c) { return div_mode(c, "floor"); },
               {"floor_divide", "floor_divide_.Tensor", "floor_divide.out"}});
  t.push_back({"lshift", [](LowerCtx& c) { return shift(c, true); },
               {"__lshift__.Scalar", "__lshift__.Tensor", "__ilshift__.Scalar", "__ilshift__.Tensor",
                "bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor", "bitwise_left_shift.Tensor_out"}});
  t.push_back({"rshift", [](LowerCtx& c) { return shift(c, false); },
               {"__rshift__.Scalar", "__rshift__.Tensor", "__irshift__.Scalar", "__irshift__.Tensor",
                "bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor", "bitwise_right_shift.Tensor_out"}});
  t.push_back({"maximum", [](LowerCtx& c) { return max_min(c, true); }, {"maximum", "maximum.out"}});
  t.push_back({"minimum", [](LowerCtx& c) { return max_min(c, false); }, {"minimum", "minimum.out"}});
  t.push_back({"pow", pow_tt, {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out"}});
  t.push_back({"pow_scalar", square_like_pow_scalar, {"pow.Tensor_Scalar", "pow_.Scalar", "pow.Tensor_Scalar_out"}});
  t.push_back({"pow_scalar_base", pow_scalar_base, {"pow.Scalar", "pow.Scalar_out"}});
  t.push_back({"fmod", fmod, {"fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out"}});
  t.push_back({"remainder", remainder, {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out"}});
  t.push_back({"atan2", [](LowerCtx& c) { return binary(c, "atan2"); }, {"atan2", "atan2_", "atan2.out"}});

  t.push_back({"eq", [](LowerCtx& c) { return compare(c, Compare::EQ); }, {"eq.Tensor", "eq.Scalar", "eq.Tensor_out", "eq.Scalar_out", "eq_.Tensor", "eq_.Scalar"}});
  t.push_back({"ne", [](LowerCtx& c) { return compare(c, Compare::NE); }, {"ne.Tensor", "ne.Scalar", "ne.Tensor_out", "ne.Scalar_out", "ne_.Tensor", "ne_.Scalar"}});
  t.push_back({"lt", [](LowerCtx& c) { return compare(c, Compare::LT); }, {"lt.Tensor", "lt.Scalar", "lt.Tensor_out", "lt.Scalar_out", "lt_.Tensor", "lt_.Scalar"}});
  t.push_back({"le", [](LowerCtx& c) { return compare(c, Compare::LE); }, {"le.Tensor", "le.Scalar", "le.Tensor_out", "le.Scalar_out", "le_.Tensor", "le_.Scalar"}});
  t.push_back({"gt", [](LowerCtx& c) { return compare(c, Compare::GT); }, {"gt.Tensor", "gt.Scalar", "gt.Tensor_out", "gt.Scalar_out", "gt_.Tensor", "gt_.Scalar"}});
  t.push_back({"ge", [](LowerCtx& c) { return compare(c, Compare::GE); }, {"ge.Tensor", "ge.Scalar", "ge.Tensor_out", "ge.Scalar_out", "ge_.Tensor", "ge_.Scalar"}});
  t.push_back({"logical_and", [](LowerCtx& c) { return logical(c, "and"); }, {"logical_and", "logical_and.out", "logical_and_"}});
  t.push_back({"logical_or", [](LowerCtx& c) { return logical(c, "or"); }, {"logical_or", "logical_or.out", "logical_or_"}});
  t.push_back({"logical_xor", [](LowerCtx& c) { return logical(c, "xor"); }, {"logical_xor", "logical_xor.out", "logical_xor_"}});
  t.push_back({"logical_not", logical_not, {"logical_not", "logical_not.out", "logical_not_"}});
  t.push_back({"bitwise_and", [](LowerCtx& c) { return bitwise(c, "and"); }, {"bitwise_and.Tensor", "bitwise_and.Tensor_out", "bitwise_and_.Tensor"}});
  t.push_back({"bitwise_or", [](LowerCtx& c) { return bitwise(c, "or"); }, {"bitwise_or.Tensor", "bitwise_or.Tensor_out", "bitwise_or_.Tensor"}});
  t.push_back({"bitwise_xor", [](LowerCtx& c) { return bitwise(c, "xor"); }, {"bitwise_xor.Tensor", "bitwise_xor.Tensor_out", "bitwise_xor_.Tensor"}});
  t.push_back({"bitwise_not", bitwise_not, {"bitwise_not", "bitwise_not.out", "bitwise_not_"}});
  t.push_back({"where", where, {"where.self", "where.self_out"}});

  // Unary math: float results (integer inputs promote, as on CPU).
  t.push_back({"exp", [](LowerCtx& c) { return unary(c, "exponential"); }, {"exp", "exp_", "exp.out"}});
  t.push_back({"expm1", [](LowerCtx& c) { return unary(c, "exponential_minus_one"); }, {"expm1", "expm1_", "expm1.out"}});
  t.push_back({"log", [](LowerCtx& c) { return unary(c, "log"); }, {"log", "log_", "log.out"}});
  t.push_back({"log1p", [](LowerCtx& c) { return unary(c, "log_plus_one"); }, {"log1p", "log1p_", "log1p.out"}});
  t.push_back({"sqrt", [](LowerCtx& c) { return unary(c, "sqrt"); }, {"sqrt", "sqrt_", "sqrt.out"}});
  t.push_back({"rsqrt", [](LowerCtx& c) { return unary(c, "rsqrt"); }, {"rsqrt", "rsqrt_", "rsqrt.out"}});
  t.push_back({"tanh", [](LowerCtx& c) { return unary(c, "tanh"); }, {"tanh", "tanh_", "tanh.out"}});
  t.push_back({"sin", [](LowerCtx& c) { return unary(c, "sine"); }, {"sin", "sin_", "sin.out"}});
  t.push_back({"cos", [](LowerCtx& c) { return unary(c, "cosine"); }, {"cos", "cos_", "cos.out"}});
  t.push_back({"erf", [](LowerCtx& c) { return finish(c, erf(c.b, in(c, 0, float_compute(c)))); }, {"erf", "erf_", "erf.out"}});
  t.push_back({"sigmoid", sigmoid_fwd, {"sigmoid", "sigmoid_", "sigmoid.out"}});
  t.push_back({"reciprocal", reciprocal, {"reciprocal", "reciprocal_", "reciprocal.out"}});
  t.push_back({"floor", [](LowerCtx& c) { return rounding(c, "floor"); }, {"floor", "floor_", "floor.out"}});
  t.push_back({"ceil", [](LowerCtx& c) { return rounding(c, "ceil"); }, {"ceil", "ceil_", "ceil.out"}});
  t.push_back({"round", [](LowerCtx& c) { return rounding(c, "round_nearest_even"); }, {"round", "round_", "round.out"}});
  t.push_back({"neg", [](LowerCtx& c) { return unary_same(c, "negate"); }, {"neg", "neg_", "neg.out"}});
  t.push_back({"abs", abs, {"abs", "abs_", "abs.out"}});
  t.push_back({"sign", sign, {"sign", "sign_", "sign.out", "sgn", "sgn_", "sgn.out"}});
  t.push_back({"isnan", isnan, {"isnan"}});
  t.push_back({"isinf", [](LowerCtx& c) { return inf_test(c, 0, false); }, {"isinf"}});
  t.push_back({"isposinf", [](LowerCtx& c) { return inf_test(c, 1, false); }, {"isposinf", "isposinf.out"}});
  t.push_back({"isneginf", [](LowerCtx& c) { return inf_test(c, -1, false); }, {"isneginf", "isneginf.out"}});
  t.push_back({"isfinite", [](LowerCtx& c) { return inf_test(c, 0, true); }, {"isfinite"}});

  // Activations and their backwards.
  t.push_back({"relu", relu, {"relu", "relu_"}});
  t.push_back({"gelu", gelu_fwd, {"gelu", "gelu_", "gelu.out"}});
  t.push_back({"gelu_backward", gelu_bwd, {"gelu_backward", "gelu_backward.grad_input"}});
  t.push_back({"silu", silu_fwd, {"silu", "silu_", "silu.out"}});
  t.push_back({"silu_backward", silu_bwd, {"silu_backward", "silu_backward.grad_input"}});
  t.push_back({"threshold", threshold, {"threshold", "threshold_", "threshold.out"}});
  t.push_back({"threshold_backward", threshold_bwd, {"threshold_backward", "threshold_backward.grad_input"}});
  t.push_back({"sigmoid_backward", sigmoid_bwd, {"sigmoid_backward", "sigmoid_backward.grad_input"}});
  t.push_back({"tanh_backward", tanh_bwd, {"tanh_backward", "tanh_backward.grad_input"}});
  t.push_back({"leaky_relu", leaky_relu, {"leaky_relu", "leaky_relu_", "leaky_relu.out"}});
  t.push_back({"clamp", clamp, {"clamp", "clamp_", "clamp.out", "clamp.Tensor", "clamp_.Tensor", "clamp.Tensor_out"}});
  t.push_back({"clamp_min", clamp_min, {"clamp_min", "clamp_min_", "clamp_min.out", "clamp_min.Tensor", "clamp_min_.Tensor", "clamp_min.Tensor_out"}});
  t.push_back({"clamp_max", clamp_max, {"clamp_max", "clamp_max_", "clamp_max.out", "clamp_max.Tensor", "clamp_max_.Tensor", "clamp_max.Tensor_out"}});

  // Optimizer helpers.
  t.push_back({"addcmul", addcmul, {"addcmul", "addcmul_", "addcmul.out"}});
  t.push_back({"addcdiv", addcdiv, {"addcdiv", "addcdiv_", "addcdiv.out"}});
  t.push_back({"lerp", lerp, {"lerp.Scalar", "lerp_.Scalar", "lerp.Scalar_out", "lerp.Tensor", "lerp_.Tensor", "lerp.Tensor_out"}});
  t.push_back({"masked_fill", masked_fill, {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Tensor", "masked_fill_.Tensor"}});
}

}  // namespace ttpu::ops
