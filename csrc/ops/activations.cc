// Activation functions and their backwards: relu/threshold, gelu, silu,
// sigmoid/tanh backwards, leaky_relu, prelu, elu, hardtanh, hardsigmoid/hardswish,
// the shrinks, softplus, mish, log_sigmoid, glu, and the softmax family
// (softmax and log_softmax along one dim, accumulated in f32 for f16/bf16).

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"
#include "ops/elementwise.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;
using namespace ew;

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

// The conjugate of a complex derivative (PyTorch's convention for the
// gradients of holomorphic functions: grad * conj(f'(z))); a real one as is.
Value conj_if_complex(Builder& b, const Value& v) {
  if (!shlo::is_complex(v.type.elem)) return v;
  Parts p = parts(b, v);
  return b.op("complex", {p.re, neg(b, p.im)}, v.type);
}

std::vector<Value> sigmoid_bwd(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), y = in(c, 1, ct);
  return finish(c, multiply(c.b, g, conj_if_complex(c.b, multiply(c.b, y, c.b.sub(cst(c, 1, y), y)))));
}

std::vector<Value> tanh_bwd(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value g = in(c, 0, ct), y = in(c, 1, ct);
  return finish(c, multiply(c.b, g, conj_if_complex(c.b, c.b.sub(cst(c, 1, y), multiply(c.b, y, y)))));
}

std::vector<Value> leaky_relu(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value x = in(c, 0, ct);
  Value slope = c.scalar_like(1, x);
  return finish(c, c.b.select(c.b.compare(Compare::GT, x, cst(c, 0, x)), x, c.b.mul(x, slope)));
}

// _prelu_kernel(self, weight): x > 0 ? x : w * x, weight broadcast like a
// second elementwise operand (F.prelu reshapes it to the channel dim).
std::vector<Value> prelu(LowerCtx& c) {
  ElemType ct = float_compute(c);
  Value x = in(c, 0, ct), w = in(c, 1, ct);
  return finish(c, c.b.select(c.b.compare(Compare::GT, x, cst(c, 0, x)), x, c.b.mul(w, x)));
}

// _prelu_kernel_backward(grad, self, weight) -> (grad_self, grad_weight),
// both of the broadcast shape (autograd sums grad_weight to weight's shape).
std::vector<Value> prelu_backward(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = accumulate_type(c.out(0).elem);
  TensorType shape{ct, c.out(0).dims};
  Value g = broadcast_convert(b, c.t(0), shape), x = broadcast_convert(b, c.t(1), shape),
        w = broadcast_convert(b, c.t(2), shape);
  Value pos = b.compare(Compare::GT, x, cst(c, 0, x));
  Value dx = b.select(pos, g, b.mul(w, g)), dw = b.select(pos, cst(c, 0, x), b.mul(x, g));
  return {b.convert(dx, c.out(0).elem), b.convert(dw, c.out(1).elem)};
}

Value softplus(Builder& b, const Value& x) {
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
  return b.add(b.max(x, k(b, 0, x)), b.unary("log_plus_one", b.unary("exponential", neg(b, b.unary("abs", x)))));
}

Value hardsigmoid_(Builder& b, const Value& x) {
  return b.clamp(k(b, 0, x), b.add(b.div(x, k(b, 6, x)), k(b, 0.5, x)), k(b, 1, x));
}

Value hardswish_(Builder& b, const Value& x) { return b.mul(x, hardsigmoid_(b, x)); }

Value mish_(Builder& b, const Value& x) { return b.mul(x, b.unary("tanh", softplus(b, x))); }

Value log_sigmoid_(Builder& b, const Value& x) { return neg(b, softplus(b, neg(b, x))); }

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
  // hardshrink: 0 on [-l, l] else x; softshrink: x -/+ l outside [-l, l]
  // (a NaN lies outside: it propagates, as on CPU)
  Builder& b = c.b;
  Value x = x0(c);
  Value l = c.scalar_like(1, x);
  Value in = b.compare(Compare::LE, b.unary("abs", x), l);
  Value v = Soft ? b.sub(x, b.mul(b.unary("sign", x), l)) : x;
  return as_out(c, b.select(in, k(b, 0, x), v));
}

