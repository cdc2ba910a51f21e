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
    return b.convert(b.reshape(sum_dims(b, v, d.outer), c.out(k).dims), c.out(k).elem);
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


// ---------------------------------------------------------------------------
// embedding_bag: bags are runs of `indices` starting at each offset.
// mode 0 sum, 1 mean, 2 max.

struct Bags {
  int64_t n, nb;
  Value idx;     // [N] s64
  Value bag;     // [N] s64: the bag of each position
  Value member;  // pred [B, N]: position in bag and not padding
};

Bags make_bags(Builder& b, const Value& indices, const Value& offsets, int64_t nb, int64_t padding_idx) {
  Bags r;
  r.n = indices.type.numel();
  r.nb = nb;
  r.idx = b.reshape(b.convert(indices, ElemType::S64), {r.n});
  Value off = b.reshape(b.convert(offsets, ElemType::S64), {offsets.type.numel()});
  int64_t no = off.type.dims[0];
  TensorType grid{ElemType::S64, {r.n, no}};
  Value le = b.compare(shlo::Compare::LE, b.broadcast_in_dim(off, grid.dims, {1}), b.iota(grid, 0));
  // positions past the last used offset (include_last_offset) belong to no bag
  Value used = b.compare(shlo::Compare::LT, b.iota(grid, 1), b.constant_int(nb, ElemType::S64, grid.dims));
  Value cnt = b.reduce(b.convert(b.binary("and", le, used), ElemType::S64), b.constant_int(0, ElemType::S64), {1},
                       Reducer::Add);
  r.bag = b.sub(cnt, b.constant_int(1, ElemType::S64, {r.n}));
  Value in_range = b.constant_int(1, ElemType::Pred, {r.n});
  if (no > nb) {  // include_last_offset: positions from offsets[nb] on are dropped
    Value last = b.reshape(b.slice(off, {nb}, {nb + 1}, {1}), {});
    in_range = b.compare(shlo::Compare::LT, b.iota(TensorType{ElemType::S64, {r.n}}, 0),
                         b.broadcast_in_dim(last, {r.n}, {}));
  }
  Value keep = padding_idx >= 0
                   ? b.compare(shlo::Compare::NE, r.idx, b.constant_int(padding_idx, ElemType::S64, {r.n}))
                   : b.constant_int(1, ElemType::Pred, {r.n});
  keep = b.binary("and", keep, in_range);
  TensorType bn{ElemType::S64, {nb, r.n}};
  Value same = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(r.bag, bn.dims, {1}), b.iota(bn, 0));
  r.member = b.binary("and", same, b.broadcast_in_dim(keep, bn.dims, {1}));
  return r;
}

