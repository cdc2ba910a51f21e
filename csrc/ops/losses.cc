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


// multi_margin_loss over [N, C] (a [C] or 0-d input is one sample): per
// sample, sum over classes d != y of w[y] * max(0, margin - x[y] + x[d])^p,
// divided by C. CPU checks every target (RuntimeError "target out of range")
// and refuses a weight of another dtype.
// PyTorch's name of a dtype, for CPU's "expected scalar type" message.
const char* scalar_type_name(ElemType t) {
  switch (t) {
    case ElemType::F64: return "Double";
    case ElemType::F16: return "Half";
    case ElemType::BF16: return "BFloat16";
    case ElemType::S64: return "Long";
    case ElemType::S32: return "Int";
    case ElemType::S16: return "Short";
    case ElemType::S8: return "Char";
    case ElemType::U8: return "Byte";
    case ElemType::Pred: return "Bool";
    case ElemType::C64: return "ComplexFloat";
    case ElemType::C128: return "ComplexDouble";
    default: return "Float";
  }
}

struct MarginParts {
  Value x;       // acc [N, C]
  Value z;       // acc [N, C]: margin - x[y] + x[d]
  Value active;  // pred [N, C]: d != y and z > 0
  Value w;       // acc [N, C]: w[y] broadcast over d (ones without a weight)
  Value onehot;  // pred [N, C]: d == y
};

MarginParts margin_parts(LowerCtx& c, size_t self_arg, ElemType acc) {
  Builder& b = c.b;
  const Value& self = c.t(self_arg);
  int64_t classes = self.type.rank() == 0 ? 1 : self.type.dims.back();
  int64_t n = self.type.rank() == 2 ? self.type.dims[0] : 1;
  std::vector<int64_t> nc{n, classes};
  Value x = b.reshape(b.convert(self, acc), nc);
  Value tgt = b.reshape(b.convert(c.t(self_arg + 1), ElemType::S64), {n});
  c.check_range(tgt, 0, classes, {false, "target out of range"});
  Value onehot = b.compare(Compare::EQ, b.iota(TensorType{ElemType::S64, nc}, 1), b.broadcast_in_dim(tgt, nc, {0}));
  Value zero = b.constant(0, acc, nc);
  Value xt = b.reduce(b.select(onehot, x, zero), b.constant(0, acc), {1}, Reducer::Add);
  Value margin = b.broadcast_in_dim(c.scalar("margin", acc), nc, {});
  Value z = b.add(b.sub(margin, b.broadcast_in_dim(xt, nc, {0})), x);
  Value active = b.binary("and", b.compare(Compare::GT, z, zero), b.unary("not", onehot));
  Value w = b.constant(1, acc, nc);
  if (c.has("weight")) {
    const Value& wt = c.t("weight");
    if (wt.type.elem != self.type.elem)
      throw std::runtime_error(std::string("expected scalar type ") + scalar_type_name(self.type.elem) +
                               " but found " + scalar_type_name(wt.type.elem));
    Value wrow = b.broadcast_in_dim(b.convert(wt, acc), nc, {1});
    Value wy = b.reduce(b.select(onehot, wrow, zero), b.constant(0, acc), {1}, Reducer::Add);
    w = b.broadcast_in_dim(wy, nc, {0});
  }
  return {x, z, active, w, onehot};
}

double margin_power(LowerCtx& c) {
  double p = c.args[c.at("p")].scalar_value;
  if (p != 1 && p != 2) throw std::runtime_error("only p == 1 and p == 2 supported");
  return p;
}

std::vector<Value> multi_margin_loss(LowerCtx& c) {
  // multi_margin_loss(self, target, p, margin, weight?, reduction)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  double p = margin_power(c);
  MarginParts m = margin_parts(c, 0, acc);
  const auto& nc = m.x.type.dims;
  Value h = p == 1 ? m.z : b.mul(m.z, m.z);
  h = b.select(m.active, b.mul(h, m.w), b.constant(0, acc, nc));
  Value per = b.div(b.reduce(h, b.constant(0, acc), {1}, Reducer::Add), b.constant(double(nc[1]), acc, {nc[0]}));
  return {b.convert(b.reshape(reduce_loss(b, per, c.i("reduction")), c.out().dims), c.out().elem)};
}

std::vector<Value> multi_margin_loss_backward(LowerCtx& c) {
  // multi_margin_loss_backward(grad_output, self, target, p, margin, weight?, reduction)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  double p = margin_power(c);
  MarginParts m = margin_parts(c, 1, acc);
  const auto& nc = m.x.type.dims;
  int64_t reduction = c.i("reduction");
  double g = 1.0 / (reduction == 1 ? double(nc[0]) * double(nc[1]) : double(nc[1]));
  Value h = p == 1 ? b.constant(g, acc, nc) : b.mul(b.constant(2 * g, acc, nc), m.z);
  h = b.select(m.active, b.mul(h, m.w), b.constant(0, acc, nc));
  Value to_target = b.reduce(h, b.constant(0, acc), {1}, Reducer::Add);
  Value grad = b.select(m.onehot, b.broadcast_in_dim(neg(b, to_target), nc, {0}), h);
  Value go = b.convert(c.t(0), acc);
  go = reduction == 0 ? b.broadcast_in_dim(b.reshape(go, {nc[0]}), nc, {0})
                      : b.broadcast_in_dim(b.reshape(go, {}), nc, {});
  return {b.convert(b.reshape(b.mul(grad, go), c.out().dims), c.out().elem)};
}

