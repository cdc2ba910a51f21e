// Linear algebra on the device: matrix products (mm, bmm, addmm, baddbmm,
// mv, dot, addmv), torch.linalg.cross and _scaled_mm. float32 dots request
// the precision that torch.get_float32_matmul_precision() asks for; bf16/f16
// dots accumulate in f32; _scaled_mm (float8 operands with scales) computes
// in f32. Decompositions that need the host run in csrc/aten/host_ops.cpp.

#include <optional>
#include <tuple>
#include <cmath>
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
// (one element), row/column-wise ones ([M, 1] and [1, N]) and the blockwise
// pairs of scaled_mm_blockwise are supported.
// Blockwise scales (PyTorch's meta accepts three pairs, by shape): scale_a
// [M, K/128] (1 x 128 runs) or [M/128, K/128] (128 x 128 tiles); scale_b
// [K/128, N] (runs) or [K/128, N/128] (tiles), K/128 and x/128 rounded up.
// They multiply the operands before the dot; nullopt when the scales are not
// blockwise (per-tensor or row-wise go after the dot).
std::optional<std::pair<Value, Value>> scaled_mm_blockwise(Builder& b, Value a, Value w, const Value& sa,
                                                           const Value& sb) {
  const int64_t m = a.type.dims[0], k = a.type.dims[1], n = w.type.dims[1];
  auto cdiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const auto &da = sa.type.dims, &db = sb.type.dims;
  if (da.size() != 2 || db.size() != 2) return std::nullopt;
  const int64_t kb = cdiv(k, 128);
  bool a_runs = da[0] == m && da[1] == kb, a_tiles = da[0] == cdiv(m, 128) && da[1] == kb;
  bool b_runs = db[0] == kb && db[1] == n, b_tiles = db[0] == kb && db[1] == cdiv(n, 128);
  // the meta's three pairs, tried in its order
  if (a_runs && b_tiles) a_tiles = false;
  else if (a_runs && b_runs) a_tiles = b_tiles = false;
  else if (a_tiles && b_runs) a_runs = b_tiles = false;
  else return std::nullopt;
  const ElemType f32 = ElemType::F32;
  // scale [r, kb] (r = rows or row tiles) -> [rows, K]
  auto expand = [&](const Value& s, bool tiles, int64_t rows) {
    int64_t r = s.type.dims[0], rr = tiles ? 128 : 1;
    Value e = b.reshape(b.broadcast_in_dim(b.convert(s, f32), {r, rr, kb, 128}, {0, 2}), {r * rr, kb * 128});
    return b.slice(e, {0, 0}, {rows, k}, {1, 1});
  };
  a = b.mul(a, expand(sa, a_tiles, m));
  w = b.mul(w, b.transpose(expand(b.transpose(sb, {1, 0}), b_tiles, n), {1, 0}));
  return std::make_pair(a, w);
}

// The float8 product [M, K] @ [K, N] -> f32. Portable (and XLA:CPU): both
// operands widened to f32, one f32 dot. GPU and TPU plugins have float8 dots
// (Hopper/Blackwell tensor cores, the TPU's MXU), so there the float8
// operands go to the dot as they are, with an f32 result.
using Float8Dot = Value (*)(Builder&, const Value&, const Value&);
Value widened_dot(Builder& b, const Value& a, const Value& w) {
  const ElemType f32 = ElemType::F32;
  return b.dot_general(b.convert(a, f32), b.convert(w, f32), {}, {}, {1}, {0}, f32, shlo::Precision::Highest);
}
Value native_float8_dot(Builder& b, const Value& a, const Value& w) {
  if (!shlo::is_float8(a.type.elem) || !shlo::is_float8(w.type.elem)) return widened_dot(b, a, w);
  return b.dot_general(a, w, {}, {}, {1}, {0}, ElemType::F32, shlo::Precision::Default);
}
const PerTarget<Float8Dot> kFloat8Dot{widened_dot, {{Target::Cuda, native_float8_dot}, {Target::Tpu, native_float8_dot}}};