std::vector<Value> embedding_bag(LowerCtx& c) {
  // _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  //                include_last_offset, padding_idx) -> (output, offset2bag, bag_size, max_indices)
  Builder& b = c.b;
  const TensorType& out = c.out(0);
  int64_t nb = out.dims[0], dd = out.dims[1];
  int64_t mode = c.i(4);
  ElemType acc = accumulate_type(out.elem);
  Value w = b.convert(c.t(0), acc);
  const int64_t rows = c.t(0).type.dims[0];
  c.check_range(c.t(1), 0, rows,
                {false, "Index of input takes value {} which is not in the valid range [0, " + std::to_string(rows) + ")"});
  Bags g = make_bags(b, c.t(1), c.t(2), nb, c.i(8));
  int64_t n = g.n;
  Value bag_size = b.reduce(b.convert(g.member, ElemType::S64), b.constant_int(0, ElemType::S64), {1}, Reducer::Add);
  Value result, maxidx;
  if (n == 0) {
    result = b.constant(0, acc, {nb, dd});
  } else {
    Value rows = b.gather(w, b.reshape(g.idx, {n, 1}), TensorType{acc, {n, dd}},
                          "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1",
                          {1, dd});
    if (c.has(6)) rows = b.mul(rows, b.broadcast_in_dim(b.convert(c.t(6), acc), {n, dd}, {0}));
    if (mode == 2) {
      std::vector<int64_t> grid{nb, n, dd};
      Value m3 = b.broadcast_in_dim(g.member, grid, {0, 1});
      Value r3 = b.broadcast_in_dim(rows, grid, {1, 2});
      Value masked = b.select(m3, r3, b.constant(-INFINITY, acc, grid));
      Value mx = b.reduce(masked, b.constant(-INFINITY, acc), {1}, Reducer::Max);
      // first position holding the maximum
      Value hit = b.binary("and", m3, b.compare(shlo::Compare::EQ, r3, b.broadcast_in_dim(mx, grid, {0, 2})));
      Value pos = b.reduce(b.select(hit, b.iota(TensorType{ElemType::S64, grid}, 1), b.constant_int(n, ElemType::S64, grid)),
                           b.constant_int(n, ElemType::S64), {1}, Reducer::Min);
      Value nonempty = b.compare(shlo::Compare::GT, bag_size, b.constant_int(0, ElemType::S64, {nb}));
      Value ne2 = b.broadcast_in_dim(nonempty, {nb, dd}, {0});
      result = b.select(ne2, mx, b.constant(0, acc, {nb, dd}));
      Value safe = b.min(pos, b.constant_int(n - 1, ElemType::S64, {nb, dd}));
      maxidx = b.select(ne2, b.gather_flat(g.idx, safe), b.constant_int(-1, ElemType::S64, {nb, dd}));
    } else {
      Value m = b.convert(g.member, acc);
      result = b.dot_general(m, rows, {}, {}, {1}, {0}, acc, shlo::Precision::Highest);
      if (mode == 1) {
        Value cnt = b.max(b.convert(bag_size, acc), b.constant(1, acc, {nb}));
        result = b.div(result, b.broadcast_in_dim(cnt, {nb, dd}, {0}));
      }
    }
  }
  std::vector<Value> r{b.convert(result, out.elem)};
  r.push_back(c.out(1).numel() == n ? b.reshape(g.bag, c.out(1).dims) : b.constant_int(0, ElemType::S64, c.out(1).dims));
  int64_t nbs = c.out(2).numel();  // include_last_offset: one per offset, the last empty
  Value bs = nbs > nb ? b.pad(bag_size, b.constant_int(0, ElemType::S64), {0}, {nbs - nb}) : bag_size;
  r.push_back(b.reshape(bs, c.out(2).dims));
  if (mode == 2 && n > 0 && c.out(3).numel() == nb * dd) r.push_back(b.reshape(maxidx, c.out(3).dims));
  else r.push_back(b.constant_int(0, c.out(3).elem, c.out(3).dims));
  return r;
}

// Argument positions: _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
// num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx); _embedding_bag_backward has
// offsets after indices and sparse after mode.
struct BagBwdArgs {
  size_t offset2bag, bag_size, max_indices, num_weights, scale, mode, psw, padding;
};
constexpr BagBwdArgs kDenseBwd{2, 3, 4, 5, 6, 7, 8, 9};
constexpr BagBwdArgs kBagBwd{3, 4, 5, 6, 7, 8, 10, 11};

