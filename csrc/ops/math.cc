// More elementwise math, composed from StableHLO primitives: inverse and
// hyperbolic trigonometry, log/exp in other bases, rounding parts, NaN-aware
// min/max, xlogy-style products, and the piecewise activations (elu,
// hardtanh, hardsigmoid/hardswish, shrinks, softplus, mish, log_sigmoid,
// glu) with their backwards. Output shapes and dtypes come from PyTorch's
// meta functions; float math on reduced precision runs in f32 as on CPU.
#include <cmath>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;

Value k(Builder& b, double v, const Value& like) { return b.constant(v, like.type.elem, like.type.dims); }

Value x0(LowerCtx& c) { return ew_in(c, 0, float_compute(c)); }

Value where_lt(Builder& b, const Value& a, const Value& lim, const Value& t, const Value& f) {
  return b.select(b.compare(Compare::LT, a, lim), t, f);
}

Value neg(Builder& b, const Value& x) { return b.unary("negate", x); }

Value isnan(Builder& b, const Value& x) { return b.compare(Compare::NE, x, x); }

// sqrt(1 - x^2), sqrt(x^2 + 1), sqrt(x^2 - 1)
Value sqrt_1mx2(Builder& b, const Value& x) { return b.unary("sqrt", b.sub(k(b, 1, x), b.mul(x, x))); }

Value trunc(Builder& b, const Value& x) {
  return where_lt(b, x, k(b, 0, x), b.unary("ceil", x), b.unary("floor", x));
}

Value softplus(Builder& b, const Value& x) {
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
  return b.add(b.max(x, k(b, 0, x)), b.unary("log_plus_one", b.unary("exponential", neg(b, b.unary("abs", x)))));
}

// --- unary -----------------------------------------------------------------

using UnaryMath = Value (*)(Builder&, const Value&);

template <UnaryMath F>
std::vector<Value> unary_float(LowerCtx& c) {
  return as_out(c, F(c.b, x0(c)));
}

Value asin_(Builder& b, const Value& x) { return b.binary("atan2", x, sqrt_1mx2(b, x)); }
Value acos_(Builder& b, const Value& x) { return b.binary("atan2", sqrt_1mx2(b, x), x); }
Value atan_(Builder& b, const Value& x) { return b.binary("atan2", x, k(b, 1, x)); }
Value tan_(Builder& b, const Value& x) { return b.div(b.unary("sine", x), b.unary("cosine", x)); }
Value sinh_(Builder& b, const Value& x) {
  return b.mul(k(b, 0.5, x), b.sub(b.unary("exponential_minus_one", x), b.unary("exponential_minus_one", neg(b, x))));
}
Value cosh_(Builder& b, const Value& x) {
  return b.mul(k(b, 0.5, x), b.add(b.unary("exponential", x), b.unary("exponential", neg(b, x))));
}
Value asinh_(Builder& b, const Value& x) {
  // sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): accurate near 0; large |x| via log(2|x|)
  Value a = b.unary("abs", x);
  Value a2 = b.mul(a, a);
  Value small = b.unary("log_plus_one", b.add(a, b.div(a2, b.add(k(b, 1, x), b.unary("sqrt", b.add(a2, k(b, 1, x)))))));
  Value large = b.add(b.unary("log", a), k(b, std::log(2.0), x));
  Value r = where_lt(b, a, k(b, 1e8, x), small, large);
  return b.mul(b.unary("sign", x), r);
}
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
Value exp2_(Builder& b, const Value& x) { return b.binary("power", k(b, 2, x), x); }
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
Value hardsigmoid_(Builder& b, const Value& x) {
  return b.clamp(k(b, 0, x), b.add(b.div(x, k(b, 6, x)), k(b, 0.5, x)), k(b, 1, x));
}
Value hardswish_(Builder& b, const Value& x) { return b.mul(x, hardsigmoid_(b, x)); }
Value mish_(Builder& b, const Value& x) { return b.mul(x, b.unary("tanh", softplus(b, x))); }
Value log_sigmoid_(Builder& b, const Value& x) { return neg(b, softplus(b, neg(b, x))); }

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
  ElemType part = x.type.elem == ElemType::C64 ? ElemType::F32 : ElemType::F64;
  TensorType pt{part, x.type.dims};
  Value re = b.op("real", {x}, pt), im = b.op("imag", {x}, pt);
  return {b.op("complex", {re, b.unary("negate", im)}, x.type)};
}

