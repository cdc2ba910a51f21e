// Neural-network lowerings: softmax family and negative log likelihood.
#include <algorithm>
#include <cmath>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

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

// One-hot mask [N, C] of target classes, plus per-sample weights with
// ignore_index applied.
struct NllParts {
  Value onehot;   // pred [N, C]
  Value weight;   // acc [N]: weight[target] * (target != ignore_index)
};

NllParts nll_parts(LowerCtx& c, const Value& input2d, const Value& target1d, size_t weight_arg, int64_t ignore_index) {
  Builder& b = c.b;
  int64_t n = input2d.type.dims[0], classes = input2d.type.dims[1];
  ElemType acc = input2d.type.elem;
  Value tgt = b.convert(target1d, ElemType::S64);
  Value cls = b.iota(TensorType{ElemType::S64, {n, classes}}, 1);
  Value tgt2 = b.broadcast_in_dim(tgt, {n, classes}, {0});
  Value onehot = b.compare(Compare::EQ, cls, tgt2);
  Value valid = b.compare(Compare::NE, tgt, b.constant_int(ignore_index, ElemType::S64, {n}));
  Value w;
  if (c.has(weight_arg)) {
    Value wt = b.broadcast_in_dim(b.convert(c.t(weight_arg), acc), {n, classes}, {1});
    Value zero = b.constant(0, acc, {n, classes});
    w = b.reduce(b.select(onehot, wt, zero), b.constant(0, acc), {1}, Reducer::Add);
  } else {
    w = b.constant(1, acc, {n});
  }
  w = b.select(valid, w, b.constant(0, acc, {n}));
  return {onehot, w};
}

std::vector<Value> nll_loss_forward(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  ElemType acc = accumulate_type(c.out(0).elem);
  x = b.convert(x, acc);
  Value target = c.t(1);
  bool batched = x.type.rank() == 2;
  if (!batched) {
    x = b.reshape(x, {1, x.type.dims[0]});
    target = b.reshape(target, {1});
  }
  int64_t reduction = c.i(3), ignore = c.i(4);
  NllParts p = nll_parts(c, x, target, 2, ignore);
  Value picked = b.reduce(b.select(p.onehot, x, b.constant(0, acc, x.type.dims)), b.constant(0, acc), {1}, Reducer::Add);
  Value losses = b.unary("negate", b.mul(picked, p.weight));
  Value total_weight = b.reduce(p.weight, b.constant(0, acc), {0}, Reducer::Add);
  Value out;
  if (reduction == 0) {
    out = batched ? losses : b.reshape(losses, {});
  } else {
    out = b.reduce(losses, b.constant(0, acc), {0}, Reducer::Add);
    if (reduction == 1) out = b.div(out, total_weight);
  }
  return {b.convert(b.reshape(out, c.out(0).dims), c.out(0).elem),
          b.convert(b.reshape(total_weight, c.out(1).dims), c.out(1).elem)};
}

std::vector<Value> nll_loss_backward(LowerCtx& c) {
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), acc);
  Value x = c.t(1);
  Value target = c.t(2);
  bool batched = x.type.rank() == 2;
  std::vector<int64_t> dims2 = batched ? x.type.dims : std::vector<int64_t>{1, x.type.dims[0]};
  Value x2 = b.reshape(b.convert(x, acc), dims2);
  if (!batched) target = b.reshape(target, {1});
  int64_t reduction = c.i(4), ignore = c.i(5);
  NllParts p = nll_parts(c, x2, target, 3, ignore);
  int64_t n = dims2[0];
  Value scale;  // per-sample upstream gradient [N]
  if (reduction == 0) {
    scale = b.reshape(g, {n});
  } else {
    scale = b.broadcast_in_dim(b.reshape(g, {}), {n}, {});
    if (reduction == 1) {
      Value tw = b.broadcast_in_dim(b.reshape(b.convert(c.t(6), acc), {}), {n}, {});
      scale = b.div(scale, tw);
    }
  }
  Value per_sample = b.unary("negate", b.mul(scale, p.weight));
  Value full = b.broadcast_in_dim(per_sample, dims2, {0});
  Value grad = b.select(p.onehot, full, b.constant(0, acc, dims2));
  return {b.convert(b.reshape(grad, c.out().dims), c.out().elem)};
}

// Layer norm over the trailing dims named by normalized_shape (arg 1).
struct NormDims {
  std::vector<int64_t> reduce;  // normalized dims
  std::vector<int64_t> outer;   // the others
  int64_t count = 1;            // elements per normalized group
};

NormDims norm_dims(const Value& x, size_t normalized_rank) {
  NormDims d;
  int64_t axis = x.type.rank() - static_cast<int64_t>(normalized_rank);
  for (int64_t i = 0; i < x.type.rank(); ++i) {
    if (i >= axis) {
      d.reduce.push_back(i);
      d.count *= x.type.dims[i];
    } else {
      d.outer.push_back(i);
    }
  }
  return d;
}

// Mean over `dims`, broadcast back to x's shape.
Value mean_keep(Builder& b, const Value& x, const NormDims& d) {
  Value s = b.reduce(x, b.constant(0, x.type.elem), d.reduce, Reducer::Add);
  s = b.div(s, b.constant(static_cast<double>(d.count), x.type.elem, s.type.dims));
  return b.broadcast_in_dim(s, x.type.dims, d.outer);
}