std::vector<Value> embedding_bag_backward(LowerCtx& c, const BagBwdArgs& a) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t(0), acc);
  int64_t nb = grad.type.dims[0], dd = grad.type.dims[1], nw = out.dims[0];
  int64_t mode = c.i(a.mode), padding_idx = c.i(a.padding);
  shlo::Reducer add = Reducer::Add;
  if (mode == 2) {
    Value mi = b.convert(c.t(a.max_indices), ElemType::S64);
    if (mi.type.numel() != nb * dd) return {b.constant(0, out.elem, out.dims)};
    mi = b.reshape(mi, {nb, dd, 1});
    Value ok = b.compare(shlo::Compare::GE, mi, b.constant_int(0, ElemType::S64, {nb, dd, 1}));
    Value gz = b.select(b.reshape(ok, {nb, dd}), grad, b.constant(0, acc, {nb, dd}));
    Value safe = b.max(mi, b.constant_int(0, ElemType::S64, {nb, dd, 1}));
    Value coords = b.concatenate({safe, b.iota(TensorType{ElemType::S64, {nb, dd, 1}}, 1)}, 2);
    std::string dn = "inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2";
    return {b.convert(b.scatter(b.constant(0, acc, out.dims), coords, gz, dn, &add), out.elem)};
  }
  Value idx = b.reshape(b.convert(c.t(1), ElemType::S64), {c.t(1).type.numel()});
  int64_t n = idx.type.dims[0];
  if (n == 0) return {b.constant(0, out.elem, out.dims)};
  Value bag = b.reshape(b.convert(c.t(a.offset2bag), ElemType::S64), {n});
  Value safe_bag = b.clamp(b.constant_int(0, ElemType::S64, {n}), bag, b.constant_int(nb - 1, ElemType::S64, {n}));
  Value g = b.gather(grad, b.reshape(safe_bag, {n, 1}), TensorType{acc, {n, dd}},
                     "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1",
                     {1, dd});
  Value scale = b.constant(1, acc, {n});
  if (c.has(a.psw)) scale = b.mul(scale, b.convert(b.reshape(c.t(a.psw), {n}), acc));
  if (mode == 1) {
    Value bs = b.convert(b.gather_flat(b.convert(c.t(a.bag_size), ElemType::S64), safe_bag), acc);
    scale = b.div(scale, b.max(bs, b.constant(1, acc, {n})));
  }
  Value keep = b.compare(shlo::Compare::GE, bag, b.constant_int(0, ElemType::S64, {n}));
  if (padding_idx >= 0)
    keep = b.binary("and", keep, b.compare(shlo::Compare::NE, idx, b.constant_int(padding_idx, ElemType::S64, {n})));
  scale = b.select(keep, scale, b.constant(0, acc, {n}));
  std::string dn = "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                   "index_vector_dim = 1";
  Value idx2 = b.reshape(idx, {n, 1});
  if (c.flag(a.scale)) {  // scale_grad_by_freq
    Value counts = b.scatter(b.constant(0, acc, {nw, 1}), idx2, b.convert(b.reshape(keep, {n, 1}), acc), dn, &add);
    Value per = b.reshape(b.gather_flat(b.reshape(counts, {nw}), idx), {n});
    scale = b.div(scale, b.max(per, b.constant(1, acc, {n})));
  }
  g = b.mul(g, b.broadcast_in_dim(scale, {n, dd}, {0}));
  return {b.convert(b.scatter(b.constant(0, acc, out.dims), idx2, g, dn, &add), out.elem)};
}

