// Linear algebra on the device: matrix products (mm, bmm, addmm, baddbmm,
// mv, dot, addmv), torch.linalg.cross and _scaled_mm. float32 dots request
// the precision that torch.get_float32_matmul_precision() asks for; bf16/f16
// dots accumulate in f32; _scaled_mm (float8 operands with scales) computes
// in f32. Decompositions that need the host run in csrc/aten/host_ops.cpp.

#include <stdexcept>
#include <string>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;

Value dot(LowerCtx& c, const Value& a, const Value& b, std::vector<int64_t> batch_a, std::vector<int64_t> batch_b,
          std::vector<int64_t> con_a, std::vector<int64_t> con_b) {
  ElemType out = c.out().elem;
  if (a.type.elem != b.type.elem)
    throw std::invalid_argument(std::string("expected m1 and m2 to have the same dtype, but got: ") +
                                shlo::mlir_name(a.type.elem) + " != " + shlo::mlir_name(b.type.elem));
  ElemType acc = accumulate_type(out);
  Value x = c.b.convert(a, out), y = c.b.convert(b, out);
  // complex64 is a pair of f32 dots: the same float32 matmul precision
  // applies (seen on the CUDA plugin: DEFAULT ran c64 products in TF32).
  bool f32_dot = out == ElemType::F32 || out == ElemType::C64;
  shlo::Precision p = f32_dot ? to_shlo(c.precision) : shlo::Precision::Default;
  if (out == ElemType::F64 || shlo::is_integral(out)) p = shlo::Precision::Highest;
  Value r = c.b.dot_general(x, y, batch_a, batch_b, con_a, con_b, acc, p);
  return r;
}

// beta * self + alpha * product, in the accumulation type.
Value scale_add(LowerCtx& c, size_t self_arg, size_t beta_arg, size_t alpha_arg, const Value& prod) {
  Builder& b = c.b;
  Value r = b.mul(prod, c.scalar_like(alpha_arg, prod));
  Value self = broadcast_convert(b, c.t(self_arg), prod.type);
  // beta == 0 must ignore NaN/Inf in self, as PyTorch does.
  Value beta = c.scalar_like(beta_arg, prod);
  Value zero = b.constant(0, prod.type.elem, prod.type.dims);
  Value scaled = b.select(b.compare(shlo::Compare::EQ, beta, zero), zero, b.mul(self, beta));
  return b.add(r, scaled);
}

std::vector<Value> mm(LowerCtx& c) {
  return {c.b.convert(dot(c, c.t(0), c.t(1), {}, {}, {1}, {0}), c.out().elem)};
}

std::vector<Value> bmm(LowerCtx& c) {
  return {c.b.convert(dot(c, c.t(0), c.t(1), {0}, {0}, {2}, {1}), c.out().elem)};
}

std::vector<Value> addmm(LowerCtx& c) {
  Value p = dot(c, c.t(1), c.t(2), {}, {}, {1}, {0});
  return {c.b.convert(scale_add(c, 0, 3, 4, p), c.out().elem)};
}

std::vector<Value> baddbmm(LowerCtx& c) {
  Value p = dot(c, c.t(1), c.t(2), {0}, {0}, {2}, {1});
  return {c.b.convert(scale_add(c, 0, 3, 4, p), c.out().elem)};
}

// addbmm: beta * self + alpha * sum over the batch of batch1[i] @ batch2[i],
// one dot contracting the batch and inner dims.
std::vector<Value> addbmm(LowerCtx& c) {
  Value p = dot(c, c.t(1), c.t(2), {}, {}, {0, 2}, {0, 1});
  return {c.b.convert(scale_add(c, 0, 3, 4, p), c.out().elem)};
}

std::vector<Value> mv(LowerCtx& c) {
  return {c.b.convert(dot(c, c.t(0), c.t(1), {}, {}, {1}, {0}), c.out().elem)};
}

