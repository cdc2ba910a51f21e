// Helpers shared by the elementwise families (arithmetic.cc, unary.cc,
// activations.cc, losses.cc): operand reading and result conversion,
// constants shaped like a value, and the few math functions more than one
// family composes (sigmoid, erf, signbit, isnan).
#pragma once

#include <cmath>

#include "ops/lowering.h"

namespace ttpu::ops::ew {

using shlo::Compare;

inline Value in(LowerCtx& c, size_t i, ElemType compute) { return ew_in(c, i, compute); }

inline Value cst(LowerCtx& c, double v, const Value& like) { return c.b.constant(v, like.type.elem, like.type.dims); }

inline std::vector<Value> finish(LowerCtx& c, const Value& v) { return as_out(c, v); }

inline Value sigmoid(Builder& b, const Value& x) { return b.unary("logistic", x); }

// CHLO's erf approximation saturates below 1 (erf(4.f) = 0.99999982, where
// CPU's is exactly 1, so erf(x).long() differs): in the tails erf is
// computed as 1 - erfc(|x|), whose approximation keeps its accuracy there.
inline Value erf(Builder& b, const Value& x) {
  Value ax = b.unary("abs", x);
  Value tail = b.mul(b.unary("sign", x), b.sub(b.constant(1, x.type.elem, x.type.dims), b.op("chlo.erfc", {ax}, x.type)));
  return b.select(b.compare(Compare::LT, ax, b.constant(1, x.type.elem, x.type.dims)), b.op("chlo.erf", {x}, x.type), tail);
}

inline Value k(Builder& b, double v, const Value& like) { return b.constant(v, like.type.elem, like.type.dims); }

inline Value x0(LowerCtx& c) { return ew_in(c, 0, float_compute(c)); }

inline Value where_lt(Builder& b, const Value& a, const Value& lim, const Value& t, const Value& f) {
  return b.select(b.compare(Compare::LT, a, lim), t, f);
}

inline Value neg(Builder& b, const Value& x) { return b.unary("negate", x); }

inline Value isnan(Builder& b, const Value& x) { return b.compare(Compare::NE, x, x); }
inline Value isinf(Builder& b, const Value& x) {
  return b.compare(Compare::EQ, b.unary("abs", x), b.constant(INFINITY, x.type.elem, x.type.dims));
}

// The real and imaginary parts of a complex value.
struct Parts {
  Value re, im;
};
inline Parts parts(Builder& b, const Value& z) {
  TensorType pt{shlo::part_type(z.type.elem), z.type.dims};
  return {b.op("real", {z}, pt), b.op("imag", {z}, pt)};
}

using UnaryMath = Value (*)(Builder&, const Value&);

template <UnaryMath F>
inline std::vector<Value> unary_float(LowerCtx& c) {
  return as_out(c, F(c.b, x0(c)));
}

inline Value signbit(Builder& b, const Value& x) {
  // the sign bit itself, so -0.0 and -NaN count as negative
  if (!shlo::is_float(x.type.elem)) return b.compare(Compare::LT, x, k(b, 0, x));
  Value f = b.convert(x, ElemType::F32);
  Value bits = b.bitcast(f, TensorType{ElemType::S32, f.type.dims});
  return b.compare(Compare::LT, bits, b.constant_int(0, ElemType::S32, f.type.dims));
}

// |mag| with the sign bit of `sign` (C's copysign, -0 and -NaN included)
inline Value copysign(Builder& b, const Value& mag, const Value& sign) {
  return b.select(signbit(b, sign), neg(b, b.unary("abs", mag)), b.unary("abs", mag));
}

// sinh and cosh of a real value, accurate near 0 (expm1) and without
// overflow before the result does.
inline Value real_sinh(Builder& b, const Value& x) {
  return b.mul(k(b, 0.5, x), b.sub(b.unary("exponential_minus_one", x), b.unary("exponential_minus_one", neg(b, x))));
}
inline Value real_cosh(Builder& b, const Value& x) {
  return b.mul(k(b, 0.5, x), b.add(b.unary("exponential", x), b.unary("exponential", neg(b, x))));
}

// asinh of a real value: sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), and
// log(2|x|) past 1e8 (where x^2 would lose 1 or overflow).
inline Value real_asinh(Builder& b, const Value& x) {
  Value a = b.unary("abs", x), one = k(b, 1, x);
  Value a2 = b.mul(a, a);
  Value small = b.unary("log_plus_one", b.add(a, b.div(a2, b.add(one, b.unary("sqrt", b.add(a2, one))))));
  Value large = b.add(b.unary("log", a), k(b, std::log(2.0), x));
  return copysign(b, where_lt(b, a, k(b, 1e8, x), small, large), x);
}

// Complex arithmetic with CPU's special values (complex_math.cc): C99
// Annex G products and exponentials (glibc), Smith's division (c10::complex).
Value cmul_c99(Builder& b, const Value& x, const Value& y);
Value cexp_c99(Builder& b, const Value& z);
Value cdiv_smith(Builder& b, const Value& x, const Value& y);
Value clog_c99(Builder& b, const Value& z);
Value csqrt_c99(Builder& b, const Value& z);
Value clog1p_c10(Builder& b, const Value& z);
// Complex elementary functions composed from real operations with glibc's
// (C99 Annex G) special values and without intermediate overflow: StableHLO's
// complex sine/tanh lose the imaginary part of sin(1e-10i) and give NaN for
// tan(1e10i).
Value csinh_c99(Builder& b, const Value& z);
Value ccosh_c99(Builder& b, const Value& z);
Value csin_c99(Builder& b, const Value& z);
Value ccos_c99(Builder& b, const Value& z);
Value ctanh_c99(Builder& b, const Value& z);
Value ctan_c99(Builder& b, const Value& z);
Value catanh_c99(Builder& b, const Value& z);
Value catan_c99(Builder& b, const Value& z);
Value casin_kahan(Builder& b, const Value& z);
Value cacos_kahan(Builder& b, const Value& z);
Value casinh_kahan(Builder& b, const Value& z);
Value cacosh_kahan(Builder& b, const Value& z);
Value clogaddexp_cpu(Builder& b, const Value& x, const Value& y);
// sqrt(x^2 + y^2) without overflow or underflow in the squares (C's hypot and
// cabs): inf when either is infinite (over a NaN), NaN otherwise for a NaN.
Value cabs_c99(Builder& b, const Value& x, const Value& y);

Value cmul_naive(Builder& b, const Value& x, const Value& y);

// x * y; complex operands multiply as CPU does (cmul_naive).
inline Value multiply(Builder& b, const Value& x, const Value& y) {
  return shlo::is_complex(x.type.elem) ? cmul_naive(b, x, y) : b.mul(x, y);
}

// x / y; complex operands divide as CPU does (cdiv_smith).
inline Value divide(Builder& b, const Value& x, const Value& y) {
  return shlo::is_complex(x.type.elem) ? cdiv_smith(b, x, y) : b.div(x, y);
}

}  // namespace ttpu::ops::ew
