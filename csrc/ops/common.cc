// Shared pieces of the lowering layer: argument accessors, type helpers,
// strided-view gather/scatter, and the assembled table.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include "ops/lowering.h"

#include <atomic>

namespace ttpu::ops {

static const Arg& arg_at(const std::vector<Arg>& args, size_t i) {
  if (i >= args.size()) throw std::runtime_error("lowering: argument index out of range");
  return args[i];
}

size_t LowerCtx::at(std::string_view name) const {
  if (names)
    for (size_t k = 0; k < names->size(); ++k)
      if ((*names)[k] == name) return k;
  throw std::logic_error("torch_tpu internal error: a lowering reads argument '" + std::string(name) +
                         "', which this overload's schema does not have");
}

const Value& LowerCtx::t(size_t i) const {
  const Arg& a = arg_at(args, i);
  if ((a.kind != Arg::Tensor && a.kind != Arg::Scalar) || a.values.empty())
    throw std::runtime_error("lowering: argument " + std::to_string(i) + " is not a tensor");
  return a.values[0];
}

bool LowerCtx::has(size_t i) const { return i < args.size() && args[i].kind != Arg::None; }

const std::vector<Value>& LowerCtx::list(size_t i) const { return arg_at(args, i).values; }

Value LowerCtx::scalar(size_t i, ElemType as) const { return to_type(b, t(i), as); }

Value LowerCtx::scalar_like(size_t i, const Value& like) const {
  return broadcast_convert(b, t(i), like.type);
}

int64_t LowerCtx::i(size_t k) const { return arg_at(args, k).i; }
double LowerCtx::d(size_t k) const { return arg_at(args, k).d; }
bool LowerCtx::flag(size_t k) const { return arg_at(args, k).b; }
const std::vector<int64_t>& LowerCtx::ints(size_t k) const { return arg_at(args, k).ints; }
const std::string& LowerCtx::str(size_t k) const { return arg_at(args, k).s; }

// TORCH_TPU_DEVICE_CHECKS=0 leaves the device-side checks out of every
// executable (to measure their cost, or for a user who trusts the indices).
bool device_checks_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_TPU_DEVICE_CHECKS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

void LowerCtx::check(const Value& ok, const Value& values, CheckSpec spec) {
  if (!device_checks_enabled()) return;
  Value v = b.convert(values, ElemType::S64);
  Value passed = b.constant_int(kCheckPassed, ElemType::S64, v.type.dims);
  Value bad = b.select(ok, passed, v);
  if (v.type.rank() > 0)
    bad = b.reduce(bad, b.constant_int(kCheckPassed, ElemType::S64), wrap_dims({}, v.type.rank()), shlo::Reducer::Max);
  checks.push_back({bad, std::move(spec)});
}

void LowerCtx::check_range(const Value& values, int64_t lo, int64_t hi, CheckSpec spec) {
  Value v = b.convert(values, ElemType::S64);
  Value ok = b.binary("and", b.compare(shlo::Compare::GE, v, b.constant_int(lo, ElemType::S64, v.type.dims)),
                      b.compare(shlo::Compare::LT, v, b.constant_int(hi, ElemType::S64, v.type.dims)));
  check(ok, v, std::move(spec));
}

void LowerCtx::check_index(const Value& index, int64_t dim, int64_t size, bool index_error, bool allow_negative,
                           const std::string& prefix) {
  if (size == 0 && index_error && index.type.numel() > 0)
    throw IndexError(prefix + "index is out of bounds for dimension with size 0");
  check_range(index, allow_negative ? -size : 0, size,
              {index_error, prefix + "index {} is out of bounds for dimension " + std::to_string(dim) +
                                " with size " + std::to_string(size)});
}

Value to_type(Builder& b, const Value& v, ElemType t) { return b.convert(v, t); }

Value broadcast_convert(Builder& b, const Value& v, const TensorType& to) {
  return b.broadcast_to(b.convert(v, to.elem), to.dims);
}

int64_t wrap_dim(int64_t dim, int64_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    throw IndexError("Dimension out of range (expected to be in range of [" + std::to_string(-r) + ", " +  // CPU's type
                     std::to_string(r - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (auto d : dims) {
    int64_t w = wrap_dim(d, rank);
    if (rank == 0) continue;  // reducing a scalar over dim 0/-1 is a no-op
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ElemType accumulate_type(ElemType t) {
  if (t == ElemType::F16 || t == ElemType::BF16 || shlo::is_float8(t))
    return ElemType::F32;
  return t;
}

shlo::Precision to_shlo(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Highest: return shlo::Precision::Highest;
    case MatmulPrecision::High: return shlo::Precision::High;
    case MatmulPrecision::Medium: return shlo::Precision::Default;
  }
  return shlo::Precision::Highest;
}

// ---------------------------------------------------------------------------
// Views

bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}


Value reinterpret_flat(Builder& b, const Value& flat, ElemType to) {
  ElemType from = flat.type.elem;
  if (from == to) return flat;
  int64_t n = flat.type.dims.at(0);
  // complex32/bcomplex32 words go through their f16/bf16 halves: XLA's simplifier folds two
  // chained bitcast_converts of different widths (ui32 -> ui8 after f16 ->
  // ui32) into one with an invalid shape.
  if (shlo::is_packed_complex(from))
    return reinterpret_flat(b, b.reshape(b.bitcast(flat, TensorType{shlo::packed_half(from), {n, 2}}), {2 * n}), to);
  if (shlo::is_packed_complex(to)) {
    Value halves = reinterpret_flat(b, flat, shlo::packed_half(to));
    return b.bitcast(b.reshape(halves, {halves.type.dims[0] / 2, 2}), TensorType{to, {halves.type.dims[0] / 2}});
  }
  // bitcast_convert does not take complex types: go through (real, imag) pairs
  if (shlo::is_complex(from)) {
    TensorType part{part_type(from), {n, 1}};
    Value re = b.reshape(b.op("real", {flat}, TensorType{part.elem, {n}}), part.dims);
    Value im = b.reshape(b.op("imag", {flat}, TensorType{part.elem, {n}}), part.dims);
    return reinterpret_flat(b, b.reshape(b.concatenate({re, im}, 1), {2 * n}), to);
  }
  if (shlo::is_complex(to)) {
    ElemType pt = part_type(to);
    Value parts = reinterpret_flat(b, flat, pt);
    int64_t m = parts.type.dims[0] / 2;
    Value pairs = b.reshape(parts, {m, 2});
    Value re = b.reshape(b.slice(pairs, {0, 0}, {m, 1}, {1, 1}), {m});
    Value im = b.reshape(b.slice(pairs, {0, 1}, {m, 2}, {1, 1}), {m});
    return b.op("complex", {re, im}, TensorType{to, {m}});
  }
  Value bytes = flat;
  if (from == ElemType::Pred) {
    bytes = b.convert(flat, ElemType::U8);
  } else if (shlo::byte_size(from) == 1) {
    bytes = b.bitcast(flat, TensorType{ElemType::U8, {n}});
  } else {
    int64_t k = shlo::byte_size(from);
    bytes = b.reshape(b.bitcast(flat, TensorType{ElemType::U8, {n, k}}), {n * k});
  }
  int64_t total = bytes.type.dims[0];
  if (to == ElemType::U8) return bytes;
  if (to == ElemType::Pred) return b.convert(bytes, ElemType::Pred);
  int64_t k = shlo::byte_size(to);
  if (k == 1) return b.bitcast(bytes, TensorType{to, {total}});
  if (total % k != 0) throw std::runtime_error("view(dtype): storage size is not a multiple of the element size");
  return b.bitcast(b.reshape(bytes, {total / k, k}), TensorType{to, {total / k}});
}

static int64_t numel_of(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Element index of every view element in the flat base, as an s64 tensor.
static Value view_indices(Builder& b, const ViewSpec& v, const Value* offset) {
  TensorType it{ElemType::S64, v.sizes};
  Value idx = offset ? b.broadcast_in_dim(*offset, v.sizes, {}) : b.constant_int(v.offset, ElemType::S64, v.sizes);
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1 || v.strides[d] == 0) continue;
    Value io = b.iota(it, static_cast<int64_t>(d));
    idx = b.add(idx, b.mul(io, b.constant_int(v.strides[d], ElemType::S64, v.sizes)));
  }
  return idx;
}

// A view whose non-broadcast dims, sorted by stride, nest without overlap
// (each stride a multiple of the next, and at least that dim's extent): the
// transpose/permute/expand/split/narrow/select/diagonal cases. The region it
// touches, [offset, offset + rows * outer_stride), is a dense array `dense`
// in which the view is the leading corner block (sizes, 1), so it is read and
// written with dynamic_slice + reshape + slice + transpose instead of a
// per-element gather. Overlapping views (unfold) keep the gather path.
struct StridedBlock {
  std::vector<int64_t> order;        // original dims sorted by stride (outermost first)
  std::vector<int64_t> block_sizes;  // sizes in that order
  std::vector<int64_t> dense;        // the region as a dense array
  std::vector<int64_t> corner;       // the block inside it: block_sizes + {1}
  int64_t length = 1;                // elements in the region
  int64_t pad = 0;                   // zeros appended so the region fits any valid offset
  bool is_dense = true;              // corner == dense (or no dims): no slicing needed
};
static bool as_strided_block(const ViewSpec& v, StridedBlock& p) {
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1 || v.strides[d] == 0) continue;
    if (v.strides[d] < 0) return false;
    p.order.push_back(static_cast<int64_t>(d));
  }
  std::stable_sort(p.order.begin(), p.order.end(),
                   [&](int64_t a, int64_t c) { return v.strides[a] > v.strides[c]; });
  for (auto d : p.order) p.block_sizes.push_back(v.sizes[d]);
  size_t k = p.order.size();
  if (k == 0) return true;
  int64_t span = 1;  // one past the last element the view touches, from the offset
  for (size_t i = 0; i < k; ++i) {
    int64_t s = v.strides[p.order[i]];
    span += (v.sizes[p.order[i]] - 1) * s;
    if (i + 1 < k) {
      int64_t inner = v.strides[p.order[i + 1]];
      if (s % inner != 0 || s / inner < v.sizes[p.order[i + 1]]) return false;
      p.dense.push_back(i == 0 ? v.sizes[p.order[0]] : v.strides[p.order[i - 1]] / s);
    } else {
      p.dense.push_back(i == 0 ? v.sizes[p.order[0]] : v.strides[p.order[i - 1]] / s);
      p.dense.push_back(s);
    }
  }
  p.corner = p.block_sizes;
  p.corner.push_back(1);
  p.length = v.sizes[p.order[0]] * v.strides[p.order[0]];
  p.pad = p.length - span;
  p.is_dense = p.corner == p.dense;
  return true;
}