std::vector<Value> nan_to_num(LowerCtx& c) {
  // nan_to_num(self, nan?, posinf?, neginf?); integers pass through
  Builder& b = c.b;
  ElemType t = c.out().elem;
  Value x = ew_in(c, 0, t);
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

// --- binary ----------------------------------------------------------------

std::vector<Value> hypot(LowerCtx& c) {
  Builder& b = c.b;
  Value x = ew_in(c, 0, float_compute(c)), y = ew_in(c, 1, float_compute(c));
  return as_out(c, b.unary("sqrt", b.add(b.mul(x, x), b.mul(y, y))));
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

Value signbit(Builder& b, const Value& x) {
  // the sign bit itself, so -0.0 and -NaN count as negative
  if (!shlo::is_float(x.type.elem)) return b.compare(Compare::LT, x, k(b, 0, x));
  Value f = b.convert(x, ElemType::F32);
  Value bits = b.bitcast(f, TensorType{ElemType::S32, f.type.dims});
  return b.compare(Compare::LT, bits, b.constant_int(0, ElemType::S32, f.type.dims));
}

std::vector<Value> signbit_op(LowerCtx& c) { return {signbit(c.b, c.t(0))}; }

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

// --- activations -----------------------------------------------------------

std::vector<Value> elu(LowerCtx& c) {
  // elu(self, alpha, scale, input_scale)
  Builder& b = c.b;
  Value x = x0(c);
  Value neg = b.mul(c.scalar_like(1, x), b.unary("exponential_minus_one", b.mul(x, c.scalar_like(3, x))));
  Value r = b.select(b.compare(Compare::GT, x, k(b, 0, x)), x, neg);
  return as_out(c, b.mul(r, c.scalar_like(2, x)));
}

std::vector<Value> elu_backward(LowerCtx& c) {
  // elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result)
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 5, float_compute(c));
  Value alpha = c.scalar_like(1, x), scale = c.scalar_like(2, x), in_scale = c.scalar_like(3, x);
  Value neg_slope = c.flag(4) ? b.mul(in_scale, b.add(x, b.mul(alpha, scale)))
                              : b.mul(b.mul(in_scale, b.mul(alpha, scale)), b.unary("exponential", b.mul(x, in_scale)));
  Value pos = b.compare(Compare::GT, x, k(b, 0, x));
  return as_out(c, b.mul(g, b.select(pos, scale, neg_slope)));
}

std::vector<Value> hardtanh(LowerCtx& c) {
  Value x = ew_in(c, 0, accumulate_type(c.out().elem));
  return as_out(c, c.b.clamp(c.scalar_like(1, x), x, c.scalar_like(2, x)));
}

std::vector<Value> hardtanh_backward(LowerCtx& c) {
  // hardtanh_backward(grad_output, self, min, max): pass where min < x < max
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value inside = b.binary("and", b.compare(Compare::GT, x, c.scalar_like(2, x)), b.compare(Compare::LT, x, c.scalar_like(3, x)));
  return as_out(c, b.select(inside, g, k(b, 0, g)));
}

std::vector<Value> hardsigmoid_backward(LowerCtx& c) {
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value inside = b.binary("and", b.compare(Compare::GT, x, k(b, -3, x)), b.compare(Compare::LT, x, k(b, 3, x)));
  return as_out(c, b.select(inside, b.div(g, k(b, 6, g)), k(b, 0, g)));
}

std::vector<Value> hardswish_backward(LowerCtx& c) {
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value mid = b.mul(g, b.add(b.div(x, k(b, 3, x)), k(b, 0.5, x)));
  Value r = where_lt(b, x, k(b, -3, x), k(b, 0, x), b.select(b.compare(Compare::LE, x, k(b, 3, x)), mid, g));
  return as_out(c, r);
}

template <bool Soft>
std::vector<Value> shrink(LowerCtx& c) {
  // hardshrink: x where |x| > l else 0; softshrink: x -/+ l outside [-l, l]
  Builder& b = c.b;
  Value x = x0(c);
  Value l = c.scalar_like(1, x);
  Value out = b.compare(Compare::GT, b.unary("abs", x), l);
  Value v = Soft ? b.sub(x, b.mul(b.unary("sign", x), l)) : x;
  return as_out(c, b.select(out, v, k(b, 0, x)));
}

std::vector<Value> shrink_backward(LowerCtx& c) {
  // hardshrink_backward / softshrink_backward(grad_out, self, lambd): same mask
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value out = b.compare(Compare::GT, b.unary("abs", x), c.scalar_like(2, x));
  return as_out(c, b.select(out, g, k(b, 0, g)));
}

std::vector<Value> softplus_op(LowerCtx& c) {
  // softplus(self, beta, threshold): x where beta*x > threshold
  Builder& b = c.b;
  Value x = x0(c);
  Value beta = c.scalar_like(1, x);
  Value bx = b.mul(x, beta);
  Value r = b.div(softplus(b, bx), beta);
  return as_out(c, b.select(b.compare(Compare::GT, bx, c.scalar_like(2, x)), x, r));
}

std::vector<Value> softplus_backward(LowerCtx& c) {
  // softplus_backward(grad_output, self, beta, threshold)
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value bx = b.mul(x, c.scalar_like(2, x));
  Value s = b.unary("logistic", bx);
  return as_out(c, b.select(b.compare(Compare::GT, bx, c.scalar_like(3, x)), g, b.mul(g, s)));
}

std::vector<Value> mish_backward(LowerCtx& c) {
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value tsp = b.unary("tanh", softplus(b, x));
  Value d = b.add(tsp, b.mul(b.mul(x, b.unary("logistic", x)), b.sub(k(b, 1, x), b.mul(tsp, tsp))));
  return as_out(c, b.mul(g, d));
}

std::vector<Value> log_sigmoid_forward(LowerCtx& c) {
  // (output, buffer); our backward does not need the buffer, it is zeros
  Builder& b = c.b;
  Value x = broadcast_convert(b, c.t(0), TensorType{accumulate_type(c.out(0).elem), c.out(0).dims});
  return {b.convert(log_sigmoid_(b, x), c.out(0).elem), b.constant(0, c.out(1).elem, c.out(1).dims)};
}

std::vector<Value> log_sigmoid_backward(LowerCtx& c) {
  // d/dx log(sigmoid(x)) = sigmoid(-x)
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  return as_out(c, b.mul(g, b.unary("logistic", neg(b, x))));
}

// The two halves of x along dim (glu's value and gate).
std::pair<Value, Value> halves(Builder& b, const Value& x, int64_t dim) {
  std::vector<int64_t> start(x.type.rank(), 0), lim = x.type.dims, mid(x.type.rank(), 0), ones(x.type.rank(), 1);
  lim[dim] = x.type.dims[dim] / 2;
  mid[dim] = lim[dim];
  return {b.slice(x, start, lim, ones), b.slice(x, mid, x.type.dims, ones)};
}

std::vector<Value> glu(LowerCtx& c) {
  // glu(self, dim): first half * sigmoid(second half)
  Builder& b = c.b;
  Value x = b.convert(c.t(0), accumulate_type(c.out().elem));
  auto [a, g] = halves(b, x, wrap_dim(c.i(1), x.type.rank()));
  return as_out(c, b.mul(a, b.unary("logistic", g)));
}

std::vector<Value> glu_backward(LowerCtx& c) {
  // glu_backward(grad_output, self, dim) -> grad of self (both halves)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value go = b.convert(c.t(0), acc), x = b.convert(c.t(1), acc);
  int64_t dim = wrap_dim(c.i(2), x.type.rank());
  auto [a, g] = halves(b, x, dim);
  Value s = b.unary("logistic", g);
  Value ga = b.mul(go, s);
  Value gb = b.mul(b.mul(go, a), b.mul(s, b.sub(k(b, 1, s), s)));
  return as_out(c, b.concatenate({ga, gb}, dim));
}

// --- losses ----------------------------------------------------------------

template <bool Huber>
std::vector<Value> smooth_l1(LowerCtx& c) {
  // smooth_l1_loss(self, target, reduction, beta) / huber_loss(self, target, reduction, delta)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.t(0).type.dims};
  Value d = b.unary("abs", b.sub(broadcast_convert(b, c.t(0), full), broadcast_convert(b, c.t(1), full)));
  double p = c.d(3);
  Value l;
  if (!Huber && p == 0) {
    l = d;
  } else {
    Value pk = k(b, p, d);
    Value quad = Huber ? b.mul(k(b, 0.5, d), b.mul(d, d)) : b.div(b.mul(k(b, 0.5, d), b.mul(d, d)), pk);
    Value lin = Huber ? b.mul(pk, b.sub(d, k(b, 0.5 * p, d))) : b.sub(d, k(b, 0.5 * p, d));
    l = where_lt(b, d, pk, quad, lin);
  }
  return {b.convert(b.reshape(reduce_loss(b, l, c.i(2)), c.out().dims), c.out().elem)};
}

template <bool Huber>
std::vector<Value> smooth_l1_backward(LowerCtx& c) {
  // (grad_output, self, target, reduction, beta | delta)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.out().dims};
  Value g = broadcast_convert(b, c.t(0), full);
  Value d = b.sub(broadcast_convert(b, c.t(1), full), broadcast_convert(b, c.t(2), full));
  double p = c.d(4);
  Value sgn = b.unary("sign", d);
  Value r;
  if (!Huber && p == 0) {
    r = sgn;
  } else {
    Value inside = b.compare(Huber ? Compare::LE : Compare::LT, b.unary("abs", d), k(b, p, d));
    r = b.select(inside, Huber ? d : b.div(d, k(b, p, d)), Huber ? b.mul(sgn, k(b, p, d)) : sgn);
  }
  r = b.mul(r, g);
  if (c.i(3) == 1) r = b.div(r, k(b, static_cast<double>(std::max<int64_t>(full.numel(), 1)), r));
  return {b.convert(r, c.out().elem)};
}

std::vector<Value> binary_cross_entropy(LowerCtx& c) {
  // binary_cross_entropy(self, target, weight?, reduction); logs clamped at -100 as on CPU
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.t(0).type.dims};
  Value x = broadcast_convert(b, c.t(0), full), y = broadcast_convert(b, c.t(1), full);
  Value lo = k(b, -100, x);
  Value lx = b.max(b.unary("log", x), lo), l1x = b.max(b.unary("log", b.sub(k(b, 1, x), x)), lo);
  Value l = neg(b, b.add(b.mul(y, lx), b.mul(b.sub(k(b, 1, y), y), l1x)));
  if (c.has(2)) l = b.mul(l, broadcast_convert(b, c.t(2), full));
  return {b.convert(b.reshape(reduce_loss(b, l, c.i(3)), c.out().dims), c.out().elem)};
}

