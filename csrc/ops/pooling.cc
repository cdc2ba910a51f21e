// Pooling and resampling over the trailing spatial dims (1-3 of them; any
// leading dims are batch): max pooling with indices, average pooling,
// adaptive max and average pooling, their backwards, and nearest /
// (bi/tri)linear upsampling with backwards.
//
// Pooling windows are enumerated offset by offset: each kernel offset is one
// strided slice of the padded input, so a k x k window costs k*k slices and
// elementwise ops (kernels are small). Backwards place each offset's share
// back with an interior-padded `pad` and sum. Upsampling is separable: each
// spatial dim is contracted with an [out, in] interpolation matrix built from
// iotas, and the backward contracts with its transpose.

#include <cmath>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

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

struct Window {
  int spatial = 2;
  std::vector<int64_t> k, s, p, d;
};

std::vector<int64_t> expand(const std::vector<int64_t>& v, int spatial, int64_t dflt) {
  std::vector<int64_t> r(spatial, dflt);
  for (int i = 0; i < spatial; ++i)
    if (!v.empty()) r[i] = v[v.size() == 1 ? 0 : i];
  return r;
}

// (kernel, stride, padding[, dilation]) starting at argument `first`.
Window window(LowerCtx& c, size_t first, int spatial, bool has_dilation) {
  Window w;
  w.spatial = spatial;
  w.k = expand(c.ints(first), spatial, 1);
  w.s = c.ints(first + 1).empty() ? w.k : expand(c.ints(first + 1), spatial, 1);
  w.p = expand(c.ints(first + 2), spatial, 0);
  w.d = has_dilation ? expand(c.ints(first + 3), spatial, 1) : std::vector<int64_t>(spatial, 1);
  return w;
}

int64_t lead(const Value& x, int spatial) { return x.type.rank() - spatial; }