std::vector<Value> embedding_bag_psw_backward(LowerCtx& c) {
  // _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t(0), acc), w = b.convert(c.t(1), acc);
  int64_t nb = grad.type.dims[0], dd = grad.type.dims[1];
  Value idx = b.reshape(b.convert(c.t(2), ElemType::S64), {c.t(2).type.numel()});
  int64_t n = idx.type.dims[0];
  if (n == 0) return {b.constant(0, out.elem, out.dims)};
  Value bag = b.reshape(b.convert(c.t(4), ElemType::S64), {n});
  Value safe_bag = b.clamp(b.constant_int(0, ElemType::S64, {n}), bag, b.constant_int(nb - 1, ElemType::S64, {n}));
  std::string dn = "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1";
  Value g = b.gather(grad, b.reshape(safe_bag, {n, 1}), TensorType{acc, {n, dd}}, dn, {1, dd});
  Value rows = b.gather(w, b.reshape(idx, {n, 1}), TensorType{acc, {n, dd}}, dn, {1, dd});
  Value r = b.reduce(b.mul(g, rows), b.constant(0, acc), {1}, Reducer::Add);
  Value keep = b.compare(shlo::Compare::GE, bag, b.constant_int(0, ElemType::S64, {n}));
  if (c.i(6) >= 0)
    keep = b.binary("and", keep, b.compare(shlo::Compare::NE, idx, b.constant_int(c.i(6), ElemType::S64, {n})));
  r = b.select(keep, r, b.constant(0, acc, {n}));
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

std::vector<Value> embedding_renorm(LowerCtx& c) {
  // embedding_renorm_(self, indices, max_norm, norm_type): rows named by indices
  // whose p-norm exceeds max_norm are scaled to max_norm / (norm + 1e-7).
  Builder& b = c.b;
  Value w = c.t(0);
  ElemType acc = accumulate_type(w.type.elem);
  int64_t v = w.type.dims.at(0), d = w.type.dims.at(1);
  int64_t n = c.t(1).type.numel();
  if (n == 0 || w.type.numel() == 0) return {w};
  double max_norm = c.d(2), p = c.d(3);
  Value x = b.convert(w, acc);
  Value ax = b.unary("abs", x);
  Value norm;
  if (std::isinf(p)) {
    norm = b.reduce(ax, b.constant(0, acc), {1}, Reducer::Max);
  } else if (p == 1) {
    norm = b.reduce(ax, b.constant(0, acc), {1}, Reducer::Add);
  } else if (p == 2) {
    norm = b.unary("sqrt", b.reduce(b.mul(x, x), b.constant(0, acc), {1}, Reducer::Add));
  } else {
    Value s = b.reduce(b.binary("power", ax, b.constant(p, acc, {v, d})), b.constant(0, acc), {1}, Reducer::Add);
    norm = b.binary("power", s, b.constant(1.0 / p, acc, {v}));
  }
  Value idx = b.reshape(b.convert(c.t(1), ElemType::S64), {n});
  TensorType grid{ElemType::S64, {n, v}};
  Value hit = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(idx, grid.dims, {0}), b.iota(grid, 1));
  Value used = b.reduce(hit, b.constant_int(0, ElemType::Pred), {0}, Reducer::Or);
  Value big = b.binary("and", used, b.compare(shlo::Compare::GT, norm, b.constant(max_norm, acc, {v})));
  Value scale = b.div(b.constant(max_norm, acc, {v}), b.add(norm, b.constant(1e-7, acc, {v})));
  scale = b.select(big, scale, b.constant(1, acc, {v}));
  return {b.convert(b.mul(x, b.broadcast_in_dim(scale, {v, d}, {0})), w.type.elem)};
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

std::vector<Value> renorm(LowerCtx& c) {
  // renorm(self, p, dim, maxnorm): each slice along dim whose p-norm exceeds
  // maxnorm is scaled to maxnorm / (norm + 1e-7). p's value is part of the key.
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value x = b.convert(c.t(0), acc);
  int64_t rank = x.type.rank();
  if (x.type.numel() == 0) return {b.convert(x, out.elem)};
  if (rank == 0) x = b.reshape(x, {1}), rank = 1;
  int64_t dim = wrap_dim(c.i(2), rank);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) dims.push_back(d);
  double p = c.args[1].scalar_value;
  Value ax = b.unary("abs", x), norm;
  int64_t k = x.type.dims[dim];
  if (std::isinf(p)) {
    norm = b.reduce(ax, b.constant(p > 0 ? 0.0 : INFINITY, acc), dims, p > 0 ? Reducer::Max : Reducer::Min);
  } else if (p == 1) {
    norm = b.reduce(ax, b.constant(0, acc), dims, Reducer::Add);
  } else if (p == 2) {
    norm = b.unary("sqrt", b.reduce(b.mul(x, x), b.constant(0, acc), dims, Reducer::Add));
  } else {
    Value s = b.reduce(b.binary("power", ax, b.constant(p, acc, x.type.dims)), b.constant(0, acc), dims, Reducer::Add);
    norm = b.binary("power", s, b.constant(1.0 / p, acc, {k}));
  }
  Value maxnorm = b.broadcast_in_dim(c.scalar(3, acc), {k}, {});
  Value scale = b.div(maxnorm, b.add(norm, b.constant(1e-7, acc, {k})));
  scale = b.select(b.compare(shlo::Compare::GT, norm, maxnorm), scale, b.constant(1, acc, {k}));
  Value r = b.mul(x, b.broadcast_in_dim(scale, x.type.dims, {dim}));
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

// ---------------------------------------------------------------------------
// segment_reduce along `axis`: segments given by lengths [lead..., S] or
// offsets [lead..., S+1]; membership mask [lead..., S, n].

struct Segments {
  int64_t a, s, n;
  Value member;  // pred [lead..., S, n]
  Value count;   // s64 [lead..., S]
  std::vector<int64_t> grid;  // lead + [S, n] + rest
};

Segments segments(Builder& b, const Value& data, const Value* lengths, const Value* offsets, int64_t axis) {
  Segments g;
  int64_t rank = data.type.rank();
  g.a = wrap_dim(axis, rank);
  g.n = data.type.dims[g.a];
  Value starts, ends;
  if (lengths) {
    Value l = b.convert(*lengths, ElemType::S64);
    g.s = l.type.dims.back();
    int64_t lr = l.type.rank();
    std::vector<int64_t> sq = l.type.dims;
    sq.push_back(g.s);
    std::vector<int64_t> map_t;
    for (int64_t d = 0; d + 1 < lr; ++d) map_t.push_back(d);
    map_t.push_back(lr);
    TensorType it{ElemType::S64, sq};
    Value le = b.compare(shlo::Compare::LE, b.iota(it, lr), b.iota(it, lr - 1));  // t <= s
    Value lt = b.select(le, b.broadcast_in_dim(l, sq, map_t), b.constant_int(0, ElemType::S64, sq));
    ends = b.reduce(lt, b.constant_int(0, ElemType::S64), {lr}, Reducer::Add);
    starts = b.sub(ends, l);
  } else {
    Value o = b.convert(*offsets, ElemType::S64);
    int64_t orank = o.type.rank();
    g.s = o.type.dims.back() - 1;
    std::vector<int64_t> st(orank, 0), lim = o.type.dims, str(orank, 1);
    lim.back() = g.s;
    starts = b.slice(o, st, lim, str);
    st.back() = 1;
    lim.back() = g.s + 1;
    ends = b.slice(o, st, lim, str);
  }
  std::vector<int64_t> mdims = starts.type.dims;
  mdims.push_back(g.n);
  std::vector<int64_t> smap;
  for (int64_t d = 0; d < starts.type.rank(); ++d) smap.push_back(d);
  Value j = b.iota(TensorType{ElemType::S64, mdims}, starts.type.rank());
  g.member = b.binary("and", b.compare(shlo::Compare::LE, b.broadcast_in_dim(starts, mdims, smap), j),
                      b.compare(shlo::Compare::LT, j, b.broadcast_in_dim(ends, mdims, smap)));
  g.count = b.reduce(b.convert(g.member, ElemType::S64), b.constant_int(0, ElemType::S64), {starts.type.rank()},
                     Reducer::Add);
  g.grid = std::vector<int64_t>(data.type.dims.begin(), data.type.dims.begin() + g.a);
  g.grid.push_back(g.s);
  g.grid.push_back(g.n);
  for (int64_t d = g.a + 1; d < rank; ++d) g.grid.push_back(data.type.dims[d]);
  return g;
}

// Broadcasts into the segment grid: data-like [lead, n, rest], out-like [lead, S, rest], mask [lead, S, n].
Value from_data(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d < g.a ? d : d + 1);
  return b.broadcast_in_dim(v, g.grid, m);
}
Value from_out(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d <= g.a ? d : d + 1);
  return b.broadcast_in_dim(v, g.grid, m);
}
Value from_mask(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d);
  return b.broadcast_in_dim(v, g.grid, m);
}