std::vector<Value> binary_cross_entropy_backward(LowerCtx& c) {
  // binary_cross_entropy_backward(grad_output, self, target, weight?, reduction)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.out().dims};
  Value g = broadcast_convert(b, c.t(0), full), x = broadcast_convert(b, c.t(1), full),
        y = broadcast_convert(b, c.t(2), full);
  Value denom = b.max(b.mul(b.sub(k(b, 1, x), x), x), k(b, 1e-12, x));
  Value r = b.div(b.mul(g, b.sub(x, y)), denom);
  if (c.has(3)) r = b.mul(r, broadcast_convert(b, c.t(3), full));
  if (c.i(4) == 1) r = b.div(r, k(b, static_cast<double>(std::max<int64_t>(full.numel(), 1)), r));
  return {b.convert(r, c.out().elem)};
}

}  // namespace

void append_math(std::vector<Lowering>& t) {
  t.push_back({"asin", unary_float<asin_>, {"asin", "asin_", "asin.out"}});
  t.push_back({"acos", unary_float<acos_>, {"acos", "acos_", "acos.out"}});
  t.push_back({"atan", unary_float<atan_>, {"atan", "atan_", "atan.out"}});
  t.push_back({"tan", unary_float<tan_>, {"tan", "tan_", "tan.out"}});
  t.push_back({"sinh", unary_float<sinh_>, {"sinh", "sinh_", "sinh.out"}});
  t.push_back({"cosh", unary_float<cosh_>, {"cosh", "cosh_", "cosh.out"}});
  t.push_back({"asinh", unary_float<asinh_>, {"asinh", "asinh_", "asinh.out"}});
  t.push_back({"acosh", unary_float<acosh_>, {"acosh", "acosh_", "acosh.out"}});
  t.push_back({"atanh", unary_float<atanh_>, {"atanh", "atanh_", "atanh.out"}});
  t.push_back({"log2", unary_float<log2_>, {"log2", "log2_", "log2.out"}});
  t.push_back({"log10", unary_float<log10_>, {"log10", "log10_", "log10.out"}});
  t.push_back({"exp2", unary_float<exp2_>, {"exp2", "exp2_", "exp2.out"}});
  t.push_back({"erfc", unary_float<erfc_>, {"erfc", "erfc_", "erfc.out"}});
  t.push_back({"frac", unary_float<frac_>, {"frac", "frac_", "frac.out"}});
  t.push_back({"sinc", unary_float<sinc_>, {"sinc", "sinc_", "sinc.out"}});
  t.push_back({"deg2rad", unary_float<deg2rad_>, {"deg2rad", "deg2rad_", "deg2rad.out"}});
  t.push_back({"rad2deg", unary_float<rad2deg_>, {"rad2deg", "rad2deg_", "rad2deg.out"}});
  t.push_back({"trunc", trunc_op, {"trunc", "trunc_", "trunc.out", "fix", "fix_", "fix.out"}});
  t.push_back({"logit", logit, {"logit", "logit_", "logit.out"}});
  t.push_back({"logit_backward", logit_backward, {"logit_backward", "logit_backward.grad_input"}});
  t.push_back({"conj_physical", conj_physical, {"conj_physical", "conj_physical_", "conj_physical.out"}});
  t.push_back({"nan_to_num", nan_to_num, {"nan_to_num", "nan_to_num_", "nan_to_num.out"}});
  t.push_back({"signbit", signbit_op, {"signbit", "signbit.out"}});

  t.push_back({"hypot", hypot, {"hypot", "hypot_", "hypot.out"}});
  t.push_back({"logaddexp", logaddexp<0>, {"logaddexp", "logaddexp.out"}});
  t.push_back({"logaddexp2", logaddexp<2>, {"logaddexp2", "logaddexp2.out"}});
  t.push_back({"xlogy", xlogy<false>, {"xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor"}});
  t.push_back({"xlog1py", xlogy<true>, {"special_xlog1py", "special_xlog1py.out"}});
  t.push_back({"fmax", fmax_fmin<true>, {"fmax", "fmax.out"}});
  t.push_back({"fmin", fmax_fmin<false>, {"fmin", "fmin.out"}});
  t.push_back({"copysign", copysign, {"copysign.Tensor", "copysign_.Tensor", "copysign.out"}});
  t.push_back({"heaviside", heaviside, {"heaviside", "heaviside_", "heaviside.out"}});

  t.push_back({"elu", elu, {"elu", "elu_", "elu.out"}});
  t.push_back({"elu_backward", elu_backward, {"elu_backward", "elu_backward.grad_input"}});
  t.push_back({"hardtanh", hardtanh, {"hardtanh", "hardtanh_", "hardtanh.out"}});
  t.push_back({"hardtanh_backward", hardtanh_backward, {"hardtanh_backward", "hardtanh_backward.grad_input"}});
  t.push_back({"hardsigmoid", unary_float<hardsigmoid_>, {"hardsigmoid", "hardsigmoid_", "hardsigmoid.out"}});
  t.push_back({"hardsigmoid_backward", hardsigmoid_backward, {"hardsigmoid_backward", "hardsigmoid_backward.grad_input"}});
  t.push_back({"hardswish", unary_float<hardswish_>, {"hardswish", "hardswish_", "hardswish.out"}});
  t.push_back({"hardswish_backward", hardswish_backward, {"hardswish_backward", "hardswish_backward.out"}});
  t.push_back({"hardshrink", shrink<false>, {"hardshrink", "hardshrink.out"}});
  t.push_back({"softshrink", shrink<true>, {"softshrink", "softshrink.out"}});
  t.push_back({"shrink_backward", shrink_backward,
               {"hardshrink_backward", "hardshrink_backward.grad_input", "softshrink_backward", "softshrink_backward.grad_input"}});
  t.push_back({"softplus", softplus_op, {"softplus", "softplus.out"}});
  t.push_back({"softplus_backward", softplus_backward, {"softplus_backward", "softplus_backward.grad_input"}});
  t.push_back({"mish", unary_float<mish_>, {"mish", "mish_", "mish.out"}});
  t.push_back({"mish_backward", mish_backward, {"mish_backward"}});
  t.push_back({"log_sigmoid_forward", log_sigmoid_forward, {"log_sigmoid_forward", "log_sigmoid_forward.output"}});
  t.push_back({"log_sigmoid_backward", log_sigmoid_backward, {"log_sigmoid_backward", "log_sigmoid_backward.grad_input"}});
  t.push_back({"glu", glu, {"glu", "glu.out"}});
  t.push_back({"glu_backward", glu_backward, {"glu_backward", "glu_backward.grad_input"}});

  t.push_back({"smooth_l1_loss", smooth_l1<false>, {"smooth_l1_loss", "smooth_l1_loss.out"}});
  t.push_back({"huber_loss", smooth_l1<true>, {"huber_loss", "huber_loss.out"}});
  t.push_back({"smooth_l1_loss_backward", smooth_l1_backward<false>,
               {"smooth_l1_loss_backward", "smooth_l1_loss_backward.grad_input"}});
  t.push_back({"huber_loss_backward", smooth_l1_backward<true>, {"huber_loss_backward", "huber_loss_backward.out"}});
  t.push_back({"binary_cross_entropy", binary_cross_entropy, {"binary_cross_entropy", "binary_cross_entropy.out"}});
  t.push_back({"binary_cross_entropy_backward", binary_cross_entropy_backward,
               {"binary_cross_entropy_backward", "binary_cross_entropy_backward.grad_input"}});
}

}  // namespace ttpu::ops