// Padded extent of spatial dim i: large enough for every window and the input.
int64_t extent(const Window& w, int i, int64_t in, int64_t out) {
  return std::max((out - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1, w.p[i] + in);
}

Value pad_input(Builder& b, const Value& x, const Window& w, const std::vector<int64_t>& out, double fill) {
  int64_t l = lead(x, w.spatial);
  std::vector<int64_t> lo(x.type.rank(), 0), hi(x.type.rank(), 0);
  for (int i = 0; i < w.spatial; ++i) {
    lo[l + i] = w.p[i];
    hi[l + i] = extent(w, i, x.type.dims[l + i], out[i]) - w.p[i] - x.type.dims[l + i];
  }
  return b.pad(x, b.constant(fill, x.type.elem), lo, hi);
}

// Calls fn(offset, slice) for each kernel offset, slice = the window element at that offset for every output.
template <typename F>
void for_each_offset(Builder& b, const Value& xp, const Window& w, const std::vector<int64_t>& out, F fn) {
  int64_t l = lead(xp, w.spatial);
  std::vector<int64_t> off(w.spatial, 0);
  while (true) {
    std::vector<int64_t> start(xp.type.rank(), 0), limit = xp.type.dims, stride(xp.type.rank(), 1);
    for (int i = 0; i < w.spatial; ++i) {
      start[l + i] = off[i] * w.d[i];
      limit[l + i] = start[l + i] + (out[i] - 1) * w.s[i] + 1;
      stride[l + i] = w.s[i];
    }
    fn(off, b.slice(xp, start, limit, stride));
    int i = w.spatial - 1;
    while (i >= 0 && ++off[i] == w.k[i]) off[i--] = 0;
    if (i < 0) break;
  }
}

// Places per-output values `v` of one kernel offset at their input positions
// (padded coordinates), zeros elsewhere.
Value place(Builder& b, const Value& v, const Window& w, const std::vector<int64_t>& off,
            const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  int64_t l = lead(v, w.spatial);
  std::vector<int64_t> lo(v.type.rank(), 0), hi(v.type.rank(), 0), interior(v.type.rank(), 0);
  for (int i = 0; i < w.spatial; ++i) {
    lo[l + i] = off[i] * w.d[i];
    interior[l + i] = w.s[i] - 1;
    hi[l + i] = extent(w, i, in[i], out[i]) - lo[l + i] - ((out[i] - 1) * w.s[i] + 1);
  }
  return b.pad(v, b.constant(0, v.type.elem), lo, hi, interior);
}

// Crops padded coordinates back to the input.
Value crop(Builder& b, const Value& v, const Window& w, const std::vector<int64_t>& in) {
  int64_t l = lead(v, w.spatial);
  std::vector<int64_t> start(v.type.rank(), 0), limit = v.type.dims, stride(v.type.rank(), 1);
  for (int i = 0; i < w.spatial; ++i) {
    start[l + i] = w.p[i];
    limit[l + i] = w.p[i] + in[i];
  }
  return b.slice(v, start, limit, stride);
}

std::vector<int64_t> spatial_dims(const std::vector<int64_t>& dims, int spatial) {
  return std::vector<int64_t>(dims.end() - spatial, dims.end());
}

// Flat index (over the input's spatial dims) of kernel offset `off` for every output position.
Value offset_index(Builder& b, const TensorType& out_type, const Window& w, const std::vector<int64_t>& off,
                   const std::vector<int64_t>& in) {
  TensorType it{ElemType::S64, out_type.dims};
  int64_t l = static_cast<int64_t>(out_type.dims.size()) - w.spatial;
  Value flat = b.constant_int(0, ElemType::S64, it.dims);
  for (int i = 0; i < w.spatial; ++i) {
    Value pos = b.add(b.mul(b.iota(it, l + i), b.constant_int(w.s[i], ElemType::S64, it.dims)),
                      b.constant_int(off[i] * w.d[i] - w.p[i], ElemType::S64, it.dims));
    flat = b.add(b.mul(flat, b.constant_int(in[i], ElemType::S64, it.dims)), pos);
  }
  return flat;
}

template <int Spatial>
std::vector<Value> max_pool(LowerCtx& c) {
  // max_poolNd_with_indices(self, kernel, stride, padding, dilation, ceil_mode) -> (values, indices)
  Builder& b = c.b;
  Window w = window(c, 1, Spatial, true);
  Value x = c.t(0);
  auto in = spatial_dims(x.type.dims, Spatial), out = spatial_dims(c.out(0).dims, Spatial);
  bool is_float = shlo::is_float(x.type.elem);
  Value xp = pad_input(b, x, w, out, is_float ? -INFINITY : -9.2e18);
  Value best, best_i;
  bool first = true;
  for_each_offset(b, xp, w, out, [&](const std::vector<int64_t>& off, const Value& v) {
    Value idx = offset_index(b, v.type, w, off, in);
    if (first) {
      best = v;
      best_i = idx;
      first = false;
      return;
    }
    Value take = b.compare(Compare::GT, v, best);
    if (is_float) take = b.binary("or", take, b.compare(Compare::NE, v, v));
    best = b.select(take, v, best);
    best_i = b.select(take, idx, best_i);
  });
  return {b.reshape(best, c.out(0).dims), b.reshape(best_i, c.out(1).dims)};
}

template <int Spatial>
std::vector<Value> max_pool_backward(LowerCtx& c) {
  // max_poolNd_with_indices_backward(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices)
  Builder& b = c.b;
  Window w = window(c, 2, Spatial, true);
  Value g = c.b.convert(c.t(0), accumulate_type(c.out().elem));
  Value indices = c.t(7);
  auto in = spatial_dims(c.t(1).type.dims, Spatial), out = spatial_dims(g.type.dims, Spatial);
  TensorType padded = g.type;
  for (int i = 0; i < Spatial; ++i) padded.dims[lead(g, Spatial) + i] = extent(w, i, in[i], out[i]);
  Value acc = b.constant(0, g.type.elem, padded.dims);
  std::vector<int64_t> off(Spatial, 0);
  while (true) {
    Value mine = b.compare(Compare::EQ, indices, offset_index(b, indices.type, w, off, in));
    acc = b.add(acc, place(b, b.select(mine, g, b.constant(0, g.type.elem, g.type.dims)), w, off, in, out));
    int i = Spatial - 1;
    while (i >= 0 && ++off[i] == w.k[i]) off[i--] = 0;
    if (i < 0) break;
  }
  return {b.convert(crop(b, acc, w, in), c.out().elem)};
}

// Divisor of every output window: divisor_override, or the number of
// elements it covers (inside the input, or inside input + padding).
Value avg_divisor(LowerCtx& c, const Window& w, const TensorType& in_type, const std::vector<int64_t>& out,
                  bool include_pad, size_t override_arg) {
  Builder& b = c.b;
  ElemType t = accumulate_type(in_type.elem);
  TensorType ot{t, {}};
  int64_t l = static_cast<int64_t>(in_type.dims.size()) - w.spatial;
  ot.dims.assign(in_type.dims.begin(), in_type.dims.begin() + l);
  for (auto o : out) ot.dims.push_back(o);
  if (c.has(override_arg)) return b.constant(static_cast<double>(c.i(override_arg)), t, ot.dims);
  std::vector<int64_t> sp(in_type.dims.end() - w.spatial, in_type.dims.end());
  Value ones = b.constant(1, t, sp);
  Window w1 = w;  // the count only depends on the spatial dims
  std::vector<int64_t> lo(w.spatial), hi(w.spatial);
  for (int i = 0; i < w.spatial; ++i) {
    int64_t e = extent(w, i, sp[i], out[i]);
    if (include_pad) {
      // padding counts, but not the extra cells a ceil_mode window reaches past it
      lo[i] = w.p[i];
      hi[i] = std::min(w.p[i], e - w.p[i] - sp[i]);
    }
  }
  if (include_pad) ones = b.pad(ones, b.constant(1, t), lo, hi);
  std::vector<int64_t> lo2(w.spatial), hi2(w.spatial);
  for (int i = 0; i < w.spatial; ++i) {
    int64_t e = extent(w, i, sp[i], out[i]);
    lo2[i] = include_pad ? 0 : w.p[i];
    hi2[i] = e - lo2[i] - ones.type.dims[i];
  }
  Value op = b.pad(ones, b.constant(0, t), lo2, hi2);
  Value count;
  bool first = true;
  for_each_offset(b, op, w1, out, [&](const std::vector<int64_t>&, const Value& v) {
    count = first ? v : b.add(count, v);
    first = false;
  });
  std::vector<int64_t> keep;
  for (int i = 0; i < w.spatial; ++i) keep.push_back(l + i);
  return b.broadcast_in_dim(count, ot.dims, keep);
}

template <int Spatial>
std::vector<Value> avg_pool(LowerCtx& c) {
  // avg_poolNd(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override?)
  Builder& b = c.b;
  Window w = window(c, 1, Spatial, false);
  ElemType t = accumulate_type(c.out().elem);
  Value x = b.convert(c.t(0), t);
  auto out = spatial_dims(c.out().dims, Spatial);
  Value xp = pad_input(b, x, w, out, 0);
  Value sum;
  bool first = true;
  for_each_offset(b, xp, w, out, [&](const std::vector<int64_t>&, const Value& v) {
    sum = first ? v : b.add(sum, v);
    first = false;
  });
  Value div = avg_divisor(c, w, x.type, out, c.flag(5), 6);
  return {b.convert(b.reshape(b.div(sum, div), c.out().dims), c.out().elem)};
}

template <int Spatial>
std::vector<Value> avg_pool_backward(LowerCtx& c) {
  // avg_poolNd_backward(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override?)
  Builder& b = c.b;
  Window w = window(c, 2, Spatial, false);
  ElemType t = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), t);
  TensorType in_type{t, c.t(1).type.dims};
  auto in = spatial_dims(in_type.dims, Spatial), out = spatial_dims(g.type.dims, Spatial);
  Value share = b.div(g, b.reshape(avg_divisor(c, w, in_type, out, c.flag(6), 7), g.type.dims));
  TensorType padded = g.type;
  for (int i = 0; i < Spatial; ++i) padded.dims[lead(g, Spatial) + i] = extent(w, i, in[i], out[i]);
  Value acc = b.constant(0, t, padded.dims);
  std::vector<int64_t> off(Spatial, 0);
  while (true) {
    acc = b.add(acc, place(b, share, w, off, in, out));
    int i = Spatial - 1;
    while (i >= 0 && ++off[i] == w.k[i]) off[i--] = 0;
    if (i < 0) break;
  }
  return {b.convert(crop(b, acc, w, in), c.out().elem)};
}