namespace scaled_v2 {
std::optional<std::pair<Value, Value>> mx_operands(Builder& b, const Value& a, const Value& w, const Value& sa,
                                                   const Value& sb);
}

std::vector<Value> scaled_mm(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  const ElemType f32 = ElemType::F32;
  const Value &sa = c.t(2), &sb = c.t(3);
  Value a = c.t(0), w = c.t(1);
  bool rowwise = sa.type.dims.size() == 2 && sb.type.dims.size() == 2 && sa.type.dims[1] == 1 &&
                 sb.type.dims[0] == 1 && sa.type.dims[0] == a.type.dims[0] && sb.type.dims[1] == w.type.dims[1];
  bool blockwise = false;
  auto mx = scaled_v2::mx_operands(b, a, w, sa, sb);  // MX / NVFP4 block scales
  if (!mx) a = b.convert(a, f32), w = b.convert(w, f32);
  if (mx) {
    std::tie(a, w) = *mx;
    blockwise = true;
  } else if (!rowwise && sa.type.numel() != 1) {
    if (auto ops = scaled_mm_blockwise(b, a, w, sa, sb)) {
      std::tie(a, w) = *ops;
      blockwise = true;
    }
  }
  // blockwise scales multiply the operands first, so only per-tensor and
  // row-wise scales leave the float8 operands to the dot
  Value acc = blockwise ? widened_dot(b, a, w) : kFloat8Dot.get()(b, c.t(0), c.t(1));
  const std::vector<int64_t> mn = acc.type.dims;
  auto operand = [&](size_t k, const char* what) {
    Value s = b.convert(c.t(k), f32);
    if (s.type.numel() == 1) return b.broadcast_in_dim(b.reshape(s, {}), mn, {});
    const auto& d = s.type.dims;
    bool rowwise = d.size() == 2 && ((d[0] == mn[0] && d[1] == 1) || (d[0] == 1 && d[1] == mn[1]));
    bool vector = d.size() == 1 && d[0] == mn[1];
    if (!rowwise && !vector)
      throw std::invalid_argument(std::string("_scaled_mm on 'tpu': ") + what + " of shape " + s.type.str() +
                                  " matches none of the scalings: one element, row-wise ([M, 1] / [1, N]), or "
                                  "blockwise ([M, K/128] or [M/128, K/128] with [K/128, N] or [K/128, N/128])");
    return b.broadcast_to(s, mn);
  };
  if (!blockwise) acc = b.mul(b.mul(acc, operand(2, "scale_a")), operand(3, "scale_b"));
  if (c.has(4)) acc = b.add(acc, operand(4, "bias"));
  if (c.has(5)) acc = b.div(acc, operand(5, "scale_result"));
  return {b.convert(acc, out.elem)};
}

