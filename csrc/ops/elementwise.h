// Helpers shared by the elementwise families (arithmetic.cc, unary.cc,
// activations.cc, losses.cc): operand reading and result conversion,
// constants shaped like a value, and the few math functions more than one
// family composes (sigmoid, erf, signbit, isnan).
#pragma once

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

}  // namespace ttpu::ops::ew
