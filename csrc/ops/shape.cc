// Shape-changing ops that copy data: cat. (Pure views are metadata in the
// aten layer; reading them goes through gather_view.)
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

}  // namespace

void append_shape(std::vector<Lowering>& t) {
  t.push_back({"cat", cat, {"cat", "cat.out"}});
}

}  // namespace ttpu::ops