static Value start_of(Builder& b, const ViewSpec& v, const Value* offset) {
  return offset ? *offset : b.constant_int(v.offset, ElemType::S64);
}

static Value padded(Builder& b, const Value& flat, int64_t pad) {
  if (pad <= 0) return flat;
  return b.pad(flat, b.constant(0, flat.type.elem), {0}, {pad});
}

static std::vector<int64_t> zeros_like(const std::vector<int64_t>& v) { return std::vector<int64_t>(v.size(), 0); }

Value gather_view(Builder& b, const Value& base, const ViewSpec& v, const Value* offset) {
  Value flat = b.reshape(base, {base.type.numel()});
  flat = reinterpret_flat(b, flat, v.elem);
  int64_t n = numel_of(v.sizes);
  if (n == 0) return b.constant(0, v.elem, v.sizes);
  StridedBlock p;
  if (as_strided_block(v, p)) {
    Value block = b.dynamic_slice(padded(b, flat, p.pad), {start_of(b, v, offset)}, {p.length});
    if (!p.is_dense) {
      block = b.reshape(block, p.dense);
      block = b.slice(block, zeros_like(p.corner), p.corner, std::vector<int64_t>(p.corner.size(), 1));
    }
    block = b.reshape(block, p.block_sizes);
    // Transpose the block into increasing original-dim order, then broadcast.
    std::vector<int64_t> sorted = p.order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> perm;
    for (auto d : sorted) perm.push_back(std::find(p.order.begin(), p.order.end(), d) - p.order.begin());
    block = b.transpose(block, perm);
    return b.broadcast_in_dim(block, v.sizes, sorted);
  }
  return b.gather_flat(flat, view_indices(b, v, offset));
}