// Upsampling

enum class Interp { Nearest, NearestExact, Linear };

// [out, in] interpolation matrix of one dim. `scale` < 0: not given.
Value interp_matrix(Builder& b, Interp mode, int64_t in, int64_t out, bool align_corners, double scale, ElemType t) {
  TensorType mt{t, {out, in}};
  TensorType it{ElemType::S64, {out, in}};
  Value o = b.iota(mt, 0);
  Value col = b.iota(it, 1);
  auto kk = [&](double v) { return b.constant(v, t, mt.dims); };
  auto ki = [&](int64_t v) { return b.constant_int(v, ElemType::S64, it.dims); };
  if (mode != Interp::Linear) {
    double sc = scale > 0 ? 1.0 / scale : static_cast<double>(in) / out;
    Value src = mode == Interp::Nearest ? b.mul(o, kk(sc)) : b.mul(b.add(o, kk(0.5)), kk(sc));
    Value idx = b.min(b.convert(b.unary("floor", src), ElemType::S64), ki(in - 1));
    return b.convert(b.compare(Compare::EQ, idx, col), t);
  }
  double sc = align_corners ? (out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0)
                            : (scale > 0 ? 1.0 / scale : static_cast<double>(in) / out);
  Value src = align_corners ? b.mul(o, kk(sc)) : b.max(b.sub(b.mul(b.add(o, kk(0.5)), kk(sc)), kk(0.5)), kk(0));
  Value f = b.unary("floor", src);
  Value i0 = b.min(b.convert(f, ElemType::S64), ki(in - 1));
  Value i1 = b.min(b.add(i0, ki(1)), ki(in - 1));
  Value l1 = b.sub(src, b.convert(i0, t));
  Value l0 = b.sub(kk(1), l1);
  Value zero = kk(0);
  return b.add(b.select(b.compare(Compare::EQ, col, i0), l0, zero), b.select(b.compare(Compare::EQ, col, i1), l1, zero));
}

