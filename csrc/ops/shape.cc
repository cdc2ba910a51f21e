// Shape-changing ops that copy data: cat. (Pure views are metadata in the
// aten layer; reading them goes through gather_view.)
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

std::vector<Value> cat(LowerCtx& c) {
  const auto& xs = c.list(0);
  const TensorType& out = c.out();
  int64_t rank = out.rank();
  int64_t dim = wrap_dim(c.i(1), rank);
  std::vector<Value> parts;
  for (const auto& x : xs) {
    // Legacy rule: 1-D empty tensors are skipped whatever the other shapes are.
    if (x.type.rank() == 1 && x.type.dims[0] == 0 && rank != 1) continue;
    if (x.type.numel() == 0 && x.type.dims[dim] == 0) continue;
    parts.push_back(c.b.convert(x, out.elem));
  }
  if (parts.empty()) return {c.b.constant(0, out.elem, out.dims)};
  return {c.b.concatenate(parts, dim)};
}

// tril/triu(self, diagonal): keep elements on one side of a diagonal of the last two dims.
std::vector<Value> triangle(LowerCtx& c, bool lower) {
  Builder& b = c.b;
  Value x = c.t(0);
  int64_t rank = x.type.rank();
  if (rank < 2) throw std::runtime_error("tril/triu: input tensor must have at least 2 dimensions");
  TensorType it{ElemType::S64, x.type.dims};
  Value diff = b.sub(b.iota(it, rank - 1), b.iota(it, rank - 2));  // col - row
  Value k = b.constant_int(c.i(1), ElemType::S64, x.type.dims);
  Value keep = b.compare(lower ? shlo::Compare::LE : shlo::Compare::GE, diff, k);
  return {b.select(keep, x, b.constant(0, x.type.elem, x.type.dims))};
}


std::vector<Value> roll(LowerCtx& c) {
  // roll(self, shifts, dims): element i moves to (i + shift) mod n.
  Builder& b = c.b;
  Value x = c.t(0);
  const auto& shifts = c.ints(1);
  std::vector<int64_t> dims = c.ints(2);
  if (x.type.numel() == 0) return {x};
  bool flat = dims.empty();
  Value y = flat ? b.reshape(x, {x.type.numel()}) : x;
  if (flat) dims = {0};
  int64_t rank = y.type.rank();
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = wrap_dim(dims[k], rank), n = y.type.dims[d];
    int64_t s = ((shifts.at(k) % n) + n) % n;
    if (s == 0) continue;
    std::vector<int64_t> start(rank, 0), limit = y.type.dims, stride(rank, 1);
    start[d] = n - s;
    Value tail = b.slice(y, start, limit, stride);
    start[d] = 0;
    limit[d] = n - s;
    Value head = b.slice(y, start, limit, stride);
    y = b.concatenate({tail, head}, d);
  }
  return {flat ? b.reshape(y, x.type.dims) : y};
}

// Gather along `dim` with a 1-D s64 index (result dim takes the index length).
Value take_along(Builder& b, const Value& x, int64_t dim, const Value& index) {
  int64_t rank = x.type.rank(), n = index.type.dims[0];
  std::vector<int64_t> slice = x.type.dims, offset_dims;
  slice[dim] = 1;
  TensorType out{x.type.elem, x.type.dims};
  out.dims[dim] = n;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) offset_dims.push_back(d);
  std::string dn = "offset_dims = " + shlo::fmt_dims(offset_dims) + ", collapsed_slice_dims = [" + std::to_string(dim) +
                   "], start_index_map = [" + std::to_string(dim) + "], index_vector_dim = 1";
  return b.gather(x, b.reshape(index, {n, 1}), out, dn, slice);
}