// Weight/bias of the normalized shape, broadcast over the outer dims.
Value affine(Builder& b, const Value& w, const Value& like, const NormDims& d) {
  return b.broadcast_in_dim(b.convert(w, like.type.elem), like.type.dims, d.reduce);
}

std::vector<Value> layer_norm(LowerCtx& c) {
  // native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem);
  Value x = b.convert(c.t(0), acc);
  NormDims d = norm_dims(x, c.ints(1).size());
  Value mean = mean_keep(b, x, d);
  Value xc = b.sub(x, mean);
  Value var = mean_keep(b, b.mul(xc, xc), d);
  Value rstd = b.unary("rsqrt", b.add(var, b.constant(c.d(4), acc, var.type.dims)));
  Value y = b.mul(xc, rstd);
  if (c.has(2)) y = b.mul(y, affine(b, c.t(2), y, d));
  if (c.has(3)) y = b.add(y, affine(b, c.t(3), y, d));
  auto stat = [&](const Value& v, size_t k) {
    Value first = b.slice(v, std::vector<int64_t>(v.type.rank(), 0),
                          [&] { auto lim = v.type.dims; for (auto r : d.reduce) lim[r] = 1; return lim; }(),
                          std::vector<int64_t>(v.type.rank(), 1));
    return b.convert(b.reshape(first, c.out(k).dims), c.out(k).elem);
  };
  return {b.convert(y, c.out(0).elem), stat(mean, 1), stat(rstd, 2)};
}

std::vector<Value> layer_norm_backward(LowerCtx& c) {
  // native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem == ElemType::F32 && c.wants(0) ? c.out(0).elem : c.t(1).type.elem);
  Value g = b.convert(c.t(0), acc), x = b.convert(c.t(1), acc);
  NormDims d = norm_dims(x, c.ints(2).size());
  auto stat = [&](size_t k) {
    Value s = b.convert(c.t(k), acc);
    return b.broadcast_in_dim(b.reshape(s, [&] {
                                std::vector<int64_t> dims;
                                for (auto o : d.outer) dims.push_back(x.type.dims[o]);
                                return dims;
                              }()),
                              x.type.dims, d.outer);
  };
  Value mean = stat(3), rstd = stat(4);
  Value xhat = b.mul(b.sub(x, mean), rstd);
  Value gw = c.has(5) ? b.mul(g, affine(b, c.t(5), g, d)) : g;
  Value gi = b.mul(rstd, b.sub(b.sub(gw, mean_keep(b, gw, d)), b.mul(xhat, mean_keep(b, b.mul(gw, xhat), d))));
  auto outer_sum = [&](const Value& v, size_t k) {
    Value s = b.reduce(v, b.constant(0, acc), d.outer, Reducer::Add);
    return b.convert(b.reshape(s, c.out(k).dims), c.out(k).elem);
  };
  Value grad_w = c.wants(1) ? outer_sum(b.mul(g, xhat), 1) : b.constant(0, ElemType::F32, {0});
  Value grad_b = c.wants(2) ? outer_sum(g, 2) : b.constant(0, ElemType::F32, {0});
  return {b.convert(gi, c.out(0).elem), grad_w, grad_b};
}

std::vector<Value> mse_loss(LowerCtx& c) {
  // mse_loss(self, target, reduction)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.t(0).type.dims};
  Value d = b.sub(broadcast_convert(b, c.t(0), full), broadcast_convert(b, c.t(1), full));
  return {b.convert(b.reshape(reduce_loss(b, b.mul(d, d), c.i(2)), c.out().dims), c.out().elem)};
}

std::vector<Value> mse_loss_backward(LowerCtx& c) {
  // mse_loss_backward(grad_output, self, target, reduction)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  TensorType full{acc, c.out().dims};
  Value d = b.sub(broadcast_convert(b, c.t(1), full), broadcast_convert(b, c.t(2), full));
  Value g = broadcast_convert(b, c.t(0), full);
  double scale = c.i(3) == 1 ? 2.0 / std::max<int64_t>(full.numel(), 1) : 2.0;
  return {b.convert(b.mul(b.mul(g, d), b.constant(scale, acc, full.dims)), c.out().elem)};
}

}  // namespace

void append_nn(std::vector<Lowering>& t) {
  t.push_back({"mse_loss", mse_loss, {"mse_loss", "mse_loss.out"}});
  t.push_back({"mse_loss_backward", mse_loss_backward, {"mse_loss_backward", "mse_loss_backward.grad_input"}});
  t.push_back({"layer_norm", layer_norm, {"native_layer_norm"}});
  t.push_back({"layer_norm_backward", layer_norm_backward, {"native_layer_norm_backward"}});
  t.push_back({"softmax", [](LowerCtx& c) { return softmax(c, false); }, {"_softmax", "_softmax.out"}});
  t.push_back({"log_softmax", [](LowerCtx& c) { return softmax(c, true); }, {"_log_softmax", "_log_softmax.out"}});
  t.push_back({"softmax_backward", [](LowerCtx& c) { return softmax_backward(c, false); },
               {"_softmax_backward_data", "_softmax_backward_data.out"}});
  t.push_back({"log_softmax_backward", [](LowerCtx& c) { return softmax_backward(c, true); },
               {"_log_softmax_backward_data", "_log_softmax_backward_data.out"}});
  t.push_back({"nll_loss_forward", nll_loss_forward, {"nll_loss_forward", "nll_loss_forward.output"}});
  t.push_back({"nll_loss_backward", nll_loss_backward, {"nll_loss_backward", "nll_loss_backward.grad_input"}});
}

}  // namespace ttpu::ops
