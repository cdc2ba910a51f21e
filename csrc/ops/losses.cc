// Loss functions and their backwards: mse, smooth L1 / Huber, binary cross
// entropy, negative log likelihood over [N, C] and [N, C, H, W] (with class
// weights and ignore_index; an out-of-range target raises CPU's IndexError).
// Reductions follow `reduction`: 0 none, 1 mean, 2 sum.

#include <algorithm>
#include <cmath>

#include "ops/lowering.h"
#include "ops/elementwise.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;
using namespace ew;

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

// A target must name a class or be ignore_index (CPU: IndexError).
void check_targets(LowerCtx& c, const Value& target, int64_t classes, int64_t ignore_index) {
  Builder& b = c.b;
  Value t = b.convert(target, ElemType::S64);
  const auto& dims = t.type.dims;
  Value in_range = b.binary("and", b.compare(Compare::GE, t, b.constant_int(0, ElemType::S64, dims)),
                            b.compare(Compare::LT, t, b.constant_int(classes, ElemType::S64, dims)));
  c.check(b.binary("or", in_range, b.compare(Compare::EQ, t, b.constant_int(ignore_index, ElemType::S64, dims))), t,
          {true, "Target {} is out of bounds."});
}

// (output, total_weight) of nll_loss / nll_loss2d from log-probabilities x
// [N, C]: per-row losses -w[t] * x[t], summed or averaged by total weight.
std::vector<Value> nll_outputs(LowerCtx& c, const Value& x, const NllParts& p, int64_t reduction) {
  Builder& b = c.b;
  ElemType acc = x.type.elem;
  Value picked = b.reduce(b.select(p.onehot, x, b.constant(0, acc, x.type.dims)), b.constant(0, acc), {1}, Reducer::Add);
  Value losses = b.unary("negate", b.mul(picked, p.weight));
  Value total_weight = b.reduce(p.weight, b.constant(0, acc), {0}, Reducer::Add);
  Value out = losses;
  if (reduction != 0) {
    out = b.reduce(losses, b.constant(0, acc), {0}, Reducer::Add);
    if (reduction == 1) out = b.div(out, total_weight);
  }
  return {b.convert(b.reshape(out, c.out(0).dims), c.out(0).elem),
          b.convert(b.reshape(total_weight, c.out(1).dims), c.out(1).elem)};
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
  check_targets(c, target, x.type.dims[1], ignore);
  return nll_outputs(c, x, nll_parts(c, x, target, 2, ignore), reduction);
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

// nll_loss2d: [N, C, H, W] with targets [N, H, W]; classes moved last and
// the positions flattened into the batch.
Value classes_last(Builder& b, const Value& x) {
  int64_t rank = x.type.rank();
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < rank; ++d) perm.push_back(d);
  perm.push_back(1);
  Value t = b.transpose(x, perm);
  return b.reshape(t, {x.type.numel() / std::max<int64_t>(x.type.dims[1], 1), x.type.dims[1]});
}

std::vector<Value> nll_loss2d_forward(LowerCtx& c) {
  // nll_loss2d_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem);
  Value x = classes_last(b, b.convert(c.t(0), acc));
  int64_t n = x.type.dims[0];
  Value target = b.reshape(c.t(1), {n});
  int64_t reduction = c.i(3);
  check_targets(c, target, x.type.dims[1], c.i(4));
  return nll_outputs(c, x, nll_parts(c, x, target, 2, c.i(4)), reduction);
}

std::vector<Value> nll_loss2d_backward(LowerCtx& c) {
  // nll_loss2d_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value self = c.t(1);
  Value x = classes_last(b, b.convert(self, acc));
  int64_t n = x.type.dims[0];
  Value target = b.reshape(c.t(2), {n});
  int64_t reduction = c.i(4);
  NllParts p = nll_parts(c, x, target, 3, c.i(5));
  Value g = b.convert(c.t(0), acc);
  Value scale;
  if (reduction == 0) {
    scale = b.reshape(g, {n});
  } else {
    scale = b.broadcast_in_dim(b.reshape(g, {}), {n}, {});
    if (reduction == 1) scale = b.div(scale, b.broadcast_in_dim(b.reshape(b.convert(c.t(6), acc), {}), {n}, {}));
  }
  Value per = b.unary("negate", b.mul(scale, p.weight));
  Value grad = b.select(p.onehot, b.broadcast_in_dim(per, x.type.dims, {0}), b.constant(0, acc, x.type.dims));
  // back to [N, C, H, W]
  int64_t rank = self.type.rank();
  std::vector<int64_t> last_dims{self.type.dims[0]};
  for (int64_t d = 2; d < rank; ++d) last_dims.push_back(self.type.dims[d]);
  last_dims.push_back(self.type.dims[1]);
  std::vector<int64_t> perm{0, rank - 1};
  for (int64_t d = 1; d + 1 < rank; ++d) perm.push_back(d);
  Value r = b.transpose(b.reshape(grad, last_dims), perm);
  return {b.convert(r, c.out().elem)};
}

}  // namespace

void append_losses(std::vector<Lowering>& t) {
  t.push_back({"smooth_l1_loss", smooth_l1<false>, {"smooth_l1_loss+"}});
  t.push_back({"huber_loss", smooth_l1<true>, {"huber_loss+"}});
  t.push_back({"smooth_l1_loss_backward", smooth_l1_backward<false>,
               {"smooth_l1_loss_backward+"}});
  t.push_back({"huber_loss_backward", smooth_l1_backward<true>, {"huber_loss_backward+"}});
  t.push_back({"binary_cross_entropy", binary_cross_entropy, {"binary_cross_entropy+"}});
  t.push_back({"binary_cross_entropy_backward", binary_cross_entropy_backward,
               {"binary_cross_entropy_backward+"}});
  t.push_back({"mse_loss", mse_loss, {"mse_loss+"}});
  t.push_back({"mse_loss_backward", mse_loss_backward, {"mse_loss_backward+"}});
  t.push_back({"nll_loss_forward", nll_loss_forward, {"nll_loss_forward+"}});
  t.push_back({"nll_loss_backward", nll_loss_backward, {"nll_loss_backward+"}});
  t.push_back({"nll_loss2d_forward", nll_loss2d_forward, {"nll_loss2d_forward+"}});
  t.push_back({"nll_loss2d_backward", nll_loss2d_backward, {"nll_loss2d_backward+"}});
}

}  // namespace ttpu::ops
