// Embedding tables: the dense embedding backward, embedding_renorm_, and
// embedding_bag (sum/mean/max bags given by offsets, per-sample weights,
// padding_idx) with its backwards. Bags are runs of `indices` starting at
// each offset, so no host sync is needed to form them.

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

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

// _embedding_bag_dense_backward and _embedding_bag_backward (which has offsets
// after indices and sparse after mode): the arguments are read by name.
std::vector<Value> embedding_bag_backward(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t(0), acc);
  int64_t nb = grad.type.dims[0], dd = grad.type.dims[1], nw = out.dims[0];
  int64_t mode = c.i("mode"), padding_idx = c.i("padding_idx");
  shlo::Reducer add = Reducer::Add;
  if (mode == 2) {
    Value mi = b.convert(c.t("maximum_indices"), ElemType::S64);
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
  Value bag = b.reshape(b.convert(c.t("offset2bag"), ElemType::S64), {n});
  Value safe_bag = b.clamp(b.constant_int(0, ElemType::S64, {n}), bag, b.constant_int(nb - 1, ElemType::S64, {n}));
  Value g = b.gather(grad, b.reshape(safe_bag, {n, 1}), TensorType{acc, {n, dd}},
                     "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1",
                     {1, dd});
  Value scale = b.constant(1, acc, {n});
  if (c.has("per_sample_weights")) scale = b.mul(scale, b.convert(b.reshape(c.t("per_sample_weights"), {n}), acc));
  if (mode == 1) {
    Value bs = b.convert(b.gather_flat(b.convert(c.t("bag_size"), ElemType::S64), safe_bag), acc);
    scale = b.div(scale, b.max(bs, b.constant(1, acc, {n})));
  }
  Value keep = b.compare(shlo::Compare::GE, bag, b.constant_int(0, ElemType::S64, {n}));
  if (padding_idx >= 0)
    keep = b.binary("and", keep, b.compare(shlo::Compare::NE, idx, b.constant_int(padding_idx, ElemType::S64, {n})));
  scale = b.select(keep, scale, b.constant(0, acc, {n}));
  std::string dn = "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                   "index_vector_dim = 1";
  Value idx2 = b.reshape(idx, {n, 1});
  if (c.flag("scale_grad_by_freq")) {
    Value counts = b.scatter(b.constant(0, acc, {nw, 1}), idx2, b.convert(b.reshape(keep, {n, 1}), acc), dn, &add);
    Value per = b.reshape(b.gather_flat(b.reshape(counts, {nw}), idx), {n});
    scale = b.div(scale, b.max(per, b.constant(1, acc, {n})));
  }
  g = b.mul(g, b.broadcast_in_dim(scale, {n, dd}, {0}));
  return {b.convert(b.scatter(b.constant(0, acc, out.dims), idx2, g, dn, &add), out.elem)};
}

std::vector<Value> embedding_bag_psw_backward(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t("grad"), acc), w = b.convert(c.t("weight"), acc);
  int64_t nb = grad.type.dims[0], dd = grad.type.dims[1];
  const Value& indices = c.t("indices");
  Value idx = b.reshape(b.convert(indices, ElemType::S64), {indices.type.numel()});
  int64_t n = idx.type.dims[0];
  if (n == 0) return {b.constant(0, out.elem, out.dims)};
  Value bag = b.reshape(b.convert(c.t("offset2bag"), ElemType::S64), {n});
  Value safe_bag = b.clamp(b.constant_int(0, ElemType::S64, {n}), bag, b.constant_int(nb - 1, ElemType::S64, {n}));
  std::string dn = "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1";
  Value g = b.gather(grad, b.reshape(safe_bag, {n, 1}), TensorType{acc, {n, dd}}, dn, {1, dd});
  Value rows = b.gather(w, b.reshape(idx, {n, 1}), TensorType{acc, {n, dd}}, dn, {1, dd});
  Value r = b.reduce(b.mul(g, rows), b.constant(0, acc), {1}, Reducer::Add);
  Value keep = b.compare(shlo::Compare::GE, bag, b.constant_int(0, ElemType::S64, {n}));
  if (int64_t padding_idx = c.i("padding_idx"); padding_idx >= 0)
    keep = b.binary("and", keep, b.compare(shlo::Compare::NE, idx, b.constant_int(padding_idx, ElemType::S64, {n})));
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

std::vector<Value> embedding_dense_backward(LowerCtx& c) {
  // embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
  Builder& b = c.b;
  const TensorType& out = c.out();
  int64_t width = out.dims.at(1);
  ElemType acc = accumulate_type(out.elem);
  Value idx = b.reshape(b.convert(c.t(1), ElemType::S64), {c.t(1).type.numel()});
  int64_t m = idx.type.dims[0];
  Value g = b.reshape(b.convert(c.t(0), acc), {m, width});
  Value keep = b.compare(shlo::Compare::NE, idx, b.constant_int(c.i(3), ElemType::S64, {m}));
  g = b.select(b.broadcast_in_dim(keep, {m, width}, {0}), g, b.constant(0, acc, {m, width}));
  shlo::Reducer add = shlo::Reducer::Add;
  std::string dn = "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                   "index_vector_dim = 1";
  Value idx2 = b.reshape(idx, {m, 1});
  if (c.flag(4)) {  // scale_grad_by_freq: divide each row by how often its index occurs
    Value ones = b.constant(1, acc, {m, 1});
    Value counts = b.scatter(b.constant(0, acc, {out.dims[0], 1}), idx2, ones, dn, &add);
    Value per_row = b.gather(counts, idx2, TensorType{acc, {m, 1}},
                             "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
                             "index_vector_dim = 1",
                             {1, 1});
    g = b.div(g, b.broadcast_in_dim(b.reshape(per_row, {m}), {m, width}, {0}));
  }
  Value grad = b.scatter(b.constant(0, acc, out.dims), idx2, g, dn, &add);
  return {b.convert(grad, out.elem)};
}

}  // namespace

void append_embedding(std::vector<Lowering>& t) {
  t.push_back({"embedding_renorm", embedding_renorm, {"embedding_renorm+"}});
  t.push_back({"embedding_bag", embedding_bag, {"_embedding_bag+", "_embedding_bag_forward_only+"}});
  t.push_back({"embedding_bag_dense_backward", embedding_bag_backward,
               {"_embedding_bag_dense_backward+"}});
  t.push_back({"embedding_bag_backward", embedding_bag_backward,
               {"_embedding_bag_backward"}, 0, [](LowerCtx& c) {
                 const TensorType& g = c.t(0).type;
                 return std::vector<TensorType>{TensorType{g.elem, {c.i("num_weights"), g.dims.at(1)}}};
               }});
  t.push_back({"embedding_bag_psw_backward", embedding_bag_psw_backward,
               {"_embedding_bag_per_sample_weights_backward+"}});
  t.push_back({"embedding_dense_backward", embedding_dense_backward, {"embedding_dense_backward"}});
}

}  // namespace ttpu::ops