std::vector<Value> segment_reduce(LowerCtx& c) {
  // segment_reduce(data, reduce, lengths?, indices?, offsets?, axis, unsafe, initial?)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value data = b.convert(c.t(0), acc);
  const std::string& red = c.str(1);
  Value lengths, offsets;
  if (c.has(2)) lengths = c.t(2);
  else offsets = c.t(4);
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Segments g = segments(b, data, c.has(2) ? &lengths : nullptr, c.has(2) ? nullptr : &offsets, c.i(5));
  Value mb = from_mask(b, g.member, g), db = from_data(b, data, g);
  bool has_init = c.has(7);
  Reducer r = red == "max" ? Reducer::Max : red == "min" ? Reducer::Min : red == "prod" ? Reducer::Mul : Reducer::Add;
  double ident = red == "max" ? -INFINITY : red == "min" ? INFINITY : red == "prod" ? 1.0 : 0.0;
  Value v = b.reduce(b.select(mb, db, b.constant(ident, acc, g.grid)), b.constant(ident, acc), {g.a + 1}, r);
  std::vector<int64_t> od = v.type.dims;
  if (has_init) {
    Value init = b.broadcast_in_dim(c.scalar(7, acc), od, {});
    v = red == "max" ? b.max(v, init) : red == "min" ? b.min(v, init) : red == "prod" ? b.mul(v, init) : b.add(v, init);
  }
  std::vector<int64_t> cmap;
  for (int64_t d = 0; d <= g.a; ++d) cmap.push_back(d);
  Value cnt = b.broadcast_in_dim(b.convert(g.count, acc), od, cmap);
  Value empty = b.compare(shlo::Compare::EQ, cnt, b.constant(0, acc, od));
  if (red == "mean") {
    v = b.div(v, b.max(cnt, b.constant(1, acc, od)));
    if (!has_init) v = b.select(empty, b.constant(NAN, acc, od), v);
  }
  return {b.convert(v, out.elem)};
}