std::vector<Value> shrink_backward(LowerCtx& c) {
  // hardshrink_backward / softshrink_backward(grad_out, self, lambd): same mask
  Builder& b = c.b;
  Value g = ew_in(c, 0, float_compute(c)), x = ew_in(c, 1, float_compute(c));
  Value in = b.compare(Compare::LE, b.unary("abs", x), c.scalar_like(2, x));
  return as_out(c, b.select(in, k(b, 0, g), g));
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

// Reduce over one dim and broadcast back to x's shape (keepdim + expand).
Value reduce_keep(Builder& b, const Value& x, int64_t dim, Reducer r, double init) {
  Value red = b.reduce(x, b.constant(init, x.type.elem), {dim}, r);
  std::vector<int64_t> mapping;
  for (int i = 0; i < x.type.rank(); ++i)
    if (i != dim) mapping.push_back(i);
  return b.broadcast_in_dim(red, x.type.dims, mapping);
}

std::vector<Value> softmax(LowerCtx& c, bool log) {
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value x = b.convert(c.t(0), acc);
  if (x.type.rank() == 0) {
    return {b.convert(b.constant(log ? 0.0 : 1.0, acc, {}), c.out().elem)};
  }
  int64_t dim = wrap_dim(c.i(1), x.type.rank());
  Value shifted = b.sub(x, reduce_keep(b, x, dim, Reducer::Max, -INFINITY));
  Value e = b.unary("exponential", shifted);
  Value s = reduce_keep(b, e, dim, Reducer::Add, 0);
  Value r = log ? b.sub(shifted, b.unary("log", s)) : b.div(e, s);
  return {b.convert(r, c.out().elem)};
}

std::vector<Value> softmax_backward(LowerCtx& c, bool log) {
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), acc), y = b.convert(c.t(1), acc);
  if (g.type.rank() == 0) return {b.convert(log ? g : b.constant(0, acc, {}), c.out().elem)};
  int64_t dim = wrap_dim(c.i(2), g.type.rank());
  Value r;
  if (log) {
    r = b.sub(g, b.mul(b.unary("exponential", y), reduce_keep(b, g, dim, Reducer::Add, 0)));
  } else {
    r = b.mul(y, b.sub(g, reduce_keep(b, b.mul(g, y), dim, Reducer::Add, 0)));
  }
  return {b.convert(r, c.out().elem)};
}

}  // namespace

void append_activations(std::vector<Lowering>& t) {
  // Activations and their backwards.
  t.push_back({"relu", relu, {"relu", "relu_"}});
  t.push_back({"gelu", gelu_fwd, {"gelu+"}});
  t.push_back({"gelu_backward", gelu_bwd, {"gelu_backward+"}});
  t.push_back({"silu", silu_fwd, {"silu+"}});
  t.push_back({"silu_backward", silu_bwd, {"silu_backward+"}});
  t.push_back({"threshold", threshold, {"threshold+"}});
  t.push_back({"threshold_backward", threshold_bwd, {"threshold_backward+"}});
  t.push_back({"sigmoid_backward", sigmoid_bwd, {"sigmoid_backward+"}});
  t.push_back({"tanh_backward", tanh_bwd, {"tanh_backward+"}});
  t.push_back({"leaky_relu", leaky_relu, {"leaky_relu+"}});
  t.push_back({"prelu", prelu, {"_prelu_kernel"}});
  t.push_back({"prelu_backward", prelu_backward, {"_prelu_kernel_backward"}});
  t.push_back({"elu", elu, {"elu+"}});
  t.push_back({"elu_backward", elu_backward, {"elu_backward+"}});
  t.push_back({"hardtanh", hardtanh, {"hardtanh+"}});
  t.push_back({"hardtanh_backward", hardtanh_backward, {"hardtanh_backward+"}});
  t.push_back({"hardsigmoid", unary_float<hardsigmoid_>, {"hardsigmoid+"}});
  t.push_back({"hardsigmoid_backward", hardsigmoid_backward, {"hardsigmoid_backward+"}});
  t.push_back({"hardswish", unary_float<hardswish_>, {"hardswish+"}});
  t.push_back({"hardswish_backward", hardswish_backward, {"hardswish_backward+"}});
  t.push_back({"hardshrink", shrink<false>, {"hardshrink+"}});
  t.push_back({"softshrink", shrink<true>, {"softshrink+"}});
  t.push_back({"shrink_backward", shrink_backward,
               {"hardshrink_backward+", "softshrink_backward+"}});
  t.push_back({"softplus", softplus_op, {"softplus+"}});
  t.push_back({"softplus_backward", softplus_backward, {"softplus_backward+"}});
  t.push_back({"mish", unary_float<mish_>, {"mish+"}});
  t.push_back({"mish_backward", mish_backward, {"mish_backward"}});
  t.push_back({"log_sigmoid_forward", log_sigmoid_forward, {"log_sigmoid_forward+"}});
  t.push_back({"log_sigmoid_backward", log_sigmoid_backward, {"log_sigmoid_backward+"}});
  t.push_back({"glu", glu, {"glu+"}});
  t.push_back({"glu_backward", glu_backward, {"glu_backward+"}});
  t.push_back({"softmax", [](LowerCtx& c) { return softmax(c, false); }, {"_softmax+"}});
  t.push_back({"log_softmax", [](LowerCtx& c) { return softmax(c, true); }, {"_log_softmax+"}});
  t.push_back({"softmax_backward", [](LowerCtx& c) { return softmax_backward(c, false); },
               {"_softmax_backward_data+"}});
  t.push_back({"log_softmax_backward", [](LowerCtx& c) { return softmax_backward(c, true); },
               {"_log_softmax_backward_data+"}});
}

}  // namespace ttpu::ops
