// Indexing along one dimension: gather, scatter (overwrite and add),
// index_select. Indices become full coordinate vectors: the indexed dim takes
// the index values, every other dim its own position (iota).
#include <algorithm>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

std::string iota_list(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return shlo::fmt_dims(v);
}

// Coordinates [index..., rank] for gather/scatter along `dim`.
Value coordinates(Builder& b, const Value& index, int64_t dim, int64_t rank) {
  std::vector<int64_t> dims = index.type.dims;
  std::vector<int64_t> with_one = dims;
  with_one.push_back(1);
  std::vector<Value> parts;
  TensorType it{ElemType::S64, dims};
  for (int64_t d = 0; d < rank; ++d) {
    Value c = d == dim ? b.convert(index, ElemType::S64) : b.iota(it, d);
    parts.push_back(b.reshape(c, with_one));
  }
  return b.concatenate(parts, rank);
}

// Negative indices count from the end, as in PyTorch.
Value wrap_negative(Builder& b, const Value& index, int64_t size) {
  Value i = b.convert(index, ElemType::S64);
  Value zero = b.constant_int(0, ElemType::S64, i.type.dims);
  Value n = b.constant_int(size, ElemType::S64, i.type.dims);
  return b.select(b.compare(shlo::Compare::LT, i, zero), b.add(i, n), i);
}

std::vector<Value> gather(LowerCtx& c) {
  // gather(self, dim, index, sparse_grad)
  Builder& b = c.b;
  Value self = c.t(0);
  int64_t rank = self.type.rank();
  if (rank == 0) return {b.reshape(self, c.out().dims)};
  int64_t dim = wrap_dim(c.i(1), rank);
  Value index = wrap_negative(b, c.t(2), self.type.dims[dim]);
  Value coords = coordinates(b, index, dim, rank);
  std::vector<int64_t> ones(rank, 1);
  TensorType out{self.type.elem, index.type.dims};
  std::string dn = "collapsed_slice_dims = " + iota_list(rank) + ", start_index_map = " + iota_list(rank) +
                   ", index_vector_dim = " + std::to_string(rank);
  return {b.gather(self, coords, out, dn, ones)};
}

std::vector<Value> scatter_impl(LowerCtx& c, bool add, bool value_is_scalar) {
  // scatter.src(self, dim, index, src) / scatter.value(self, dim, index, value) / scatter_add(self, dim, index, src)
  Builder& b = c.b;
  Value self = b.convert(c.t(0), c.out().elem);
  int64_t rank = self.type.rank();
  const Value& index_in = c.t(2);
  if (index_in.type.numel() == 0) return {self};
  if (rank == 0) {
    Value upd = value_is_scalar ? c.scalar(3, self.type.elem) : b.reshape(b.convert(c.t(3), self.type.elem), {});
    return {add ? b.add(self, upd) : upd};
  }
  int64_t dim = wrap_dim(c.i(1), rank);
  Value index = wrap_negative(b, index_in, self.type.dims[dim]);
  Value coords = coordinates(b, index, dim, rank);
  Value updates;
  if (value_is_scalar) {
    updates = b.broadcast_in_dim(c.scalar(3, self.type.elem), index.type.dims, {});
  } else {
    Value src = b.convert(c.t(3), self.type.elem);
    std::vector<int64_t> zeros(rank, 0), strides(rank, 1);
    updates = b.slice(src, zeros, index.type.dims, strides);
  }
  std::string dn = "inserted_window_dims = " + iota_list(rank) + ", scatter_dims_to_operand_dims = " +
                   iota_list(rank) + ", index_vector_dim = " + std::to_string(rank);
  shlo::Reducer r = shlo::Reducer::Add;
  return {b.scatter(self, coords, updates, dn, add ? &r : nullptr)};
}

