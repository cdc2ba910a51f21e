// Elementwise math on one operand: exp/log families, roots, trigonometric
// and hyperbolic functions and their inverses, rounding, sign and
// classification (isnan, isinf, signbit), logit, nan_to_num. Float math on
// reduced precision and on integers runs in the compute type PyTorch's CPU
// kernels use (f32 for f16/bf16).

#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"
#include "ops/elementwise.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using namespace ew;

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

// abs of a complex tensor is its magnitude (a real result): stablehlo.abs
// takes the complex value itself; converting it to the real result type
// first would keep only the real part.
std::vector<Value> abs(LowerCtx& c) {
  Value x = c.t(0);
  if (shlo::is_complex(x.type.elem)) {
    // hypot of the parts (std::abs): inf over NaN, NaN for a NaN part. XLA's
    // complex abs gives |1 + NaN i| = 1.41 and |NaN + inf i| = NaN.
    Parts p = parts(c.b, x);
    return finish(c, cabs_c99(c.b, p.re, p.im));
  }
  if (shlo::is_unsigned_int(c.out().elem)) return {in(c, 0, c.out().elem)};  // |x| of unsigned is x
  return unary_same(c, "abs");
}

// round(x, decimals=d) as CPU's kernel computes it, in the op-math type:
// nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d < 0.
// An integer input with d != 0 is refused by the emitter's type check, as
// CPU has no kernel for it.
std::vector<Value> round_decimals(LowerCtx& c) {
  int64_t d = c.i("decimals");
  if (d == 0) return rounding(c, "round_nearest_even");
  Value x = in(c, 0, accumulate_type(c.out().elem));
  Value p = cst(c, std::pow(10.0, static_cast<double>(d < 0 ? -d : d)), x);
  Value r = d > 0 ? c.b.div(c.b.unary("round_nearest_even", c.b.mul(x, p)), p)
                  : c.b.mul(c.b.unary("round_nearest_even", c.b.div(x, p)), p);
  return finish(c, r);
}

// angle: atan2(imag, real) of a complex value; of a real one pi below zero,
// 0 otherwise, NaN kept (CPU's angle_impl).
std::vector<Value> angle(LowerCtx& c) {
  Value x = c.t(0);
  Builder& b = c.b;
  if (shlo::is_complex(x.type.elem)) {
    TensorType pt{part_type(x.type.elem), x.type.dims};
    return finish(c, b.binary("atan2", b.op("imag", {x}, pt), b.op("real", {x}, pt)));
  }
  Value v = in(c, 0, accumulate_type(c.out().elem));
  Value r = b.select(b.compare(Compare::LT, v, cst(c, 0, v)), cst(c, M_PI, v), cst(c, 0, v));
  return finish(c, b.select(isnan(b, v), v, r));
}

// sigmoid; of a complex value as CPU's kernel: 1 / (1 + exp(-z)).
std::vector<Value> sigmoid_fwd(LowerCtx& c) {
  Value x = in(c, 0, float_compute(c));
  if (!shlo::is_complex(x.type.elem)) return finish(c, sigmoid(c.b, x));
  Value one = cst(c, 1, x);
  return finish(c, cdiv_smith(c.b, one, c.b.add(one, cexp_c99(c.b, neg(c.b, x)))));
}

Value is_finite(Builder& b, const Value& x);

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
  if (shlo::is_complex(ct)) {
    // CPU's element-at-a-time kernel divides z by (|z|, 0) as complex
    // numbers: an infinite or NaN |z| gives NaN in both parts
    // (stablehlo.sign gives (nan, -0) for inf-2j). CPU's vectorised loop
    // divides part by part instead ((0, nan) for 0+infj), so CPU's own answer
    // for infinities depends on an element's position; we give the former.
    auto [re, im] = parts(c.b, x);
    Value mag = cabs_c99(c.b, re, im);
    Value nan_part = c.b.constant(std::nan(""), re.type.elem, x.type.dims);
    Value nan = c.b.op("complex", {nan_part, nan_part}, x.type);
    return finish(c, c.b.select(is_finite(c.b, mag), c.b.unary("sign", x), nan));
  }
  return finish(c, c.b.unary("sign", x));
}

