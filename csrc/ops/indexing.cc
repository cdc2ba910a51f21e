// Indexing: advanced indexing (index, index_put), gather/scatter and their
// reductions, index_select/add/copy/fill/reduce, put/take, masked_scatter,
// nonzero_static and unfold's backward. Indices become full coordinate
// vectors: the indexed dim takes the index values, every other dim its own
// position (iota). Out-of-range indices raise CPU's IndexError through a
// device-side check.

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

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
  if (c.out().numel() == 0 || self.type.numel() == 0) return {b.constant(0, c.out().elem, c.out().dims)};
  if (rank == 0) return {b.reshape(self, c.out().dims)};
  int64_t dim = wrap_dim(c.i(1), rank);
  c.check_index(c.t(2), dim, self.type.dims[dim], /*index_error=*/false, /*allow_negative=*/false);
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
  c.check_index(index_in, dim, self.type.dims[dim], /*index_error=*/false, /*allow_negative=*/false);
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
  c.check_index(c.t(2), dim, size, /*index_error=*/true, /*allow_negative=*/true);
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
  c.check_range(c.t(2), 0, self.type.dims[dim],
                {true, "index out of range in self (index {}, size " + std::to_string(self.type.dims[dim]) + ")"});
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
      res[i] = x1 == 1 ? x2 : x1;  // a size-0 dim broadcasts against 1
    }
    ai.batch = res;
  }
  std::vector<int64_t> with_one = ai.batch;
  with_one.push_back(1);
  std::vector<Value> parts;
  for (size_t k = 0; k < idx.size(); ++k) {
    // CPU names the k-th indexed dim "dimension k".
    c.check_index(idx[k], static_cast<int64_t>(k), x.type.dims[ai.indexed[k]], /*index_error=*/true,
                  /*allow_negative=*/true);
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
  // Nothing to gather from (an indexed dim of size 0: its check fails for any index).
  if (x.type.numel() == 0 || c.out().numel() == 0) return {b.constant(0, c.out().elem, c.out().dims)};
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
  if (x.type.numel() == 0) return {x};
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

// The identity of a scatter_reduce/index_reduce reduction for type t.
Value reduce_identity(Builder& b, const std::string& reduce, ElemType t, const std::vector<int64_t>& dims) {
  if (reduce == "prod") return b.constant(1, t, dims);
  if (reduce == "amax" || reduce == "amin") {
    bool mx = reduce == "amax";
    if (shlo::is_float(t)) return b.constant(mx ? -INFINITY : INFINITY, t, dims);
    if (t == ElemType::Pred) return b.constant_int(mx ? 0 : 1, t, dims);
    int bits = shlo::byte_size(t) * 8;
    if (shlo::is_signed_int(t)) {
      int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
      int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
      return b.constant_int(mx ? lo : hi, t, dims);
    }
    uint64_t hi = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
    return mx ? b.constant_int(0, t, dims) : b.constant_bits(hi, t, dims);
  }
  return b.constant(0, t, dims);
}

// scatter_reduce along `dim`: `index` (s64, wrapped) has the shape of
// `updates`; reduce is sum, prod, mean, amax or amin.
Value scatter_reduce_core(Builder& b, const Value& self, int64_t dim, const Value& index, const Value& updates,
                          const std::string& reduce, bool include_self) {
  int64_t rank = self.type.rank();
  if (index.type.numel() == 0) return self;
  Value coords = coordinates(b, index, dim, rank);
  std::string dn = "inserted_window_dims = " + iota_list(rank) + ", scatter_dims_to_operand_dims = " +
                   iota_list(rank) + ", index_vector_dim = " + std::to_string(rank);
  ElemType t = self.type.elem;
  shlo::Reducer add = shlo::Reducer::Add;
  ElemType ct = shlo::is_float(t) ? t : ElemType::S64;
  Value counts;
  if (!include_self || reduce == "mean")
    counts = b.scatter(b.constant(0, ct, self.type.dims), coords, b.constant(1, ct, index.type.dims), dn, &add);
  Value base = self;
  if (!include_self) {
    Value touched = b.compare(shlo::Compare::GT, counts, b.constant(0, ct, self.type.dims));
    base = b.select(touched, reduce_identity(b, reduce, t, self.type.dims), self);
  }
  shlo::Reducer r = reduce == "prod" ? shlo::Reducer::Mul
                    : reduce == "amax" ? shlo::Reducer::Max
                    : reduce == "amin" ? shlo::Reducer::Min : shlo::Reducer::Add;
  if (t == ElemType::Pred && r == shlo::Reducer::Add) r = shlo::Reducer::Or;
  if (t == ElemType::Pred && r == shlo::Reducer::Mul) r = shlo::Reducer::And;
  Value out = b.scatter(base, coords, updates, dn, &r);
  if (reduce == "mean") {
    Value n = include_self ? b.add(counts, b.constant(1, ct, self.type.dims)) : counts;
    Value safe = b.max(n, b.constant(1, ct, self.type.dims));
    if (shlo::is_float(t)) {
      out = b.div(out, safe);
    } else {  // floor division, as PyTorch does for integers
      Value o = b.convert(out, ElemType::F64);
      out = b.convert(b.unary("floor", b.div(o, b.convert(safe, ElemType::F64))), t);
    }
  }
  return out;
}

// The shared start of the scatter-style reductions (self, dim, index, ...):
// self in the result type, a 0-d self as a 1-element vector, the wrapped index.
struct ScatterArgs {
  Value self, index;
  int64_t dim = 0, rank = 0;
  bool zero_d = false, empty = false;
};

ScatterArgs scatter_args(LowerCtx& c) {
  Builder& b = c.b;
  ScatterArgs a;
  a.self = b.convert(c.t(0), c.out().elem);
  const Value& index_in = c.t(2);
  a.empty = index_in.type.numel() == 0;
  if (a.empty) return a;
  a.zero_d = a.self.type.rank() == 0;
  if (a.zero_d) a.self = b.reshape(a.self, {1});
  a.rank = a.self.type.rank();
  a.dim = a.zero_d ? 0 : wrap_dim(c.i(1), a.rank);
  c.check_index(index_in, a.dim, a.self.type.dims[a.dim], /*index_error=*/false, /*allow_negative=*/false);
  a.index = wrap_negative(b, a.zero_d ? b.reshape(index_in, {1}) : index_in, a.self.type.dims[a.dim]);
  return a;
}

std::vector<Value> scatter_reduce(LowerCtx& c) {
  // scatter_reduce.two(self, dim, index, src, reduce, include_self)
  Builder& b = c.b;
  auto [self, index, dim, rank, zero_d, empty] = scatter_args(c);
  if (empty) return {self};
  Value src = b.convert(c.t(3), self.type.elem);
  if (zero_d) src = b.reshape(src, {1});
  std::vector<int64_t> zeros(rank, 0), strides(rank, 1);
  Value updates = b.slice(src, zeros, index.type.dims, strides);
  Value r = scatter_reduce_core(b, self, dim, index, updates, c.str(4), c.flag(5));
  return {b.reshape(r, c.out().dims)};
}

// index_add / index_copy / index_reduce: slices of `source` go to the
// positions along dim named by the 1-D index.
std::vector<Value> index_scatter(LowerCtx& c, const std::string& reduce, bool include_self, bool has_alpha) {
  // index_add(self, dim, index, source, alpha) / index_copy(self, dim, index, source) /
  // index_reduce(self, dim, index, source, reduce, include_self)
  Builder& b = c.b;
  Value self = b.convert(c.t(0), c.out().elem);
  bool zero_d = self.type.rank() == 0;
  if (zero_d) self = b.reshape(self, {1});
  int64_t rank = self.type.rank();
  int64_t dim = zero_d ? 0 : wrap_dim(c.i(1), rank);
  Value idx1 = b.reshape(c.t(2), {c.t(2).type.numel()});
  if (idx1.type.dims[0] == 0) return {b.reshape(self, c.out().dims)};
  Value src = b.convert(c.t(3), self.type.elem);
  std::vector<int64_t> sdims = self.type.dims;
  sdims[dim] = idx1.type.dims[0];
  src = b.reshape(src, sdims);
  if (has_alpha && c.has(4)) src = b.mul(src, c.scalar_like(4, src));
  // CPU's errors differ per op: index_add RuntimeError, index_copy_ and index_reduce IndexError.
  const int64_t size = self.type.dims[dim];
  if (reduce == "sum") {
    c.check_index(idx1, dim, size, /*index_error=*/false, /*allow_negative=*/false);
  } else if (reduce == "copy") {
    c.check_index(idx1, dim, size, /*index_error=*/true, /*allow_negative=*/false, "index_copy_(): ");
  } else {
    c.check_range(idx1, 0, size, {true, "index out of range in self (index {}, size " + std::to_string(size) + ")"});
  }
  Value index = b.broadcast_in_dim(wrap_negative(b, idx1, self.type.dims[dim]), sdims, {dim});
  Value r;
  if (reduce == "copy") {
    Value coords = coordinates(b, index, dim, rank);
    std::string dn = "inserted_window_dims = " + iota_list(rank) + ", scatter_dims_to_operand_dims = " +
                     iota_list(rank) + ", index_vector_dim = " + std::to_string(rank);
    r = b.scatter(self, coords, src, dn, nullptr);
  } else {
    r = scatter_reduce_core(b, self, dim, index, src, reduce, include_self);
  }
  return {b.reshape(r, c.out().dims)};
}

// put(self, index, source, accumulate) and take(self, index): flat indexing.
CheckSpec flat_range_error(int64_t n) {
  return {true, "out of range: tried to access index {} on a tensor of " + std::to_string(n) + " elements."};
}

std::vector<Value> put(LowerCtx& c) {
  Builder& b = c.b;
  Value self = c.t(0);
  int64_t n = self.type.numel();
  Value flat = b.reshape(self, {n});
  int64_t k = c.t(1).type.numel();
  if (k == 0) return {self};
  c.check_range(c.t(1), -n, n, flat_range_error(n));
  Value idx = wrap_negative(b, b.reshape(c.t(1), {k}), n);
  Value src = b.reshape(b.convert(c.t(2), self.type.elem), {k});
  std::string dn = "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1";
  shlo::Reducer add = shlo::Reducer::Add;
  Value r = b.scatter(flat, b.reshape(idx, {k, 1}), src, dn, c.flag(3) ? &add : nullptr);
  return {b.reshape(r, self.type.dims)};
}

std::vector<Value> take(LowerCtx& c) {
  Builder& b = c.b;
  Value self = c.t(0);
  int64_t n = self.type.numel();
  const Value& index = c.t(1);
  if (index.type.numel() == 0) return {b.constant(0, self.type.elem, c.out().dims)};
  c.check_range(index, -n, n, flat_range_error(n));
  Value idx = wrap_negative(b, index, n);
  return {b.reshape(b.gather_flat(b.reshape(self, {n}), idx), c.out().dims)};
}

// unfold_backward(grad_in, input_sizes, dim, size, step): window element
// (k, j) came from position k * step + j along dim.
std::vector<Value> unfold_backward(LowerCtx& c) {
  Builder& b = c.b;
  Value g = c.t(0);
  const TensorType& out = c.out();
  int64_t rank = out.rank();
  if (rank == 0) return {b.reshape(g, {})};
  int64_t dim = wrap_dim(c.i(2), rank), size = c.i(3), step = c.i(4);
  int64_t nwin = g.type.dims[dim];
  // move the trailing window dim next to dim and merge
  std::vector<int64_t> perm;
  for (int64_t d = 0; d <= dim; ++d) perm.push_back(d);
  perm.push_back(rank);
  for (int64_t d = dim + 1; d < rank; ++d) perm.push_back(d);
  Value gt = b.transpose(g, perm);
  std::vector<int64_t> merged = out.dims;
  merged[dim] = nwin * size;
  gt = b.reshape(gt, merged);
  ElemType acc = accumulate_type(out.elem);
  if (nwin * size == 0) return {b.constant(0, out.elem, out.dims)};
  TensorType grid{ElemType::S64, {nwin, size}};
  Value pos = b.add(b.mul(b.iota(grid, 0), b.constant_int(step, ElemType::S64, {nwin, size})), b.iota(grid, 1));
  Value index = b.broadcast_in_dim(b.reshape(pos, {nwin * size}), merged, {dim});
  Value r = scatter_reduce_core(b, b.constant(0, acc, out.dims), dim, index, b.convert(gt, acc), "sum", true);
  return {b.convert(r, out.elem)};
}

// scatter.reduce / scatter.value_reduce(self, dim, index, src|value, reduce): "add" or "multiply".
std::vector<Value> scatter_legacy_reduce(LowerCtx& c, bool value_is_scalar) {
  Builder& b = c.b;
  auto [self, index, dim, rank, zero_d, empty] = scatter_args(c);
  if (empty) return {self};
  Value updates;
  if (value_is_scalar) {
    updates = b.broadcast_in_dim(c.scalar(3, self.type.elem), index.type.dims, {});
  } else {
    Value src = b.convert(c.t(3), self.type.elem);
    if (zero_d) src = b.reshape(src, {1});
    std::vector<int64_t> zeros(rank, 0), strides(rank, 1);
    updates = b.slice(src, zeros, index.type.dims, strides);
  }
  const std::string& r = c.str(4);
  Value out = scatter_reduce_core(b, self, dim, index, updates, r == "multiply" ? "prod" : "sum", true);
  return {b.reshape(out, c.out().dims)};
}

std::vector<Value> nonzero_static(LowerCtx& c) {
  // nonzero_static(self, size, fill_value) -> [size, rank]: the first `size` nonzero coordinates.
  Builder& b = c.b;
  Value self = c.t(0);
  const TensorType& out = c.out();
  int64_t size = out.dims[0], rank = self.type.rank(), n = self.type.numel();
  Value filled = b.constant_int(c.i(2), ElemType::S64, out.dims);
  if (size == 0 || rank == 0 || n == 0) {
    if (rank == 0 && size > 0) return {filled};
    return {filled};
  }
  Value flat = b.reshape(self, {n});
  Value nz = self.type.elem == ElemType::Pred ? flat : b.compare(shlo::Compare::NE, flat, b.constant(0, self.type.elem, {n}));
  Value pos = b.sub(prefix_sum(b, b.convert(nz, ElemType::S64), 0), b.constant_int(1, ElemType::S64, {n}));
  pos = b.select(nz, pos, b.constant_int(size, ElemType::S64, {n}));  // out of range: dropped
  std::vector<Value> cols;
  TensorType it{ElemType::S64, self.type.dims};
  std::vector<int64_t> with_one = self.type.dims;
  with_one.push_back(1);
  for (int64_t d = 0; d < rank; ++d) cols.push_back(b.reshape(b.iota(it, d), with_one));
  Value coords = b.reshape(b.concatenate(cols, rank), {n, rank});
  std::string dn = "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                   "index_vector_dim = 1";
  return {b.scatter(filled, b.reshape(pos, {n, 1}), coords, dn, nullptr)};
}

std::vector<Value> masked_scatter(LowerCtx& c) {
  // masked_scatter(self, mask, source)
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value self = broadcast_convert(b, c.t(0), out);
  Value mask = broadcast_convert(b, c.t(1), TensorType{ElemType::Pred, out.dims});
  int64_t n = out.numel(), m = c.t(2).type.numel();
  if (n == 0 || m == 0) return {self};
  Value flat_mask = b.reshape(mask, {n});
  Value pos = b.sub(prefix_sum(b, b.convert(flat_mask, ElemType::S64), 0), b.constant_int(1, ElemType::S64, {n}));
  pos = b.clamp(b.constant_int(0, ElemType::S64, {n}), pos, b.constant_int(m - 1, ElemType::S64, {n}));
  Value src = b.convert(b.reshape(c.t(2), {m}), out.elem);
  Value picked = b.gather_flat(src, pos);
  return {b.reshape(b.select(flat_mask, picked, b.reshape(self, {n})), out.dims)};
}

}  // namespace