std::vector<Value> index_fill(LowerCtx& c) {
  // index_fill(self, dim, index, value): positions along dim named by index
  // (a mask from comparing them with an iota) take the value.
  Builder& b = c.b;
  Value self = c.t(0);
  if (self.type.rank() == 0) self = b.reshape(self, {1});  // a 0-d tensor fills like a 1-element vector
  int64_t rank = self.type.rank();
  Value value = broadcast_convert(b, c.t(3), self.type);
  int64_t dim = wrap_dim(c.i(1), rank);
  int64_t size = self.type.dims[dim];
  Value index = wrap_negative(b, b.convert(b.reshape(c.t(2), {c.t(2).type.numel()}), ElemType::S64), size);
  int64_t n = index.type.dims[0];
  TensorType grid{ElemType::S64, {n, size}};
  Value hit = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(index, grid.dims, {0}), b.iota(grid, 1));
  Value any = b.reduce(hit, b.constant_int(0, ElemType::Pred), {0}, shlo::Reducer::Or);
  Value mask = b.broadcast_in_dim(any, self.type.dims, {dim});
  return {b.reshape(b.select(mask, value, self), c.out().dims)};
}

std::vector<Value> index_select(LowerCtx& c) {
  // index_select(self, dim, index): whole slices along dim.
  Builder& b = c.b;
  Value self = c.t(0);
  int64_t rank = self.type.rank();
  if (rank == 0) return {b.reshape(self, c.out().dims)};
  int64_t dim = wrap_dim(c.i(1), rank);
  Value index = wrap_negative(b, b.reshape(c.t(2), {c.t(2).type.numel()}), self.type.dims[dim]);
  int64_t n = index.type.dims[0];
  Value idx = b.reshape(index, {n, 1});
  std::vector<int64_t> slice = self.type.dims;
  slice[dim] = 1;
  std::vector<int64_t> offset_dims;
  TensorType out{self.type.elem, {}};
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim) {
      out.dims.push_back(n);
    } else {
      out.dims.push_back(self.type.dims[d]);
      offset_dims.push_back(d);
    }
  }
  std::string dn = "offset_dims = " + shlo::fmt_dims(offset_dims) + ", collapsed_slice_dims = [" +
                   std::to_string(dim) + "], start_index_map = [" + std::to_string(dim) + "], index_vector_dim = 1";
  return {b.gather(self, idx, out, dn, slice)};
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

// Advanced indexing with integer index tensors (Tensor?[] indices): the
// indexed dims take broadcast index tensors; the result puts the broadcast
// dims where PyTorch does (at the first indexed dim when the indexed dims are
// adjacent, else in front).
struct AdvancedIndex {
  std::vector<int64_t> indexed;      // operand dims that are indexed
  std::vector<int64_t> batch;        // broadcast shape of the index tensors
  Value coords;                      // [batch..., k] s64
  std::vector<int64_t> window_dims;  // positions of the non-indexed dims in the result
  std::vector<int64_t> slice_sizes;
};

AdvancedIndex advanced_index(LowerCtx& c, const Value& x, size_t list_arg) {
  Builder& b = c.b;
  const Arg& a = c.args.at(list_arg);
  AdvancedIndex ai;
  std::vector<Value> idx;
  size_t v = 0;
  for (size_t d = 0; d < a.present.size(); ++d) {
    if (!a.present[d]) continue;
    const Value& t = a.values.at(v++);
    if (t.type.elem == ElemType::Pred)
      throw std::runtime_error("indexing with a boolean mask is data-dependent and not lowered yet");
    ai.indexed.push_back(static_cast<int64_t>(d));
    idx.push_back(t);
  }
  // broadcast shape of all index tensors
  for (const auto& t : idx) {
    std::vector<int64_t> out = ai.batch;
    size_t r = std::max(out.size(), t.type.dims.size());
    std::vector<int64_t> res(r, 1);
    for (size_t i = 0; i < r; ++i) {
      int64_t x1 = i < r - out.size() ? 1 : out[i - (r - out.size())];
      int64_t x2 = i < r - t.type.dims.size() ? 1 : t.type.dims[i - (r - t.type.dims.size())];
      if (x1 != x2 && x1 != 1 && x2 != 1) throw std::runtime_error("shape mismatch: indexing tensors could not be broadcast together");
      res[i] = std::max(x1, x2);
    }
    ai.batch = res;
  }
  std::vector<int64_t> with_one = ai.batch;
  with_one.push_back(1);
  std::vector<Value> parts;
  for (size_t k = 0; k < idx.size(); ++k) {
    Value w = wrap_negative(b, idx[k], x.type.dims[ai.indexed[k]]);
    parts.push_back(b.reshape(b.broadcast_to(w, ai.batch), with_one));
  }
  ai.coords = b.concatenate(parts, static_cast<int64_t>(ai.batch.size()));
  bool adjacent = true;
  for (size_t k = 1; k < ai.indexed.size(); ++k) adjacent = adjacent && ai.indexed[k] == ai.indexed[k - 1] + 1;
  int64_t nb = static_cast<int64_t>(ai.batch.size());
  int64_t pos = 0;
  for (int64_t d = 0; d < x.type.rank(); ++d) {
    bool is_indexed = std::find(ai.indexed.begin(), ai.indexed.end(), d) != ai.indexed.end();
    ai.slice_sizes.push_back(is_indexed ? 1 : x.type.dims[d]);
    if (is_indexed) continue;
    if (adjacent && !ai.indexed.empty() && d > ai.indexed.front()) ai.window_dims.push_back(pos + nb);
    else if (adjacent) ai.window_dims.push_back(pos);
    else ai.window_dims.push_back(pos + nb);
    ++pos;
  }
  return ai;
}