// A complex value is NaN (or infinite) when either part is, and finite when
// both parts are.
Value is_finite(Builder& b, const Value& x) { return b.op("is_finite", {x}, TensorType{ElemType::Pred, x.type.dims}); }

std::vector<Value> isnan_op(LowerCtx& c) {
  Value x = c.t(0);
  if (shlo::is_complex(x.type.elem)) {
    auto [re, im] = parts(c.b, x);
    return {c.b.binary("or", isnan(c.b, re), isnan(c.b, im))};
  }
  if (!shlo::is_float(x.type.elem)) return {c.b.constant(0, ElemType::Pred, c.out().dims)};
  return {isnan(c.b, x)};
}

// isinf/isposinf/isneginf/isfinite: integers are always finite.
std::vector<Value> inf_test(LowerCtx& c, int sign, bool finite) {
  Value x = c.t(0);
  Builder& b = c.b;
  if (shlo::is_complex(x.type.elem)) {  // isposinf/isneginf refuse complex in the meta function
    auto [re, im] = parts(b, x);
    if (finite) return {b.binary("and", is_finite(b, re), is_finite(b, im))};
    return {b.binary("or", isinf(b, re), isinf(b, im))};
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
  return finish(c, divide(c.b, cst(c, 1, x), x));
}

// A unary op whose complex form follows glibc's special values (complex_math.cc).
std::vector<Value> complex_or(LowerCtx& c, const char* op, UnaryMath complex_fn) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, shlo::is_complex(x.type.elem) ? complex_fn(c.b, x) : c.b.unary(op, x));
}
// CPU's complex rsqrt: 1 / sqrt(z), Smith's division.
Value crsqrt(Builder& b, const Value& z) { return cdiv_smith(b, k(b, 1, z), csqrt_c99(b, z)); }

// CPU's complex expm1 (c10): (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y, accurate near 0,
// with that formula's special values (expm1(1e8 + 0i) = inf + nan i: inf * sin 0).
Value cexpm1_c10(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Value a = b.unary("sine", b.mul(p.im, k(b, 0.5, p.im)));
  Value re = b.sub(b.mul(b.unary("exponential_minus_one", p.re), b.unary("cosine", p.im)),
                   b.mul(k(b, 2, a), b.mul(a, a)));
  Value im = b.mul(b.unary("exponential", p.re), b.unary("sine", p.im));
  return b.op("complex", {re, im}, z.type);
}

// exp; of a complex value with glibc's special values (cexp_c99).
std::vector<Value> exp_op(LowerCtx& c) {
  Value x = in(c, 0, float_compute(c));
  return finish(c, shlo::is_complex(x.type.elem) ? cexp_c99(c.b, x) : c.b.unary("exponential", x));
}

// A unary op with a real form and a complex one (complex_math.cc).
template <UnaryMath Real, UnaryMath Complex>
std::vector<Value> real_or_complex(LowerCtx& c) {
  Value x = x0(c);
  return as_out(c, shlo::is_complex(x.type.elem) ? Complex(c.b, x) : Real(c.b, x));
}

// sqrt(1 - x^2), sqrt(x^2 + 1), sqrt(x^2 - 1)
Value sqrt_1mx2(Builder& b, const Value& x) { return b.unary("sqrt", b.sub(k(b, 1, x), b.mul(x, x))); }

Value trunc(Builder& b, const Value& x) {
  return where_lt(b, x, k(b, 0, x), b.unary("ceil", x), b.unary("floor", x));
}

Value asin_(Builder& b, const Value& x) { return b.binary("atan2", x, sqrt_1mx2(b, x)); }

Value acos_(Builder& b, const Value& x) { return b.binary("atan2", sqrt_1mx2(b, x), x); }

Value atan_(Builder& b, const Value& x) { return b.binary("atan2", x, k(b, 1, x)); }