// multilabel_margin_loss over [N, C] with targets [N, C]: each row's classes
// are listed until the first negative entry. Per sample, for each listed
// class j and each class d not listed: max(0, 1 - x[j] + x[d]), summed and
// divided by C; is_target marks the listed classes. CPU checks every target
// entry (listed or not) lies in [-1, C).
struct MultilabelParts {
  Value x;        // acc [N, C]
  Value onehot;   // pred [N, K=C, C]: entry k is listed and names class d
  Value contrib;    // pred [N, K, C]: the hinge of (k, d) is active
  Value z;          // acc [N, K, C]
  Value is_target;  // pred [N, C]: class d is listed
};

MultilabelParts multilabel_parts(LowerCtx& c, size_t self_arg, const Value* is_target_in, ElemType acc) {
  Builder& b = c.b;
  const Value& self = c.t(self_arg);
  int64_t classes = self.type.rank() == 0 ? 1 : self.type.dims.back();
  int64_t n = self.type.rank() == 2 ? self.type.dims[0] : 1;
  std::vector<int64_t> nc{n, classes}, nkc{n, classes, classes};
  Value x = b.reshape(b.convert(self, acc), nc);
  Value t = b.reshape(b.convert(c.t(self_arg + 1), ElemType::S64), nc);
  c.check_range(t, -1, classes, {false, "argument #2 'target' is out of range"});
  Value k_iota = b.iota(TensorType{ElemType::S64, nc}, 1);
  Value first_neg = b.reduce(b.select(b.compare(Compare::LT, t, b.constant_int(0, ElemType::S64, nc)), k_iota,
                                      b.constant_int(classes, ElemType::S64, nc)),
                             b.constant_int(classes, ElemType::S64), {1}, Reducer::Min);
  Value listed = b.compare(Compare::LT, k_iota, b.broadcast_in_dim(first_neg, nc, {0}));  // [N, K]
  Value onehot = b.binary("and", b.compare(Compare::EQ, b.iota(TensorType{ElemType::S64, nkc}, 2),
                                           b.broadcast_in_dim(t, nkc, {0, 1})),
                          b.broadcast_in_dim(listed, nkc, {0, 1}));
  Value is_target = is_target_in
                        ? b.compare(Compare::NE, b.reshape(*is_target_in, nc), b.constant(0, is_target_in->type.elem, nc))
                        : b.reduce(onehot, b.constant_int(0, ElemType::Pred), {1}, Reducer::Or);
  Value xt = b.reduce(b.select(onehot, b.broadcast_in_dim(x, nkc, {0, 2}), b.constant(0, acc, nkc)),
                      b.constant(0, acc), {2}, Reducer::Add);  // x[t_k], [N, K]
  Value z = b.add(b.sub(b.constant(1, acc, nkc), b.broadcast_in_dim(xt, nkc, {0, 1})), b.broadcast_in_dim(x, nkc, {0, 2}));
  Value contrib = b.binary("and", b.compare(Compare::GT, z, b.constant(0, acc, nkc)),
                           b.binary("and", b.broadcast_in_dim(listed, nkc, {0, 1}),
                                    b.broadcast_in_dim(b.unary("not", is_target), nkc, {0, 2})));
  return {x, onehot, contrib, z, is_target};
}

std::vector<Value> multilabel_margin_loss_forward(LowerCtx& c) {
  // multilabel_margin_loss_forward(self, target, reduction) -> (output, is_target)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem);
  MultilabelParts m = multilabel_parts(c, 0, nullptr, acc);
  const auto& nkc = m.z.type.dims;
  Value h = b.select(m.contrib, m.z, b.constant(0, acc, nkc));
  Value per = b.div(b.reduce(h, b.constant(0, acc), {1, 2}, Reducer::Add), b.constant(double(nkc[2]), acc, {nkc[0]}));
  Value is_target = b.convert(m.is_target, c.out(1).elem);
  return {b.convert(b.reshape(reduce_loss(b, per, c.i("reduction")), c.out(0).dims), c.out(0).elem),
          b.reshape(is_target, c.out(1).dims)};
}