// Contracts the trailing `spatial` dims of x with per-dim matrices; `transpose`
// contracts with their transposes (the backward).
Value separable(Builder& b, Value x, const std::vector<Value>& mats, bool transpose) {
  int spatial = static_cast<int>(mats.size());
  int64_t l = x.type.rank() - spatial;
  for (int i = 0; i < spatial; ++i) {
    // the dim being contracted is always at position l: finished dims move to the end
    x = b.dot_general(x, mats[i], {}, {}, {l}, {transpose ? 0 : 1}, x.type.elem, shlo::Precision::Highest);
  }
  return x;
}

struct UpsampleArgs {
  Interp mode;
  bool align_corners = false;
  std::vector<double> scales;  // < 0: not given
};

UpsampleArgs upsample_args(LowerCtx& c, Interp mode, int spatial, size_t align_arg, size_t first_scale) {
  UpsampleArgs a;
  a.mode = mode;
  if (mode == Interp::Linear) a.align_corners = c.flag(align_arg);
  for (int i = 0; i < spatial; ++i) a.scales.push_back(c.has(first_scale + i) ? c.d(first_scale + i) : -1.0);
  return a;
}

std::vector<Value> mats_for(Builder& b, const UpsampleArgs& a, const std::vector<int64_t>& in,
                            const std::vector<int64_t>& out, ElemType t) {
  std::vector<Value> m;
  for (size_t i = 0; i < in.size(); ++i) m.push_back(interp_matrix(b, a.mode, in[i], out[i], a.align_corners, a.scales[i], t));
  return m;
}

template <Interp Mode, int Spatial>
std::vector<Value> upsample(LowerCtx& c) {
  // upsample_*(self, output_size, [align_corners,] scales...)
  Builder& b = c.b;
  ElemType t = accumulate_type(c.out().elem);
  Value x = b.convert(c.t(0), t);
  bool linear = Mode == Interp::Linear;
  UpsampleArgs a = upsample_args(c, Mode, Spatial, 2, linear ? 3 : 2);
  auto m = mats_for(b, a, spatial_dims(x.type.dims, Spatial), spatial_dims(c.out().dims, Spatial), t);
  return {b.convert(separable(b, x, m, false), c.out().elem)};
}

