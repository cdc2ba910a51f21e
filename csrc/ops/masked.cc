// masked_scatter: the i-th selected position (in row-major order) takes the
// i-th element of source. The output shape is self's, so no host sync: the
// positions come from a prefix sum of the mask.
#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

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

void append_masked(std::vector<Lowering>& t) {
  t.push_back({"masked_scatter", masked_scatter, {"masked_scatter_", "masked_scatter", "masked_scatter.out"}});
}

}  // namespace ttpu::ops
