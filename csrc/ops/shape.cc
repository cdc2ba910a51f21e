// Shape-changing ops that copy data: cat, flip, roll, tril/triu,
// reflection and replication padding with backwards, channel_shuffle. (Pure
// views are metadata in the aten layer; reading them goes through
// gather_view.)

#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

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

}  // namespace

void append_shape(std::vector<Lowering>& t) {
  t.push_back({"cat", cat, {"cat+"}});
  t.push_back({"flip", [](LowerCtx& c) -> std::vector<Value> {
                 Value x = c.t(0);
                 auto dims = wrap_dims(c.ints(1), x.type.rank());
                 if (c.ints(1).empty() || x.type.rank() == 0) return {x};
                 return {c.b.reverse(x, dims)};
               },
               {"flip+"}});
  t.push_back({"tril", [](LowerCtx& c) { return triangle(c, true); }, {"tril+"}});
  t.push_back({"triu", [](LowerCtx& c) { return triangle(c, false); }, {"triu+"}});
  t.push_back({"roll", roll, {"roll+"}});
  t.push_back({"reflection_pad", [](LowerCtx& c) { return edge_pad(c, true, false); },
               {"reflection_pad1d+", "reflection_pad2d+", "reflection_pad3d+"}});
  t.push_back({"reflection_pad_backward", [](LowerCtx& c) { return edge_pad(c, true, true); },
               {"reflection_pad1d_backward+", "reflection_pad2d_backward+", "reflection_pad3d_backward+"}});
  t.push_back({"replication_pad", [](LowerCtx& c) { return edge_pad(c, false, false); },
               {"replication_pad1d+", "replication_pad2d+", "replication_pad3d+"}});
  t.push_back({"replication_pad_backward", [](LowerCtx& c) { return edge_pad(c, false, true); },
               {"replication_pad1d_backward+", "replication_pad2d_backward+", "replication_pad3d_backward+"}});
  t.push_back({"channel_shuffle", channel_shuffle, {"channel_shuffle+", "native_channel_shuffle"}});
}

}  // namespace ttpu::ops