Value tan_(Builder& b, const Value& x) { return b.div(b.unary("sine", x), b.unary("cosine", x)); }

Value acosh_(Builder& b, const Value& x) {
  // log(x + sqrt(x^2 - 1)) = log1p((x - 1) + sqrt((x - 1)(x + 1))); large x via log(2x)
  Value xm1 = b.sub(x, k(b, 1, x));
  Value near = b.unary("log_plus_one", b.add(xm1, b.unary("sqrt", b.mul(xm1, b.add(x, k(b, 1, x))))));
  Value large = b.add(b.unary("log", x), k(b, std::log(2.0), x));
  return where_lt(b, x, k(b, 1e8, x), near, large);
}

Value atanh_(Builder& b, const Value& x) {
  // 0.5 * log1p(2x / (1 - x))
  return b.mul(k(b, 0.5, x), b.unary("log_plus_one", b.div(b.mul(k(b, 2, x), x), b.sub(k(b, 1, x), x))));
}

Value log2_(Builder& b, const Value& x) { return b.div(b.unary("log", x), k(b, std::log(2.0), x)); }

Value log10_(Builder& b, const Value& x) { return b.div(b.unary("log", x), k(b, std::log(10.0), x)); }

// log2/log10 of a complex value as c10 computes them: log(z) (glibc's
// values) with each part divided by the real constant (a complex division by
// ln 2 + 0i turns the -inf of log(0) into a NaN imaginary part)
template <int Base>
Value clog_base(Builder& b, const Value& z) {
  Parts p = parts(b, clog_c99(b, z));
  Value d = k(b, std::log(static_cast<double>(Base)), p.re);
  return b.op("complex", {b.div(p.re, d), b.div(p.im, d)}, z.type);
}

Value exp2_(Builder& b, const Value& x) { return b.binary("power", k(b, 2, x), x); }

// exp2 of a complex value: glibc's cexp of z ln 2, each part scaled (a
// complex power 2^z gave exp2(1e10 + 0i) = inf + NaN i where CPU has inf + 0i)
Value cexp2(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Value ln2 = k(b, std::log(2.0), p.re);
  return cexp_c99(b, b.op("complex", {b.mul(p.re, ln2), b.mul(p.im, ln2)}, z.type));
}

Value erfc_(Builder& b, const Value& x) {
  // CHLO's erfc keeps its relative accuracy in the right tail, where 1 - erf(x) is 0
  return b.op("chlo.erfc", {x}, x.type);
}

Value frac_(Builder& b, const Value& x) { return b.sub(x, trunc(b, x)); }

Value sinc_(Builder& b, const Value& x) {
  Value px = b.mul(x, k(b, M_PI, x));
  Value zero = b.compare(Compare::EQ, x, k(b, 0, x));
  Value safe = b.select(zero, k(b, 1, x), px);
  return b.select(zero, k(b, 1, x), b.div(b.unary("sine", safe), safe));
}

Value deg2rad_(Builder& b, const Value& x) { return b.mul(x, k(b, M_PI / 180.0, x)); }

Value rad2deg_(Builder& b, const Value& x) { return b.mul(x, k(b, 180.0 / M_PI, x)); }

// trunc keeps integers as they are.
std::vector<Value> trunc_op(LowerCtx& c) {
  ElemType t = c.out().elem;
  Value x = ew_in(c, 0, accumulate_type(t));
  if (x.type.elem == ElemType::Pred) throw shlo::ElementTypeError("trunc does not take i1 operands");
  return as_out(c, shlo::is_float(t) ? trunc(c.b, x) : x);
}

std::vector<Value> logit(LowerCtx& c) {
  // logit(self, eps?): eps is a compile-time float
  Builder& b = c.b;
  Value x = x0(c);
  if (c.has(1)) x = b.clamp(k(b, c.d(1), x), x, k(b, 1 - c.d(1), x));
  return as_out(c, b.unary("log", b.div(x, b.sub(k(b, 1, x), x))));
}