std::vector<Value> dot1d(LowerCtx& c) {
  return {c.b.convert(dot(c, c.t(0), c.t(1), {}, {}, {0}, {0}), c.out().elem)};
}

// vdot(a, b) = sum(conj(a) * b): dot of the conjugated first operand.
std::vector<Value> vdot(LowerCtx& c) {
  Value a = c.t(0);
  if (shlo::is_complex(a.type.elem)) {
    TensorType pt{part_type(a.type.elem), a.type.dims};
    a = c.b.op("complex", {c.b.op("real", {a}, pt), c.b.unary("negate", c.b.op("imag", {a}, pt))}, a.type);
  }
  return {c.b.convert(dot(c, a, c.t(1), {}, {}, {0}, {0}), c.out().elem)};
}

std::vector<Value> addmv(LowerCtx& c) {
  Value p = dot(c, c.t(1), c.t(2), {}, {}, {1}, {0});
  return {c.b.convert(scale_add(c, 0, 3, 4, p), c.out().elem)};
}

// _scaled_mm(self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum):
// the float8 (or other) operands widened to f32, one f32 dot, then the
// scales as PyTorch's CPU kernel applies them: (a @ b) * scale_a * scale_b
// (+ bias), divided by scale_result for a float8 result. Per-tensor scales
// (one element) and row/column-wise ones ([M, 1] and [1, N]) are supported.
std::vector<Value> scaled_mm(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  const ElemType f32 = ElemType::F32;
  Value acc = b.dot_general(b.convert(c.t(0), f32), b.convert(c.t(1), f32), {}, {}, {1}, {0}, f32,
                            shlo::Precision::Highest);
  const std::vector<int64_t> mn = acc.type.dims;
  auto operand = [&](size_t k, const char* what) {
    Value s = b.convert(c.t(k), f32);
    if (s.type.numel() == 1) return b.broadcast_in_dim(b.reshape(s, {}), mn, {});
    const auto& d = s.type.dims;
    bool rowwise = d.size() == 2 && ((d[0] == mn[0] && d[1] == 1) || (d[0] == 1 && d[1] == mn[1]));
    bool vector = d.size() == 1 && d[0] == mn[1];
    if (!rowwise && !vector)
      throw std::invalid_argument(std::string("_scaled_mm on 'tpu': ") + what + " of shape " + s.type.str() +
                                  " (blockwise scaling) is not supported yet; use per-tensor or row-wise scales");
    return b.broadcast_to(s, mn);
  };
  acc = b.mul(b.mul(acc, operand(2, "scale_a")), operand(3, "scale_b"));
  if (c.has(4)) acc = b.add(acc, operand(4, "bias"));
  if (c.has(5)) acc = b.div(acc, operand(5, "scale_result"));
  return {b.convert(acc, out.elem)};
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

void append_linalg(std::vector<Lowering>& t) {
  t.push_back({"mm", mm, {"mm+"}, kUsesMatmulPrecision});
  t.push_back({"bmm", bmm, {"bmm+"}, kUsesMatmulPrecision});
  t.push_back({"addmm", addmm, {"addmm+"}, kUsesMatmulPrecision});
  t.push_back({"baddbmm", baddbmm, {"baddbmm+"}, kUsesMatmulPrecision});
  t.push_back({"addbmm", addbmm, {"addbmm+"}, kUsesMatmulPrecision});
  t.push_back({"mv", mv, {"mv+"}, kUsesMatmulPrecision});
  t.push_back({"dot", dot1d, {"dot+"}, kUsesMatmulPrecision});
  t.push_back({"vdot", vdot, {"vdot+"}, kUsesMatmulPrecision});
  t.push_back({"addmv", addmv, {"addmv+"}, kUsesMatmulPrecision});
  t.push_back({"scaled_mm", scaled_mm, {"_scaled_mm+"}, kNoPromotion});
  t.push_back({"linalg_cross", linalg_cross, {"linalg_cross+"}});
}

}  // namespace ttpu::ops
