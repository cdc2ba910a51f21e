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
}

}  // namespace ttpu::ops