std::vector<Value> segment_reduce_backward(LowerCtx& c) {
  // _segment_reduce_backward(grad, output, data, reduce, lengths?, offsets?, axis, initial?)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t(0), acc), res = b.convert(c.t(1), acc), data = b.convert(c.t(2), acc);
  const std::string& red = c.str(3);
  Value lengths, offsets;
  if (c.has(4)) lengths = c.t(4);
  else offsets = c.t(5);
  if (out.numel() == 0 || grad.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Segments g = segments(b, data, c.has(4) ? &lengths : nullptr, c.has(4) ? nullptr : &offsets, c.i(6));
  Value mb = from_mask(b, g.member, g), db = from_data(b, data, g), gb = from_out(b, grad, g);
  Value zero = b.constant(0, acc, g.grid);
  std::vector<int64_t> od = grad.type.dims, cmap;
  for (int64_t d = 0; d <= g.a; ++d) cmap.push_back(d);
  Value cnt = b.broadcast_in_dim(b.convert(g.count, acc), od, cmap);
  Value contrib;
  if (red == "sum") {
    contrib = b.select(mb, gb, zero);
  } else if (red == "mean") {
    contrib = b.select(mb, from_out(b, b.div(grad, b.max(cnt, b.constant(1, acc, od))), g), zero);
  } else if (red == "max" || red == "min") {
    Value ob = from_out(b, res, g);
    Value eq = b.compare(shlo::Compare::EQ, db, ob);
    eq = b.binary("or", eq, b.binary("and", b.compare(shlo::Compare::NE, db, db), b.compare(shlo::Compare::NE, ob, ob)));
    eq = b.binary("and", eq, mb);
    Value ties = b.reduce(b.convert(eq, acc), b.constant(0, acc), {g.a + 1}, Reducer::Add);
    Value share = b.div(grad, b.max(ties, b.constant(1, acc, od)));
    contrib = b.select(eq, from_out(b, share, g), zero);
  } else {  // prod: product of the other members (times initial)
    Value isz = b.compare(shlo::Compare::EQ, db, zero);
    Value nzp = b.reduce(b.select(b.binary("and", mb, b.unary("not", isz)), db, b.constant(1, acc, g.grid)),
                         b.constant(1, acc), {g.a + 1}, Reducer::Mul);
    if (c.has(7)) nzp = b.mul(nzp, b.broadcast_in_dim(c.scalar(7, acc), od, {}));
    Value zc = b.reduce(b.convert(b.binary("and", mb, isz), acc), b.constant(0, acc), {g.a + 1}, Reducer::Add);
    Value ob = from_out(b, res, g);
    Value safe = b.select(isz, b.constant(1, acc, g.grid), db);
    Value others = b.select(isz,
                            b.select(b.compare(shlo::Compare::EQ, from_out(b, zc, g), b.constant(1, acc, g.grid)),
                                     from_out(b, nzp, g), zero),
                            b.div(ob, safe));
    contrib = b.select(mb, b.mul(gb, others), zero);
  }
  Value r = b.reduce(contrib, b.constant(0, acc), {g.a}, Reducer::Add);
  return {b.convert(r, out.elem)};
}
}  // namespace