// _scaled_mm_v2 (torch.nn.functional.scaled_mm): the operands' values times
// their scales under each operand's recipes, one f32 dot, bias, out_dtype.
// Recipes (torch.nn.functional.ScalingType): TensorWise (one f32), RowWise
// ([M, 1] / [1, N] f32), BlockWise1x16 / 1x32 / 1x128 (a scale per run of
// 16/32/128 elements along K: MXFP8/MXFP4 with e8m0 scales, NVFP4 with e4m3
// scales and a second TensorWise one), BlockWise128x128 (a scale per 128 x 128
// tile, DeepSeek's weights). Scales of blocks come row-major
// ([rows, K / block]) or in cuBLAS's SWIZZLE_32_4_4 layout: padded to
// 128 x 4 tiles, each stored as [32][4][4] = [row % 32][row / 32][col].
// float4_e2m1fn_x2 operands are unpacked here (element 2i in the low nibble),
// so dequantisation and the matmul are one device program.
namespace scaled_v2 {

enum Recipe : int64_t { TensorWise = 0, RowWise = 1, Block1x16 = 2, Block1x32 = 3, Block1x128 = 4, Block128x128 = 5 };
enum Swizzle : int64_t { NoSwizzle = 0, Swizzle32x4x4 = 1 };

[[noreturn]] void refuse(const std::string& what) { throw ValueError("_scaled_mm_v2 on 'tpu': " + what); }
[[noreturn]] void not_yet(const std::string& what) { throw Unsupported("_scaled_mm_v2 on 'tpu': " + what); }

// e2m1 codes (0..15) to f32: sign bit 3, exponent bits 1-2 (bias 1), mantissa bit 0.
Value e2m1_to_f32(Builder& b, const Value& codes) {
  static const double kValues[16] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                     -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
  std::vector<Value> table;
  for (double v : kValues) table.push_back(b.reshape(b.constant(v, ElemType::F32), {1}));
  return b.gather_flat(b.concatenate(table, 0), b.convert(codes, ElemType::S32));
}

// The operand's values in f32, [rows, K] for a (k_dim 1) and [K, cols] for b (k_dim 0).
Value values(Builder& b, const Value& x, int64_t k_dim) {
  if (x.type.elem != ElemType::F4E2M1FNX2) return b.convert(x, ElemType::F32);
  TensorType u8{ElemType::U8, x.type.dims};
  Value bytes = b.bitcast(x, u8);
  Value lo = b.binary("and", bytes, b.constant_int(15, ElemType::U8, x.type.dims));
  Value hi = b.binary("shift_right_logical", bytes, b.constant_int(4, ElemType::U8, x.type.dims));
  // interleave along K: [.., K/2, ..] -> [.., K/2, 2, ..] -> [.., K, ..]
  std::vector<int64_t> one = x.type.dims;
  one.insert(one.begin() + k_dim + 1, 1);
  Value pair = b.concatenate({b.reshape(lo, one), b.reshape(hi, one)}, k_dim + 1);
  std::vector<int64_t> dims = x.type.dims;
  dims[k_dim] *= 2;
  return e2m1_to_f32(b, b.reshape(pair, dims));
}

// A scale's value in f32 (e8m0: 2^(byte - 127), byte 255 is NaN).
Value scale_f32(Builder& b, const Value& s) {
  if (s.type.elem != ElemType::F8E8M0FNU) return b.convert(s, ElemType::F32);
  Value bits = b.convert(b.bitcast(s, TensorType{ElemType::U8, s.type.dims}), ElemType::S32);
  Value f = b.bitcast(b.binary("shift_left", bits, b.constant_int(23, ElemType::S32, s.type.dims)),
                      TensorType{ElemType::F32, s.type.dims});
  // byte 0 is 2^-127, a float32 denormal the shift cannot make
  Value zero = b.compare(shlo::Compare::EQ, bits, b.constant_int(0, ElemType::S32, s.type.dims));
  f = b.select(zero, b.constant(std::ldexp(1.0, -127), ElemType::F32, s.type.dims), f);
  Value nan = b.compare(shlo::Compare::EQ, bits, b.constant_int(255, ElemType::S32, s.type.dims));
  return b.select(nan, b.constant(NAN, ElemType::F32, s.type.dims), f);
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Block scales as [rows, K / block] (row-major, or un-swizzled).
Value block_scales(Builder& b, const Value& s, int64_t rows, int64_t blocks, int64_t swizzle, const char* what) {
  int64_t n = s.type.numel();
  if (swizzle == NoSwizzle) {
    if (n != rows * blocks)
      refuse(std::string(what) + " has " + std::to_string(n) + " elements; row-major block scales need rows x K/block = " +
             std::to_string(rows * blocks));
    return b.reshape(s, {rows, blocks});
  }
  if (swizzle != Swizzle32x4x4) refuse(std::string(what) + ": unknown swizzle " + std::to_string(swizzle));
  int64_t pr = round_up(rows, 128), pc = round_up(blocks, 4);
  if (n != pr * pc)
    refuse(std::string(what) + " has " + std::to_string(n) + " elements; SWIZZLE_32_4_4 block scales need " +
           std::to_string(pr) + " x " + std::to_string(pc) + " (rows and K/block padded to 128 and 4)");
  Value t = b.reshape(s, {pr / 128, pc / 4, 32, 4, 4});  // [tile row][tile col][row % 32][row / 32 % 4][col]
  t = b.reshape(b.transpose(t, {0, 3, 2, 1, 4}), {pr, pc});
  return b.slice(t, {0, 0}, {rows, blocks}, {1, 1});
}

int64_t block_size(int64_t recipe) {
  switch (recipe) {
    case Block1x16: return 16;
    case Block1x32: return 32;
    case Block1x128: return 128;
    default: return 0;
  }
}

// An operand's values times its block scales ([rows, K / bs], each repeated
// bs times along K); a is [rows, K], b is [K, rows].
Value times_block_scales(Builder& b, const Value& x, const Value& blocks, int64_t rows, int64_t k, int64_t bs,
                         bool is_a) {
  Value per_k = b.reshape(b.broadcast_in_dim(blocks, {rows, k / bs, bs}, {0, 1}), {rows, k});
  return b.mul(x, is_a ? per_k : b.transpose(per_k, {1, 0}));
}

// torch._scaled_mm (v1) with block scales, as CUDA takes them: e8m0 scales
// make it MX (a scale per 32 along K; float8 or packed float4 operands),
// e4m3 scales with float4 operands NVFP4 (a scale per 16), both in cuBLAS's
// SWIZZLE_32_4_4 layout, of any shape holding the padded count (torchao's
// MX and NVFP4 tensors call it so). The operands in f32 times their scales,
// or nullopt when the scales are not block scales.
std::optional<std::pair<Value, Value>> mx_operands(Builder& b, const Value& a, const Value& w, const Value& sa,
                                                   const Value& sb) {
  const bool fp4 = a.type.elem == ElemType::F4E2M1FNX2;
  int64_t bs = 0;
  if (sa.type.elem == ElemType::F8E8M0FNU && sb.type.elem == ElemType::F8E8M0FNU) bs = 32;
  else if (fp4 && sa.type.elem == ElemType::F8E4M3FN && sb.type.elem == ElemType::F8E4M3FN) bs = 16;
  if (!bs) return std::nullopt;
  Value av = values(b, a, 1), wv = values(b, w, 0);
  const int64_t m = av.type.dims[0], k = av.type.dims[1], n = wv.type.dims[1];
  if (k % bs)
    throw ValueError("_scaled_mm on 'tpu': K " + std::to_string(k) + " is not a multiple of the block of " +
                     std::to_string(bs));
  Value ba = block_scales(b, scale_f32(b, sa), m, k / bs, Swizzle32x4x4, "scale_a");
  Value bb = block_scales(b, scale_f32(b, sb), n, k / bs, Swizzle32x4x4, "scale_b");
  return std::make_pair(times_block_scales(b, av, ba, m, k, bs, true), times_block_scales(b, wv, bb, n, k, bs, false));
}

}  // namespace scaled_v2

std::vector<Value> scaled_mm_v2(LowerCtx& c) {
  using namespace scaled_v2;
  Builder& b = c.b;
  const ElemType f32 = ElemType::F32;
  if (!c.ints(10).empty()) not_yet("contraction_dim is not supported yet (the default, K of a [M, K] @ [K, N], is)");
  Value a = values(b, c.t(0), 1), w = values(b, c.t(1), 0);
  const int64_t m = a.type.dims[0], k = a.type.dims[1], n = w.type.dims[1];
  if (w.type.dims[0] != k) refuse("operands of K " + std::to_string(k) + " and " + std::to_string(w.type.dims[0]));
  std::vector<int64_t> mn{m, n};
  Value post = b.constant(1.0, f32, mn);  // scales applied to the product
  // One operand's scales: block scales multiply its values, the others the product.
  auto apply = [&](Value x, size_t list_k, size_t recipe_k, size_t swizzle_k, bool is_a) {
    const auto& scales = c.list(list_k);
    const auto& recipes = c.ints(recipe_k);
    const auto& swizzles = c.ints(swizzle_k);
    const char* what = is_a ? "scale_a" : "scale_b";
    if (scales.size() != recipes.size()) refuse(std::string(what) + ": one recipe per scale is needed");
    int64_t rows = is_a ? m : n;
    for (size_t i = 0; i < scales.size(); ++i) {
      Value s = scale_f32(b, scales[i]);
      int64_t r = recipes[i], bs = block_size(r);
      int64_t sw = i < swizzles.size() ? swizzles[i] : NoSwizzle;
      if (r == TensorWise) {
        if (s.type.numel() != 1) refuse(std::string(what) + ": a TensorWise scale has one element");
        post = b.mul(post, b.broadcast_in_dim(b.reshape(s, {}), mn, {}));
      } else if (r == RowWise) {
        if (s.type.numel() != rows) refuse(std::string(what) + ": a RowWise scale has one element per row");
        post = b.mul(post, b.broadcast_in_dim(b.reshape(s, {rows}), mn, {is_a ? 0 : 1}));
      } else if (bs) {
        if (k % bs) refuse("K " + std::to_string(k) + " is not a multiple of the block of " + std::to_string(bs));
        x = times_block_scales(b, x, block_scales(b, s, rows, k / bs, sw, what), rows, k, bs, is_a);
      } else if (r == Block128x128) {
        // DeepSeek-style tiles: one scale per 128 (rows) x 128 (K) tile, given
        // as PyTorch lays them out, [K tiles (may be padded to 4), row tiles]
        // (the transposed view of a [row tiles, K tiles] tensor).
        if (sw != NoSwizzle) refuse(std::string(what) + ": BlockWise128x128 scales are not swizzled");
        if (k % 128) refuse("K " + std::to_string(k) + " is not a multiple of the block of 128");
        int64_t kb = k / 128, rb = (rows + 127) / 128;
        const auto& d = s.type.dims;
        if (d.size() != 2 || d[0] < kb || d[1] != rb)
          refuse(std::string(what) + " of shape " + s.type.str() + ": BlockWise128x128 scales need [" +
                 std::to_string(kb) + " (K / 128, or more when padded), " + std::to_string(rb) + " (ceil(rows / 128))]");
        Value tiles = b.transpose(b.slice(s, {0, 0}, {kb, rb}, {1, 1}), {1, 0});  // [rb, kb]
        Value per = b.reshape(b.broadcast_in_dim(tiles, {rb, 128, kb, 128}, {0, 2}), {rb * 128, k});
        per = b.slice(per, {0, 0}, {rows, k}, {1, 1});
        x = b.mul(x, is_a ? per : b.transpose(per, {1, 0}));
      } else {
        refuse(std::string(what) + ": unknown scaling recipe " + std::to_string(r));
      }
    }
    return x;
  };
  a = apply(a, 2, 3, 4, true);
  w = apply(w, 5, 6, 7, false);
  Value acc = b.dot_general(a, w, {}, {}, {1}, {0}, f32, shlo::Precision::Highest);
  acc = b.mul(acc, post);
  if (c.has(8)) acc = b.add(acc, b.broadcast_to(b.convert(c.t(8), f32), mn));
  return {b.convert(acc, c.out().elem)};
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
  t.push_back({"scaled_mm_v2", scaled_mm_v2, {"_scaled_mm_v2+"}, kNoPromotion});
  t.push_back({"linalg_cross", linalg_cross, {"linalg_cross+"}});
}

}  // namespace ttpu::ops