void append_indexing(std::vector<Lowering>& t) {
  t.push_back({"index", index_tensor, {"index.Tensor+"}});
  t.push_back({"index_put", index_put, {"index_put", "_index_put_impl_", "index_put.out"}});
  t.push_back({"gather", gather, {"gather+"}});
  t.push_back({"scatter", [](LowerCtx& c) { return scatter_impl(c, false, false); },
               {"scatter.src+"}});
  t.push_back({"scatter_value", [](LowerCtx& c) { return scatter_impl(c, false, true); },
               {"scatter.value+"}});
  t.push_back({"scatter_add", [](LowerCtx& c) { return scatter_impl(c, true, false); },
               {"scatter_add+"}});
  t.push_back({"index_fill", index_fill, {"index_fill.int_Scalar+", "index_fill.int_Tensor+"}});
  t.push_back({"index_select", index_select, {"index_select+"}});
  t.push_back({"scatter_reduce", scatter_reduce, {"scatter_reduce.two+"}});
  t.push_back({"index_add", [](LowerCtx& c) { return index_scatter(c, "sum", true, true); },
               {"index_add+"}});
  t.push_back({"index_copy", [](LowerCtx& c) { return index_scatter(c, "copy", true, false); },
               {"index_copy+"}});
  t.push_back({"index_reduce", [](LowerCtx& c) { return index_scatter(c, c.str(4), c.flag(5), false); },
               {"index_reduce+"}});
  t.push_back({"scatter_reduce_legacy", [](LowerCtx& c) { return scatter_legacy_reduce(c, false); },
               {"scatter.reduce+"}});
  t.push_back({"scatter_value_reduce", [](LowerCtx& c) { return scatter_legacy_reduce(c, true); },
               {"scatter.value_reduce+"}});
  t.push_back({"nonzero_static", nonzero_static, {"nonzero_static+"}});
  t.push_back({"put", put, {"put+"}});
  t.push_back({"take", take, {"take+"}});
  t.push_back({"unfold_backward", unfold_backward, {"unfold_backward+"}});
  t.push_back({"masked_scatter", masked_scatter, {"masked_scatter+"}});
}

}  // namespace ttpu::ops