// The transpose of take_along: rows of g added into `size` positions.
Value add_along(Builder& b, const Value& g, int64_t dim, const Value& index, int64_t size) {
  int64_t rank = g.type.rank(), n = index.type.dims[0];
  std::vector<int64_t> dims = g.type.dims, window;
  dims[dim] = size;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) window.push_back(d);
  std::string dn = "update_window_dims = " + shlo::fmt_dims(window) + ", inserted_window_dims = [" +
                   std::to_string(dim) + "], scatter_dims_to_operand_dims = [" + std::to_string(dim) +
                   "], index_vector_dim = 1";
  shlo::Reducer add = shlo::Reducer::Add;
  return b.scatter(b.constant(0, g.type.elem, dims), b.reshape(index, {n, 1}), g, dn, &add);
}

// Source positions of a reflection/replication pad along one dim.
Value pad_source(Builder& b, int64_t n, int64_t lo, int64_t hi, bool reflect) {
  int64_t o = n + lo + hi;
  TensorType it{ElemType::S64, {o}};
  Value j = b.sub(b.iota(it, 0), b.constant_int(lo, ElemType::S64, {o}));
  if (reflect) {
    Value zero = b.constant_int(0, ElemType::S64, {o});
    j = b.select(b.compare(shlo::Compare::LT, j, zero), b.sub(zero, j), j);
    Value top = b.constant_int(2 * (n - 1), ElemType::S64, {o});
    j = b.select(b.compare(shlo::Compare::GT, j, b.constant_int(n - 1, ElemType::S64, {o})), b.sub(top, j), j);
  }
  return b.clamp(b.constant_int(0, ElemType::S64, {o}), j, b.constant_int(n - 1, ElemType::S64, {o}));
}

std::vector<Value> edge_pad(LowerCtx& c, bool reflect, bool backward) {
  // reflection/replication_padNd(self, padding); *_backward(grad_output, self, padding)
  Builder& b = c.b;
  Value x = backward ? c.t(1) : c.t(0);
  const auto& pad = c.ints(backward ? 2 : 1);
  int64_t rank = x.type.rank(), k = static_cast<int64_t>(pad.size()) / 2;
  const TensorType& out = c.out();
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  ElemType acc = backward ? accumulate_type(out.elem) : x.type.elem;
  Value y = backward ? b.convert(c.t(0), acc) : x;
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = rank - 1 - i, n = x.type.dims[d];
    Value src = pad_source(b, n, pad[2 * i], pad[2 * i + 1], reflect);
    y = backward ? add_along(b, y, d, src, n) : take_along(b, y, d, src);
  }
  return {b.convert(y, out.elem)};
}

std::vector<Value> channel_shuffle(LowerCtx& c) {
  // channel_shuffle(self, groups): [N, g, C/g, *] -> [N, C/g, g, *]
  Builder& b = c.b;
  Value x = c.t(0);
  int64_t g = c.i(1), rank = x.type.rank();
  if (x.type.numel() == 0 || rank < 2) return {x};
  std::vector<int64_t> split{x.type.dims[0], g, x.type.dims[1] / g};
  for (int64_t d = 2; d < rank; ++d) split.push_back(x.type.dims[d]);
  std::vector<int64_t> perm{0, 2, 1};
  for (int64_t d = 3; d <= rank; ++d) perm.push_back(d);
  return {b.reshape(b.transpose(b.reshape(x, split), perm), x.type.dims)};
}

// im2col(self, kernel_size, dilation, padding, stride): [N, C, H, W] -> [N, C*kh*kw, L]
std::vector<Value> im2col(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  bool batched = x.type.rank() == 4;
  if (!batched) x = b.reshape(x, {1, x.type.dims[0], x.type.dims[1], x.type.dims[2]});
  const auto &k = c.ints(1), &dil = c.ints(2), &pad = c.ints(3), &st = c.ints(4);
  int64_t N = x.type.dims[0], C = x.type.dims[1], H = x.type.dims[2], W = x.type.dims[3];
  int64_t oh = (H + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) / st[0] + 1;
  int64_t ow = (W + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) / st[1] + 1;
  const TensorType& out = c.out();
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Value xp = b.pad(x, b.constant(0, x.type.elem), {0, 0, pad[0], pad[1]}, {0, 0, pad[0], pad[1]});
  std::vector<Value> parts;
  for (int64_t i = 0; i < k[0]; ++i)
    for (int64_t j = 0; j < k[1]; ++j) {
      Value s = b.slice(xp, {0, 0, i * dil[0], j * dil[1]},
                        {N, C, i * dil[0] + st[0] * (oh - 1) + 1, j * dil[1] + st[1] * (ow - 1) + 1}, {1, 1, st[0], st[1]});
      parts.push_back(b.reshape(s, {N, C, 1, oh * ow}));
    }
  Value r = b.concatenate(parts, 2);
  return {b.reshape(r, out.dims)};
}