std::vector<Value> group_norm_backward(LowerCtx& c) {
  // native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group, output_mask)
  // Within a group: gi = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * weight.
  Builder& b = c.b;
  const Value& x0 = c.t(1);
  ElemType acc = accumulate_type(x0.type.elem);
  int64_t N = c.i(5), C = c.i(6), HW = c.i(7), G = c.i(8), D = (C / G) * HW;
  TensorType per_c{acc, {N, C, HW}};
  Value g = b.reshape(b.convert(c.t(0), acc), per_c.dims), x = b.reshape(b.convert(x0, acc), per_c.dims);
  auto group_bcast = [&](const Value& v) {  // [N, G] -> [N, C, HW]
    Value r = b.broadcast_in_dim(b.reshape(b.convert(v, acc), {N, G}), {N, G, C / G, HW}, {0, 1});
    return b.reshape(r, per_c.dims);
  };
  Value mean = group_bcast(c.t(2)), rstd = group_bcast(c.t(3));
  Value xhat = b.mul(b.sub(x, mean), rstd);
  std::vector<Value> r;
  if (c.wants(0)) {
    Value gw = c.has(4) ? b.mul(g, b.broadcast_in_dim(b.convert(c.t(4), acc), per_c.dims, {1})) : g;
    auto group_mean = [&](const Value& v) {
      Value s = b.reduce(b.reshape(v, {N, G, D}), b.constant(0, acc), {2}, Reducer::Add);
      return group_bcast(b.div(s, b.constant(static_cast<double>(D), acc, {N, G})));
    };
    Value gi = b.mul(rstd, b.sub(b.sub(gw, group_mean(gw)), b.mul(xhat, group_mean(b.mul(gw, xhat)))));
    r.push_back(b.convert(b.reshape(gi, x0.type.dims), c.out(0).elem));
  } else {
    r.push_back(b.constant(0, c.out(0).elem, c.out(0).dims));
  }
  auto per_channel_sum = [&](const Value& v, size_t k) {
    if (!c.wants(k)) return b.constant(0, c.out(k).elem, c.out(k).dims);
    Value s = b.reduce(v, b.constant(0, acc), {0, 2}, Reducer::Add);
    return b.convert(b.reshape(s, c.out(k).dims), c.out(k).elem);
  };
  r.push_back(per_channel_sum(b.mul(g, xhat), 1));
  r.push_back(per_channel_sum(g, 2));
  return r;
}

void append_nn(std::vector<Lowering>& t) {
  t.push_back({"group_norm_backward", group_norm_backward, {"native_group_norm_backward", "native_group_norm_backward.out"}});
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
  t.push_back({"nll_loss2d_forward", nll_loss2d_forward, {"nll_loss2d_forward", "nll_loss2d_forward.output"}});
  t.push_back({"nll_loss2d_backward", nll_loss2d_backward, {"nll_loss2d_backward", "nll_loss2d_backward.grad_input"}});
  t.push_back({"segment_reduce", segment_reduce, {"segment_reduce", "segment_reduce.out"}});
  t.push_back({"segment_reduce_backward", segment_reduce_backward,
               {"_segment_reduce_backward", "_segment_reduce_backward.out"}});
  t.push_back({"renorm", renorm, {"renorm", "renorm_", "renorm.out"}, kScalarValuesInKey});
  t.push_back({"embedding_renorm", embedding_renorm, {"embedding_renorm_", "embedding_renorm", "embedding_renorm.out"}});
  t.push_back({"embedding_bag", embedding_bag, {"_embedding_bag", "_embedding_bag_forward_only", "_embedding_bag.out",
                                                 "_embedding_bag_forward_only.out"}});
  t.push_back({"embedding_bag_dense_backward", [](LowerCtx& c) { return embedding_bag_backward(c, kDenseBwd); },
               {"_embedding_bag_dense_backward", "_embedding_bag_dense_backward.out"}});
  t.push_back({"embedding_bag_backward", [](LowerCtx& c) { return embedding_bag_backward(c, kBagBwd); },
               {"_embedding_bag_backward"}, 0, [](LowerCtx& c) {
                 const TensorType& g = c.t(0).type;
                 return std::vector<TensorType>{TensorType{g.elem, {c.i(6), g.dims.at(1)}}};
               }});
  t.push_back({"embedding_bag_psw_backward", embedding_bag_psw_backward,
               {"_embedding_bag_per_sample_weights_backward", "_embedding_bag_per_sample_weights_backward.out"}});
}

}  // namespace ttpu::ops