Value scatter_view(Builder& b, const Value& base, const Value& value, const ViewSpec& v, const Value* offset) {
  Value flat = b.reshape(base, {base.type.numel()});
  flat = reinterpret_flat(b, flat, v.elem);
  int64_t n = numel_of(v.sizes);
  if (n == 0) return flat;
  Value val = b.broadcast_to(b.convert(value, v.elem), v.sizes);
  StridedBlock p;
  bool no_broadcast = true;
  for (size_t d = 0; d < v.sizes.size(); ++d) no_broadcast = no_broadcast && !(v.strides[d] == 0 && v.sizes[d] > 1);
  if (no_broadcast && as_strided_block(v, p)) {
    std::vector<int64_t> squeezed_dims;  // dims of `val` without size-1 dims, in original order
    std::vector<int64_t> kept;
    for (size_t d = 0; d < v.sizes.size(); ++d)
      if (v.sizes[d] != 1) kept.push_back(static_cast<int64_t>(d));
    for (auto d : kept) squeezed_dims.push_back(v.sizes[d]);
    Value sq = b.reshape(val, squeezed_dims);
    std::vector<int64_t> perm;
    for (auto d : p.order) perm.push_back(std::find(kept.begin(), kept.end(), d) - kept.begin());
    Value block = b.transpose(sq, perm);
    Value start = start_of(b, v, offset);
    if (p.is_dense)
      return b.dynamic_update_slice(flat, b.reshape(block, {p.length}), std::vector<Value>{start});
    // Read the region, overwrite its corner block, write the region back.
    int64_t total = flat.type.dims[0];
    Value ext = padded(b, flat, p.pad);
    Value region = b.reshape(b.dynamic_slice(ext, {start}, {p.length}), p.dense);
    std::vector<Value> origin;
    for (size_t i = 0; i < p.dense.size(); ++i) origin.push_back(b.constant_int(0, ElemType::S64));
    region = b.dynamic_update_slice(region, b.reshape(block, p.corner), origin);
    ext = b.dynamic_update_slice(ext, b.reshape(region, {p.length}), std::vector<Value>{start});
    return p.pad > 0 ? b.slice(ext, {0}, {total}, {1}) : ext;
  }
  return b.scatter_flat(flat, view_indices(b, v, offset), val);
}