// col2im(self, output_size, kernel_size, dilation, padding, stride): the transpose of im2col.
std::vector<Value> col2im(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  const TensorType& out = c.out();
  bool batched = x.type.rank() == 3;
  if (!batched) x = b.reshape(x, {1, x.type.dims[0], x.type.dims[1]});
  const auto &osz = c.ints(1), &k = c.ints(2), &dil = c.ints(3), &pad = c.ints(4), &st = c.ints(5);
  int64_t N = x.type.dims[0], C = x.type.dims[1] / (k[0] * k[1]);
  int64_t H = osz[0], W = osz[1];
  int64_t oh = (H + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) / st[0] + 1;
  int64_t ow = (W + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) / st[1] + 1;
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  ElemType acc = accumulate_type(out.elem);
  Value cols = b.reshape(b.convert(x, acc), {N, C, k[0] * k[1], oh, ow});
  int64_t Hp = H + 2 * pad[0], Wp = W + 2 * pad[1];
  Value sum = b.constant(0, acc, {N, C, Hp, Wp});
  Value zero = b.constant(0, acc);
  for (int64_t i = 0; i < k[0]; ++i)
    for (int64_t j = 0; j < k[1]; ++j) {
      int64_t q = i * k[1] + j;
      Value blk = b.reshape(b.slice(cols, {0, 0, q, 0, 0}, {N, C, q + 1, oh, ow}, {1, 1, 1, 1, 1}), {N, C, oh, ow});
      int64_t lo_h = i * dil[0], lo_w = j * dil[1];
      int64_t hi_h = Hp - lo_h - (st[0] * (oh - 1) + 1), hi_w = Wp - lo_w - (st[1] * (ow - 1) + 1);
      Value placed = b.pad(blk, zero, {0, 0, lo_h, lo_w}, {0, 0, hi_h, hi_w}, {0, 0, st[0] - 1, st[1] - 1});
      sum = b.add(sum, placed);
    }
  Value r = b.slice(sum, {0, 0, pad[0], pad[1]}, {N, C, pad[0] + H, pad[1] + W}, {1, 1, 1, 1});
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

// max_unpool2d(self, indices, output_size) / max_unpool3d(self, indices, output_size, stride, padding):
// each value goes to its flat position within its (N, C) plane.
std::vector<Value> max_unpool(LowerCtx& c, int spatial) {
  Builder& b = c.b;
  Value x = c.t(0);
  const TensorType& out = c.out();
  int64_t L = 1, O = 1;
  for (int i = 0; i < spatial; ++i) L *= x.type.dims[x.type.rank() - 1 - i], O *= out.dims[out.rank() - 1 - i];
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  int64_t rows = L ? x.type.numel() / L : 0;
  if (x.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Value xv = b.reshape(x, {rows, L});
  Value idx = b.reshape(b.convert(c.t(1), ElemType::S64), {rows, L, 1});
  TensorType it{ElemType::S64, {rows, L, 1}};
  Value coords = b.concatenate({b.iota(it, 0), idx}, 2);
  std::string dn = "inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2";
  Value r = b.scatter(b.constant(0, x.type.elem, {rows, O}), coords, xv, dn, nullptr);
  return {b.reshape(r, out.dims)};
}

std::vector<Value> linalg_cross(LowerCtx& c) {
  // linalg_cross(self, other, dim): 3-vectors along dim, broadcast.
  Builder& b = c.b;
  const TensorType& out = c.out();
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Value x = broadcast_convert(b, c.t(0), out), y = broadcast_convert(b, c.t(1), out);
  int64_t rank = out.rank(), dim = wrap_dim(c.i(2), rank);
  auto comp = [&](const Value& v, int64_t i) {
    std::vector<int64_t> start(rank, 0), limit = out.dims, stride(rank, 1);
    start[dim] = i;
    limit[dim] = i + 1;
    return b.slice(v, start, limit, stride);
  };
  auto term = [&](int64_t i, int64_t j) { return b.sub(b.mul(comp(x, i), comp(y, j)), b.mul(comp(x, j), comp(y, i))); };
  return {b.concatenate({term(1, 2), term(2, 0), term(0, 1)}, dim)};
}
}  // namespace

void append_shape(std::vector<Lowering>& t) {
  t.push_back({"cat", cat, {"cat", "cat.out"}});
  t.push_back({"flip", [](LowerCtx& c) -> std::vector<Value> {
                 Value x = c.t(0);
                 auto dims = wrap_dims(c.ints(1), x.type.rank());
                 if (c.ints(1).empty() || x.type.rank() == 0) return {x};
                 return {c.b.op("reverse", {x}, x.type, "dimensions = " + shlo::int_array(dims))};
               },
               {"flip", "flip.out"}});
  t.push_back({"tril", [](LowerCtx& c) { return triangle(c, true); }, {"tril", "tril_", "tril.out"}});
  t.push_back({"triu", [](LowerCtx& c) { return triangle(c, false); }, {"triu", "triu_", "triu.out"}});
  t.push_back({"roll", roll, {"roll", "roll.out"}});
  t.push_back({"linalg_cross", linalg_cross, {"linalg_cross", "linalg_cross.out"}});
  t.push_back({"reflection_pad", [](LowerCtx& c) { return edge_pad(c, true, false); },
               {"reflection_pad1d", "reflection_pad1d.out", "reflection_pad2d", "reflection_pad2d.out",
                "reflection_pad3d", "reflection_pad3d.out"}});
  t.push_back({"reflection_pad_backward", [](LowerCtx& c) { return edge_pad(c, true, true); },
               {"reflection_pad1d_backward", "reflection_pad1d_backward.grad_input", "reflection_pad2d_backward",
                "reflection_pad2d_backward.grad_input", "reflection_pad3d_backward",
                "reflection_pad3d_backward.grad_input"}});
  t.push_back({"replication_pad", [](LowerCtx& c) { return edge_pad(c, false, false); },
               {"replication_pad1d", "replication_pad1d.out", "replication_pad2d", "replication_pad2d.out",
                "replication_pad3d", "replication_pad3d.out"}});
  t.push_back({"replication_pad_backward", [](LowerCtx& c) { return edge_pad(c, false, true); },
               {"replication_pad1d_backward", "replication_pad1d_backward.grad_input", "replication_pad2d_backward",
                "replication_pad2d_backward.grad_input", "replication_pad3d_backward",
                "replication_pad3d_backward.grad_input"}});
  t.push_back({"channel_shuffle", channel_shuffle, {"channel_shuffle", "channel_shuffle.out", "native_channel_shuffle"}});
  t.push_back({"im2col", im2col, {"im2col", "im2col.out"}});
  t.push_back({"col2im", col2im, {"col2im", "col2im.out"}});
  t.push_back({"max_unpool2d", [](LowerCtx& c) { return max_unpool(c, 2); }, {"max_unpool2d", "max_unpool2d.out"}});
  t.push_back({"max_unpool3d", [](LowerCtx& c) { return max_unpool(c, 3); }, {"max_unpool3d", "max_unpool3d.out"}});
}

}  // namespace ttpu::ops