template <Interp Mode, int Spatial>
std::vector<Value> upsample_backward(LowerCtx& c) {
  // upsample_*_backward(grad_output, output_size, input_size, [align_corners,] scales...)
  Builder& b = c.b;
  ElemType t = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), t);
  bool linear = Mode == Interp::Linear;
  UpsampleArgs a = upsample_args(c, Mode, Spatial, 3, linear ? 4 : 3);
  auto m = mats_for(b, a, spatial_dims(c.out().dims, Spatial), spatial_dims(g.type.dims, Spatial), t);
  return {b.convert(separable(b, g, m, true), c.out().elem)};
}

// Adaptive average pooling: output cell o of a dim averages input
// [floor(o * in / out), ceil((o + 1) * in / out)), so windows may overlap
// and differ in size; as a matrix [out, in] per dim it is separable too.
Value adaptive_matrix(Builder& b, int64_t in, int64_t out, ElemType t) {
  TensorType it{ElemType::S64, {out, in}};
  Value o = b.iota(it, 0), i = b.iota(it, 1);
  auto ki = [&](int64_t v) { return b.constant_int(v, ElemType::S64, it.dims); };
  Value start = b.div(b.mul(o, ki(in)), ki(out));
  Value end = b.div(b.add(b.mul(b.add(o, ki(1)), ki(in)), ki(out - 1)), ki(out));
  Value inside = b.binary("and", b.compare(Compare::GE, i, start), b.compare(Compare::LT, i, end));
  Value width = b.convert(b.sub(end, start), t);
  return b.select(inside, b.div(b.constant(1, t, it.dims), width), b.constant(0, t, it.dims));
}

std::vector<Value> adaptive_mats(Builder& b, const std::vector<int64_t>& in, const std::vector<int64_t>& out, ElemType t) {
  std::vector<Value> m;
  for (size_t i = 0; i < in.size(); ++i) m.push_back(adaptive_matrix(b, in[i], out[i], t));
  return m;
}

std::vector<Value> adaptive_avg_pool(LowerCtx& c) {
  // _adaptive_avg_poolNd(self, output_size)
  Builder& b = c.b;
  int spatial = static_cast<int>(c.ints(1).size());
  ElemType t = accumulate_type(c.out().elem);
  Value x = b.convert(c.t(0), t);
  auto m = adaptive_mats(b, spatial_dims(x.type.dims, spatial), spatial_dims(c.out().dims, spatial), t);
  return {b.convert(separable(b, x, m, false), c.out().elem)};
}

template <int Spatial>
std::vector<Value> adaptive_avg_pool_backward(LowerCtx& c) {
  // _adaptive_avg_poolNd_backward(grad_output, self)
  Builder& b = c.b;
  ElemType t = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), t);
  const int spatial = Spatial;
  auto m = adaptive_mats(b, spatial_dims(c.out().dims, spatial), spatial_dims(g.type.dims, spatial), t);
  return {b.convert(separable(b, g, m, true), c.out().elem)};
}

// Adaptive max pooling: output cell o of a dim of size `in` covers input
// [floor(o * in / out), ceil((o + 1) * in / out)). The windows are walked
// offset by offset as in max_pool (row-major, so ties keep the first maximum
// and NaN the last NaN, as CPU's kernel does), each offset one gather per
// spatial dim; an offset past a shorter window is masked out.
struct AdaptiveDim {
  Value pos, valid;  // per output cell: the input position at this offset, and whether it is inside the window
};

AdaptiveDim adaptive_offset(Builder& b, int64_t in, int64_t out, int64_t off) {
  TensorType it{ElemType::S64, {out}};
  auto k = [&](int64_t v) { return b.constant_int(v, ElemType::S64, it.dims); };
  Value o = b.iota(it, 0);
  Value start = b.div(b.mul(o, k(in)), k(out));
  Value end = b.div(b.add(b.mul(b.add(o, k(1)), k(in)), k(out - 1)), k(out));
  Value pos = b.add(start, k(off));
  return {b.min(pos, k(in - 1)), b.compare(Compare::LT, pos, end)};
}

int64_t widest_window(int64_t in, int64_t out) {
  int64_t w = 0;
  for (int64_t o = 0; o < out; ++o) w = std::max(w, (((o + 1) * in + out - 1) / out) - (o * in) / out);
  return w;
}