// ---------------------------------------------------------------------------

const std::vector<Lowering>& lowering_table() {
  static const std::vector<Lowering> table = [] {
    std::vector<Lowering> t;
    append_arithmetic(t);
    append_unary(t);
    append_activations(t);
    append_reductions(t);
    append_norms(t);
    append_losses(t);
    append_linalg(t);
    append_creation(t);
    append_shape(t);
    append_random(t);
    append_indexing(t);
    append_embedding(t);
    append_convolution(t);
    append_pooling(t);
    append_sort_scan(t);
    append_special(t);
    append_amp(t);
    append_rnn(t);
    append_attention(t);
    return t;
  }();
  return table;
}

namespace {
bool rounds_to_common(const LowerCtx& c, ElemType compute, ElemType operand, bool zero_dim) {
  ElemType common = c.common;
  return (common == ElemType::F16 || common == ElemType::BF16) && shlo::is_float(compute) && compute != common &&
         operand != common && !(zero_dim && c.full_precision_scalars) &&
         (shlo::is_float(operand) || shlo::is_integral(operand));
}
}  // namespace

Value ew_in(LowerCtx& c, size_t i, ElemType compute) {
  Value v = c.t(i);
  // CPU's TensorIterator casts each operand to the common dtype before a
  // reduced-precision kernel widens it to f32: an int16 (or f32) operand of
  // a bf16 op is rounded to bf16 first (remainder(int16, bf16) is off by
  // 0.5 otherwise), and so is a Python scalar (bf16 + 1.1 adds 1.1015625),
  // except in mul and div (LowerCtx::full_precision_scalars).
  if (rounds_to_common(c, compute, v.type.elem, v.type.rank() == 0)) v = c.b.convert(v, c.common);
  return broadcast_convert(c.b, v, TensorType{compute, c.out().dims});
}

Value ew_scalar(LowerCtx& c, size_t i, const Value& like) {
  if (!rounds_to_common(c, like.type.elem, ElemType::F64, /*zero_dim=*/true))
    return c.scalar_like(i, like);
  Value s = c.b.convert(c.scalar(i, c.common), like.type.elem);
  return like.type.rank() == 0 ? s : c.b.broadcast_in_dim(s, like.type.dims, {});
}

ElemType float_compute(LowerCtx& c) { return accumulate_type(c.out().elem); }

std::vector<Value> as_out(LowerCtx& c, const Value& v) { return {c.b.convert(v, c.out().elem)}; }

namespace {
std::atomic<int> g_target{static_cast<int>(Target::Portable)};
}  // namespace