std::vector<Value> logit_backward(LowerCtx& c) {
  // logit_backward(grad_output, self, eps?): zero outside [eps, 1 - eps]
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value r = b.div(g, b.mul(x, b.sub(k(b, 1, x), x)));
  if (c.has(2)) {
    Value out = b.binary("or", b.compare(Compare::LT, x, k(b, c.d(2), x)), b.compare(Compare::GT, x, k(b, 1 - c.d(2), x)));
    r = b.select(out, k(b, 0, x), r);
  }
  return as_out(c, r);
}

std::vector<Value> conj_physical(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  if (!shlo::is_complex(x.type.elem)) return {x};
  ElemType part = part_type(x.type.elem);
  TensorType pt{part, x.type.dims};
  Value re = b.op("real", {x}, pt), im = b.op("imag", {x}, pt);
  return {b.op("complex", {re, b.unary("negate", im)}, x.type)};
}

std::vector<Value> nan_to_num(LowerCtx& c) {
  // nan_to_num(self, nan?, posinf?, neginf?); integers pass through
  Builder& b = c.b;
  ElemType t = c.out().elem;
  Value x = ew_in(c, 0, t);
  if (shlo::is_complex(t)) {  // each part on its own, as CPU's kernel does
    TensorType pt{part_type(t), x.type.dims};
    auto fix = [&](Value part) {
      double big = pt.elem == ElemType::F32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
      Value r = b.select(isnan(b, part), k(b, c.has(1) ? c.d(1) : 0.0, part), part);
      r = b.select(b.compare(Compare::EQ, part, k(b, INFINITY, part)), k(b, c.has(2) ? c.d(2) : big, part), r);
      return b.select(b.compare(Compare::EQ, part, k(b, -INFINITY, part)), k(b, c.has(3) ? c.d(3) : -big, part), r);
    };
    return {b.op("complex", {fix(b.op("real", {x}, pt)), fix(b.op("imag", {x}, pt))}, x.type)};
  }
  if (!shlo::is_float(t)) return {x};
  double big = t == ElemType::F16 ? 65504.0 : t == ElemType::BF16 ? 3.3895313892515355e38
               : t == ElemType::F32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
  Value nan = k(b, c.has(1) ? c.d(1) : 0.0, x);
  Value pos = k(b, c.has(2) ? c.d(2) : big, x);
  Value neg = k(b, c.has(3) ? c.d(3) : -big, x);
  Value r = b.select(isnan(b, x), nan, x);
  r = b.select(b.compare(Compare::EQ, x, k(b, INFINITY, x)), pos, r);
  r = b.select(b.compare(Compare::EQ, x, k(b, -INFINITY, x)), neg, r);
  return {r};
}

std::vector<Value> signbit_op(LowerCtx& c) { return {signbit(c.b, c.t(0))}; }

}  // namespace