std::vector<Value> index_tensor(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  AdvancedIndex ai = advanced_index(c, x, 1);
  std::string dn = "offset_dims = " + shlo::fmt_dims(ai.window_dims) + ", collapsed_slice_dims = " +
                   shlo::fmt_dims(ai.indexed) + ", start_index_map = " + shlo::fmt_dims(ai.indexed) +
                   ", index_vector_dim = " + std::to_string(ai.batch.size());
  return {b.gather(x, ai.coords, c.out(), dn, ai.slice_sizes)};
}

std::vector<Value> index_put(LowerCtx& c) {
  // index_put(self, indices, values, accumulate) / _index_put_impl_(self, indices, values, accumulate, unsafe)
  Builder& b = c.b;
  Value x = c.t(0);
  AdvancedIndex ai = advanced_index(c, x, 1);
  // The shape the indexed result would have, to broadcast values into.
  std::vector<int64_t> result(ai.batch.size() + ai.window_dims.size(), 0);
  size_t w = 0;
  for (int64_t d = 0; d < x.type.rank(); ++d)
    if (std::find(ai.indexed.begin(), ai.indexed.end(), d) == ai.indexed.end()) result[ai.window_dims[w++]] = x.type.dims[d];
  size_t bi = 0;
  for (size_t i = 0; i < result.size(); ++i)
    if (std::find(ai.window_dims.begin(), ai.window_dims.end(), (int64_t)i) == ai.window_dims.end()) result[i] = ai.batch[bi++];
  Value vals = b.broadcast_to(b.convert(c.t(2), x.type.elem), result);
  std::string dn = "update_window_dims = " + shlo::fmt_dims(ai.window_dims) + ", inserted_window_dims = " +
                   shlo::fmt_dims(ai.indexed) + ", scatter_dims_to_operand_dims = " + shlo::fmt_dims(ai.indexed) +
                   ", index_vector_dim = " + std::to_string(ai.batch.size());
  shlo::Reducer add = shlo::Reducer::Add;
  return {b.scatter(x, ai.coords, vals, dn, c.flag(3) ? &add : nullptr)};
}

}  // namespace

void append_index(std::vector<Lowering>& t) {
  t.push_back({"index", index_tensor, {"index.Tensor", "index.Tensor_out"}});
  t.push_back({"index_put", index_put, {"index_put", "_index_put_impl_", "index_put.out"}});
  t.push_back({"embedding_dense_backward", embedding_dense_backward, {"embedding_dense_backward"}});
  t.push_back({"gather", gather, {"gather", "gather.out"}});
  t.push_back({"scatter", [](LowerCtx& c) { return scatter_impl(c, false, false); },
               {"scatter.src", "scatter_.src", "scatter.src_out"}});
  t.push_back({"scatter_value", [](LowerCtx& c) { return scatter_impl(c, false, true); },
               {"scatter.value", "scatter_.value", "scatter.value_out"}});
  t.push_back({"scatter_add", [](LowerCtx& c) { return scatter_impl(c, true, false); },
               {"scatter_add", "scatter_add_", "scatter_add.out"}});
  t.push_back({"index_fill", index_fill, {"index_fill.int_Scalar", "index_fill_.int_Scalar", "index_fill.int_Tensor",
                                          "index_fill_.int_Tensor", "index_fill.int_Scalar_out", "index_fill.int_Tensor_out"}});
  t.push_back({"index_select", index_select, {"index_select", "index_select.out"}});
}

}  // namespace ttpu::ops