template <int Spatial>
std::vector<Value> adaptive_max_pool(LowerCtx& c) {
  // adaptive_max_poolNd(self, output_size) -> (values, indices into each input plane)
  Builder& b = c.b;
  Value x = c.t("self");
  const TensorType &vt = c.out(0), &itype = c.out(1);
  if (vt.numel() == 0) return {b.constant(0, vt.elem, vt.dims), b.constant(0, itype.elem, itype.dims)};
  auto in = spatial_dims(x.type.dims, Spatial), out = spatial_dims(vt.dims, Spatial);
  const int64_t l = lead(x, Spatial);
  std::vector<int64_t> widths(Spatial);
  for (int i = 0; i < Spatial; ++i) widths[i] = widest_window(in[i], out[i]);
  TensorType it{ElemType::S64, vt.dims}, pt{ElemType::Pred, vt.dims};
  Value best, best_i;
  std::vector<int64_t> off(Spatial, 0);
  for (bool first = true;; first = false) {
    Value v = x, flat = b.constant_int(0, ElemType::S64, it.dims), valid = b.constant(1, ElemType::Pred, pt.dims);
    for (int i = 0; i < Spatial; ++i) {
      AdaptiveDim a = adaptive_offset(b, in[i], out[i], off[i]);
      v = take_along(b, v, l + i, a.pos);
      flat = b.add(b.mul(flat, b.constant_int(in[i], ElemType::S64, it.dims)), b.broadcast_in_dim(a.pos, it.dims, {l + i}));
      valid = b.binary("and", valid, b.broadcast_in_dim(a.valid, pt.dims, {l + i}));
    }
    if (first) {
      best = v, best_i = flat;
    } else {
      Value take = b.compare(Compare::GT, v, best);
      if (shlo::is_float(v.type.elem)) take = b.binary("or", take, b.compare(Compare::NE, v, v));
      take = b.binary("and", take, valid);
      best = b.select(take, v, best);
      best_i = b.select(take, flat, best_i);
    }
    int i = Spatial - 1;
    while (i >= 0 && ++off[i] == widths[i]) off[i--] = 0;
    if (i < 0) break;
  }
  return {b.convert(best, vt.elem), b.convert(best_i, itype.elem)};
}