Target target() { return static_cast<Target>(g_target.load(std::memory_order_relaxed)); }
void set_target(Target t) { g_target.store(static_cast<int>(t)); }
Target target_from_platform(const std::string& platform) {
  if (platform == "cpu") return Target::Cpu;
  if (platform == "cuda" || platform == "gpu" || platform == "rocm") return Target::Cuda;
  if (platform == "tpu") return Target::Tpu;
  return Target::Portable;
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

namespace {

// Portable: a plain reduce (what GPU and TPU compilers handle best).
Value plain_sum(Builder& b, const Value& x, const std::vector<int64_t>& dims) {
  return b.reduce(x, b.constant(0, x.type.elem), dims, shlo::Reducer::Add);
}

// XLA:CPU: an f32 sum over leading dims (bias and LayerNorm weight
// gradients) as a matrix product ones[2, R] . x[R, C], keeping row 0. XLA:CPU
// emits the reduce as a slow column walk (32 us for 256x512 alone). A
// vector-matrix product ones[R] . x is fast alone (11 us) but XLA fuses its
// producer into it and emits the fusion element by element, re-evaluating
// the producer per column: in the GPT backward those fusions were about 9% of
// the step. Two rows make it a matrix product that goes to the GEMM library,
// unfused. Still an f32 sum.
Value column_sum_as_product(Builder& b, const Value& x, const std::vector<int64_t>& dims) {
  bool leading = !dims.empty() && static_cast<int>(dims.size()) < x.type.rank();
  for (size_t i = 0; i < dims.size() && leading; ++i) leading = dims[i] == static_cast<int64_t>(i);
  if (!leading || x.type.elem != ElemType::F32 || x.type.numel() == 0) return plain_sum(b, x, dims);
  int64_t rows = 1, cols = 1;
  for (int i = 0; i < x.type.rank(); ++i) (i < static_cast<int>(dims.size()) ? rows : cols) *= x.type.dims[i];
  Value ones = b.constant(1, ElemType::F32, {2, rows});
  Value s2 = b.dot_general(ones, b.reshape(x, {rows, cols}), {}, {}, {1}, {0}, ElemType::F32, shlo::Precision::Highest);
  Value s = b.slice(s2, {0, 0}, {1, cols}, {1, 1});
  std::vector<int64_t> kept(x.type.dims.begin() + static_cast<long>(dims.size()), x.type.dims.end());
  return b.reshape(s, kept);
}

using SumRule = Value (*)(Builder&, const Value&, const std::vector<int64_t>&);
const PerTarget<SumRule> kSumDims{plain_sum, {{Target::Cpu, column_sum_as_product}}};

}  // namespace

Value sum_dims(Builder& b, const Value& x, const std::vector<int64_t>& dims) { return kSumDims.get()(b, x, dims); }

Value linspace_values(Builder& b, const Value& start0, const Value& end0, int64_t n) {
  ElemType ct = start0.type.elem;
  Value start = b.broadcast_in_dim(start0, {n}, {});
  Value end = b.broadcast_in_dim(end0, {n}, {});
  if (n == 1) return start;
  Value step = b.div(b.sub(end, start), b.constant(static_cast<double>(n - 1), ct, {n}));
  Value i = b.iota(TensorType{ct, {n}}, 0);
  Value from_start = b.add(start, b.mul(i, step));
  Value from_end = b.sub(end, b.mul(b.sub(b.constant(static_cast<double>(n - 1), ct, {n}), i), step));
  Value half = b.constant(static_cast<double>(n / 2), ct, {n});
  return b.select(b.compare(shlo::Compare::LT, i, half), from_start, from_end);
}

Value reduce_loss(Builder& b, const Value& l, int64_t reduction) {
  if (reduction == 0) return l;
  std::vector<int64_t> all;
  for (int i = 0; i < l.type.rank(); ++i) all.push_back(i);
  Value s = b.reduce(l, b.constant(0, l.type.elem), all, shlo::Reducer::Add);
  if (reduction == 1) s = b.div(s, b.constant(static_cast<double>(std::max<int64_t>(l.type.numel(), 1)), l.type.elem));
  return s;
}

Value prefix_scan(Builder& b, const Value& x, int64_t dim, bool product) {
  // Inclusive scan by doubling: after the step with shift k every element
  // combines the 2k elements ending at it (log2(n) steps of O(n)); the
  // shifted-in cells hold the identity.
  int64_t n = x.type.dims.at(dim);
  Value acc = x;
  std::vector<int64_t> start(x.type.rank(), 0), stride(x.type.rank(), 1), lo(x.type.rank(), 0), hi(x.type.rank(), 0);
  for (int64_t k = 1; k < n; k *= 2) {
    std::vector<int64_t> limit = x.type.dims;
    limit[dim] = n - k;
    lo[dim] = k;
    Value shifted = b.pad(b.slice(acc, start, limit, stride), b.constant(product ? 1 : 0, x.type.elem), lo, hi);
    acc = product ? b.mul(acc, shifted) : b.add(acc, shifted);
  }
  return acc;
}

Value prefix_sum(Builder& b, const Value& x, int64_t dim) { return prefix_scan(b, x, dim, false); }

}  // namespace ttpu::ops