void append_unary(std::vector<Lowering>& t) {
  // Unary math: float results (integer inputs promote, as on CPU).
  t.push_back({"exp", exp_op, {"exp+"}});
  t.push_back({"expm1", [](LowerCtx& c) { return complex_or(c, "exponential_minus_one", cexpm1_c10); }, {"expm1+"}});
  t.push_back({"log1p", [](LowerCtx& c) { return unary(c, "log_plus_one"); }, {"log1p+"}});
  t.push_back({"sqrt", [](LowerCtx& c) { return complex_or(c, "sqrt", csqrt_c99); }, {"sqrt+"}});
  t.push_back({"rsqrt", [](LowerCtx& c) { return complex_or(c, "rsqrt", crsqrt); }, {"rsqrt+"}});
  t.push_back({"log", [](LowerCtx& c) { return complex_or(c, "log", clog_c99); }, {"log+"}});
  t.push_back({"tanh", [](LowerCtx& c) { return complex_or(c, "tanh", ctanh_c99); }, {"tanh+"}});
  t.push_back({"sin", [](LowerCtx& c) { return complex_or(c, "sine", csin_c99); }, {"sin+"}});
  t.push_back({"cos", [](LowerCtx& c) { return complex_or(c, "cosine", ccos_c99); }, {"cos+"}});
  t.push_back({"erf", [](LowerCtx& c) { return finish(c, erf(c.b, in(c, 0, float_compute(c)))); }, {"erf+"}});
  t.push_back({"sigmoid", sigmoid_fwd, {"sigmoid+"}});
  t.push_back({"reciprocal", reciprocal, {"reciprocal+"}});
  t.push_back({"floor", [](LowerCtx& c) { return rounding(c, "floor"); }, {"floor+"}});
  t.push_back({"ceil", [](LowerCtx& c) { return rounding(c, "ceil"); }, {"ceil+"}});
  t.push_back({"round", [](LowerCtx& c) { return rounding(c, "round_nearest_even"); }, {"round+"}});
  t.push_back({"round_decimals", round_decimals, {"round.decimals+"}});
  t.push_back({"angle", angle, {"angle+"}});
  t.push_back({"neg", [](LowerCtx& c) { return unary_same(c, "negate"); }, {"neg+"}});
  t.push_back({"abs", abs, {"abs+"}});
  t.push_back({"sign", sign, {"sign+", "sgn+"}});
  t.push_back({"isnan", isnan_op, {"isnan"}});
  t.push_back({"isinf", [](LowerCtx& c) { return inf_test(c, 0, false); }, {"isinf"}});
  t.push_back({"isposinf", [](LowerCtx& c) { return inf_test(c, 1, false); }, {"isposinf+"}});
  t.push_back({"isneginf", [](LowerCtx& c) { return inf_test(c, -1, false); }, {"isneginf+"}});
  t.push_back({"isfinite", [](LowerCtx& c) { return inf_test(c, 0, true); }, {"isfinite"}});
  t.push_back({"asin", real_or_complex<asin_, casin_kahan>, {"asin+"}});
  t.push_back({"acos", real_or_complex<acos_, cacos_kahan>, {"acos+"}});
  t.push_back({"atan", real_or_complex<atan_, catan_c99>, {"atan+"}});
  t.push_back({"tan", real_or_complex<tan_, ctan_c99>, {"tan+"}});
  t.push_back({"sinh", real_or_complex<real_sinh, csinh_c99>, {"sinh+"}});
  t.push_back({"cosh", real_or_complex<real_cosh, ccosh_c99>, {"cosh+"}});
  t.push_back({"asinh", real_or_complex<real_asinh, casinh_kahan>, {"asinh+"}});
  t.push_back({"acosh", real_or_complex<acosh_, cacosh_kahan>, {"acosh+"}});
  t.push_back({"atanh", real_or_complex<atanh_, catanh_c99>, {"atanh+"}});
  t.push_back({"log2", real_or_complex<log2_, clog_base<2>>, {"log2+"}});
  t.push_back({"log10", real_or_complex<log10_, clog_base<10>>, {"log10+"}});
  t.push_back({"exp2", real_or_complex<exp2_, cexp2>, {"exp2+"}});
  t.push_back({"erfc", unary_float<erfc_>, {"erfc+"}});
  t.push_back({"frac", unary_float<frac_>, {"frac+"}});
  t.push_back({"sinc", unary_float<sinc_>, {"sinc+"}});
  t.push_back({"deg2rad", unary_float<deg2rad_>, {"deg2rad+"}});
  t.push_back({"rad2deg", unary_float<rad2deg_>, {"rad2deg+"}});
  t.push_back({"trunc", trunc_op, {"trunc+", "fix+"}});
  t.push_back({"logit", logit, {"logit+"}});
  t.push_back({"logit_backward", logit_backward, {"logit_backward+"}});
  t.push_back({"conj_physical", conj_physical, {"conj_physical+"}});
  t.push_back({"nan_to_num", nan_to_num, {"nan_to_num+"}});
  t.push_back({"signbit", signbit_op, {"signbit+"}});
}

}  // namespace ttpu::ops