std::vector<Value> multilabel_margin_loss_backward(LowerCtx& c) {
  // multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value is_target = c.t("is_target");
  MultilabelParts m = multilabel_parts(c, 1, &is_target, acc);
  const auto& nkc = m.z.type.dims;
  std::vector<int64_t> nc{nkc[0], nkc[2]};
  int64_t reduction = c.i("reduction");
  Value cnt = b.convert(m.contrib, acc);
  Value plus = b.reduce(cnt, b.constant(0, acc), {1}, Reducer::Add);                        // [N, C]: as x[d]
  Value per_k = b.reduce(cnt, b.constant(0, acc), {2}, Reducer::Add);                       // [N, K]: as x[t_k]
  Value minus = b.reduce(b.select(m.onehot, b.broadcast_in_dim(per_k, nkc, {0, 1}), b.constant(0, acc, nkc)),
                         b.constant(0, acc), {1}, Reducer::Add);                            // [N, C]
  double g = 1.0 / (reduction == 1 ? double(nc[0]) * double(nc[1]) : double(nc[1]));
  Value grad = b.mul(b.sub(plus, minus), b.constant(g, acc, nc));
  Value go = b.convert(c.t(0), acc);
  go = reduction == 0 ? b.broadcast_in_dim(b.reshape(go, {nc[0]}), nc, {0})
                      : b.broadcast_in_dim(b.reshape(go, {}), nc, {});
  return {b.convert(b.reshape(b.mul(grad, go), c.out().dims), c.out().elem)};
}

std::vector<TensorType> like_self(LowerCtx& c) { return {c.t("self").type}; }

// CPU's kernels read targets as int64 and refuse any other dtype.
void check_long_target(const TensorType& t) {
  if (t.elem != ElemType::S64)
    throw std::runtime_error(std::string("expected scalar type Long but found ") + scalar_type_name(t.elem));
}

using shlo::fmt_dims;

// CPU's input check shared by both margin losses; returns (samples, classes).
std::pair<int64_t, int64_t> margin_frames(const TensorType& x) {
  int64_t rank = x.rank();
  if (!((rank == 2 && x.dims[1] != 0) || (rank == 1 && x.dims[0] != 0) || rank == 0))
    throw std::runtime_error("Expected non-empty vector or matrix with optional 0-dim batch size, but got: " +
                             fmt_dims(x.dims));
  return {rank <= 1 ? 1 : x.dims[0], rank == 0 ? 1 : x.dims.back()};
}

// CPU's shape checks and result shape: PyTorch's meta function gives [1]
// where CPU gives a 0-d loss (one sample with a 0-d target, reduction none).
std::vector<TensorType> multi_margin_infer(LowerCtx& c) {
  const TensorType& x = c.t("self").type;
  const TensorType& t = c.t("target").type;
  auto [nframe, classes] = margin_frames(x);
  if (t.rank() > 1 || t.numel() != nframe)
    throw std::runtime_error(
        "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
        "size). Expected target size [" + std::to_string(nframe) + "], but got " + fmt_dims(t.dims) +
        ". Input has shape " + fmt_dims(x.dims) + ".");
  if (c.has("weight") && (c.t("weight").type.rank() > 1 || c.t("weight").type.numel() != classes))
    throw std::runtime_error("inconsistent weight size, expected " + std::to_string(classes) + " but got " +
                             fmt_dims(c.t("weight").type.dims));
  check_long_target(t);
  if (c.i("reduction") == 0 && t.rank() > 0) return {TensorType{x.elem, {nframe}}};
  return {TensorType{x.elem, {}}};
}

// The same for multilabel_margin_loss_forward: (output, is_target).
std::vector<TensorType> multilabel_infer(LowerCtx& c) {
  const TensorType& x = c.t("self").type;
  const TensorType& t = c.t("target").type;
  auto [nframe, classes] = margin_frames(x);
  bool ok = x.rank() <= 1 ? (t.rank() <= 1 && t.numel() == classes)
                      : (t.rank() == 2 && t.dims[0] == nframe && t.dims[1] == classes);
  if (!ok)
    throw std::runtime_error("inconsistent target size: " + fmt_dims(t.dims) + " for input of size: " +
                             fmt_dims(x.dims));
  check_long_target(t);
  TensorType is_target{x.elem, t.dims};
  if (c.i("reduction") != 0 || t.rank() <= 1) return {TensorType{x.elem, {}}, is_target};
  return {TensorType{x.elem, {nframe}}, is_target};
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
  t.push_back({"multi_margin_loss", multi_margin_loss, {"multi_margin_loss+"}, kScalarValuesInKey,
               multi_margin_infer});
  t.push_back({"multi_margin_loss_backward", multi_margin_loss_backward, {"multi_margin_loss_backward+"},
               kScalarValuesInKey, like_self});
  t.push_back({"multilabel_margin_loss_forward", multilabel_margin_loss_forward,
               {"multilabel_margin_loss_forward+"}, 0, multilabel_infer});
  t.push_back({"multilabel_margin_loss_backward", multilabel_margin_loss_backward,
               {"multilabel_margin_loss_backward+"}, 0, like_self});
}

}  // namespace ttpu::ops