// adaptive_max_poolNd_backward(grad_output, self, indices): each output's
// gradient is added at the input position its index names in its plane.
template <int Spatial>
std::vector<Value> adaptive_max_pool_backward(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  const Value& g = c.t("grad_output");
  if (out.numel() == 0 || g.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  ElemType acc = accumulate_type(out.elem);
  int64_t plane = 1, cells = 1;
  for (int i = 1; i <= Spatial; ++i) plane *= out.dims[out.rank() - i], cells *= g.type.dims[g.type.rank() - i];
  const int64_t rows = out.numel() / plane;
  Value gv = b.reshape(b.convert(g, acc), {rows, cells});
  Value idx = b.reshape(b.convert(c.t("indices"), ElemType::S64), {rows, cells, 1});
  Value coords = b.concatenate({b.iota(TensorType{ElemType::S64, {rows, cells, 1}}, 0), idx}, 2);
  std::string dn = "inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2";
  Reducer add = Reducer::Add;
  Value r = b.scatter(b.constant(0, acc, {rows, plane}), coords, gv, dn, &add);
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

}  // namespace

void append_pooling(std::vector<Lowering>& t) {
  t.push_back({"max_unpool2d", [](LowerCtx& c) { return max_unpool(c, 2); }, {"max_unpool2d+"}});
  t.push_back({"max_unpool3d", [](LowerCtx& c) { return max_unpool(c, 3); }, {"max_unpool3d+"}});
  t.push_back({"max_pool2d_with_indices", max_pool<2>, {"max_pool2d_with_indices+"}});
  t.push_back({"max_pool3d_with_indices", max_pool<3>, {"max_pool3d_with_indices+"}});
  t.push_back({"max_pool2d_with_indices_backward", max_pool_backward<2>,
               {"max_pool2d_with_indices_backward+"}});
  t.push_back({"max_pool3d_with_indices_backward", max_pool_backward<3>,
               {"max_pool3d_with_indices_backward+"}});
  t.push_back({"avg_pool2d", avg_pool<2>, {"avg_pool2d+"}});
  t.push_back({"avg_pool3d", avg_pool<3>, {"avg_pool3d+"}});
  t.push_back({"avg_pool2d_backward", avg_pool_backward<2>, {"avg_pool2d_backward+"}});
  t.push_back({"avg_pool3d_backward", avg_pool_backward<3>, {"avg_pool3d_backward+"}});
  t.push_back({"adaptive_max_pool2d", adaptive_max_pool<2>, {"adaptive_max_pool2d+"}});
  t.push_back({"adaptive_max_pool3d", adaptive_max_pool<3>, {"adaptive_max_pool3d+"}});
  t.push_back({"adaptive_max_pool2d_backward", adaptive_max_pool_backward<2>, {"adaptive_max_pool2d_backward+"}});
  t.push_back({"adaptive_max_pool3d_backward", adaptive_max_pool_backward<3>, {"adaptive_max_pool3d_backward+"}});
  t.push_back({"adaptive_avg_pool2d", adaptive_avg_pool, {"_adaptive_avg_pool2d+"}});
  t.push_back({"adaptive_avg_pool3d", adaptive_avg_pool, {"_adaptive_avg_pool3d+"}});
  t.push_back({"adaptive_avg_pool2d_backward", adaptive_avg_pool_backward<2>,
               {"_adaptive_avg_pool2d_backward+"}});
  t.push_back({"adaptive_avg_pool3d_backward", adaptive_avg_pool_backward<3>,
               {"_adaptive_avg_pool3d_backward+"}});
  t.push_back({"upsample_nearest1d", upsample<Interp::Nearest, 1>, {"upsample_nearest1d+"}});
  t.push_back({"upsample_nearest2d", upsample<Interp::Nearest, 2>, {"upsample_nearest2d+"}});
  t.push_back({"upsample_nearest3d", upsample<Interp::Nearest, 3>, {"upsample_nearest3d+"}});
  t.push_back({"upsample_nearest_exact1d", upsample<Interp::NearestExact, 1>,
               {"_upsample_nearest_exact1d+"}});
  t.push_back({"upsample_nearest_exact2d", upsample<Interp::NearestExact, 2>,
               {"_upsample_nearest_exact2d+"}});
  t.push_back({"upsample_nearest_exact3d", upsample<Interp::NearestExact, 3>,
               {"_upsample_nearest_exact3d+"}});
  t.push_back({"upsample_linear1d", upsample<Interp::Linear, 1>, {"upsample_linear1d+"}});
  t.push_back({"upsample_bilinear2d", upsample<Interp::Linear, 2>, {"upsample_bilinear2d+"}});
  t.push_back({"upsample_trilinear3d", upsample<Interp::Linear, 3>, {"upsample_trilinear3d+"}});
  t.push_back({"upsample_nearest1d_backward", upsample_backward<Interp::Nearest, 1>,
               {"upsample_nearest1d_backward+"}});
  t.push_back({"upsample_nearest2d_backward", upsample_backward<Interp::Nearest, 2>,
               {"upsample_nearest2d_backward+"}});
  t.push_back({"upsample_nearest3d_backward", upsample_backward<Interp::Nearest, 3>,
               {"upsample_nearest3d_backward+"}});
  t.push_back({"upsample_nearest_exact1d_backward", upsample_backward<Interp::NearestExact, 1>,
               {"_upsample_nearest_exact1d_backward+"}});
  t.push_back({"upsample_nearest_exact2d_backward", upsample_backward<Interp::NearestExact, 2>,
               {"_upsample_nearest_exact2d_backward+"}});
  t.push_back({"upsample_nearest_exact3d_backward", upsample_backward<Interp::NearestExact, 3>,
               {"_upsample_nearest_exact3d_backward+"}});
  t.push_back({"upsample_linear1d_backward", upsample_backward<Interp::Linear, 1>,
               {"upsample_linear1d_backward+"}});
  t.push_back({"upsample_bilinear2d_backward", upsample_backward<Interp::Linear, 2>,
               {"upsample_bilinear2d_backward+"}});
  t.push_back({"upsample_trilinear3d_backward", upsample_backward<Interp::Linear, 3>,
               {"upsample_trilinear3d_backward+"}});
}

}  // namespace ttpu::ops
