// Convolution, forward and backward, as StableHLO convolutions (any
// number of spatial dims, groups, dilation, transposed), and im2col/col2im
// (nn.Unfold / nn.Fold).

#include <stdexcept>
#include <string>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Reducer;

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  int spatial = 2;
  bool transposed = false;
};

// convolution_overrideable(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation, transposed,
//                                   output_padding, groups, output_mask)
ConvParams conv_params(LowerCtx& c, size_t first, int spatial) {
  ConvParams p;
  p.spatial = spatial;
  auto expand = [&](const std::vector<int64_t>& v, int64_t dflt) {
    std::vector<int64_t> r(spatial, dflt);
    for (int i = 0; i < spatial; ++i) r[i] = v.empty() ? dflt : v[v.size() == 1 ? 0 : i];
    return r;
  };
  p.stride = expand(c.ints(first), 1);
  p.padding = expand(c.ints(first + 1), 0);
  p.dilation = expand(c.ints(first + 2), 1);
  p.transposed = c.flag(first + 3);
  p.output_padding = expand(c.ints(first + 4), 0);
  p.groups = c.i(first + 5);
  return p;
}

std::string labels(const char* a, const char* b, int spatial) {
  std::string s = std::string("[") + a + ", " + b;
  for (int i = 0; i < spatial; ++i) s += ", " + std::to_string(i);
  return s + "]";
}

std::string padding_attr(const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::string s = "padding = dense<[";
  for (size_t i = 0; i < lo.size(); ++i) s += (i ? ", [" : "[") + std::to_string(lo[i]) + ", " + std::to_string(hi[i]) + "]";
  return s + "]> : tensor<" + std::to_string(lo.size()) + "x2xi64>";
}

const char* precision_name(LowerCtx& c, ElemType t) {
  if (t != ElemType::F32) return "DEFAULT";
  switch (c.precision) {
    case MatmulPrecision::Highest: return "HIGHEST";
    case MatmulPrecision::High: return "HIGH";
    case MatmulPrecision::Medium: return "DEFAULT";
  }
  return "HIGHEST";
}

Value convolution(LowerCtx& c, const Value& lhs, const Value& rhs, const TensorType& out, const std::string& dn,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& pad_lo,
                  const std::vector<int64_t>& pad_hi, const std::vector<int64_t>& lhs_dilation,
                  const std::vector<int64_t>& rhs_dilation, int64_t feature_groups, int64_t batch_groups) {
  const char* pn = precision_name(c, lhs.type.elem);
  std::string attrs = "batch_group_count = " + std::to_string(batch_groups) + " : i64, dimension_numbers = #stablehlo.conv<" +
                      dn + ">, feature_group_count = " + std::to_string(feature_groups) +
                      " : i64, lhs_dilation = " + shlo::int_array(lhs_dilation) + ", " + padding_attr(pad_lo, pad_hi) +
                      ", precision_config = [#stablehlo<precision " + pn + ">, #stablehlo<precision " + pn +
                      ">], rhs_dilation = " + shlo::int_array(rhs_dilation) +
                      ", window_strides = " + shlo::int_array(strides);
  return c.b.op("convolution", {lhs, rhs}, out, attrs);
}

std::vector<int64_t> conv_out_spatial(const std::vector<int64_t>& in, const std::vector<int64_t>& k, const ConvParams& p) {
  std::vector<int64_t> out;
  for (int i = 0; i < p.spatial; ++i)
    out.push_back((in[i] + 2 * p.padding[i] - p.dilation[i] * (k[i] - 1) - 1) / p.stride[i] + 1);
  return out;
}

std::vector<TensorType> conv_infer(LowerCtx& c) {
  const Value& x = c.t(0);
  const Value& w = c.t(1);
  int spatial = x.type.rank() - 2;
  ConvParams p = conv_params(c, 3, spatial);
  std::vector<int64_t> in(x.type.dims.begin() + 2, x.type.dims.end());
  std::vector<int64_t> k(w.type.dims.begin() + 2, w.type.dims.end());
  // transposed weights are [in, out / groups, k...]
  int64_t in_per_group = p.transposed ? w.type.dims[0] / p.groups : w.type.dims[1];
  TensorType out{x.type.elem, {x.type.dims[0], p.transposed ? w.type.dims[1] * p.groups : w.type.dims[0]}};
  std::vector<int64_t> spatial_out;
  if (p.transposed) {
    for (int i = 0; i < spatial; ++i)
      spatial_out.push_back((in[i] - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k[i] - 1) +
                            p.output_padding[i] + 1);
  } else {
    spatial_out = conv_out_spatial(in, k, p);
  }
  for (auto d : spatial_out) {
    if (d <= 0) throw std::runtime_error("convolution: computed output size is too small (input smaller than kernel)");
    out.dims.push_back(d);
  }
  if (x.type.dims[1] != in_per_group * p.groups)
    throw std::runtime_error("convolution: expected input with " + std::to_string(in_per_group * p.groups) +
                             " channels, got " + std::to_string(x.type.dims[1]));
  return {out};
}

std::string conv_dn(int spatial, const char* in_a, const char* in_b, const char* k_a, const char* k_b) {
  return labels(in_a, in_b, spatial) + "x" + labels(k_a, k_b, spatial) + "->" + labels(in_a, in_b, spatial);
}

// y = conv(x, w) for weights [O, I/G, k...]; result in the accumulation type.
// The high padding is chosen so the result has exactly out_dims (a transposed
// convolution's output_padding can leave rows a plain convolution would use).
Value conv_apply(LowerCtx& c, const Value& x, const Value& w, const std::vector<int64_t>& out_dims, const ConvParams& p) {
  std::vector<int64_t> ones(p.spatial, 1), hi;
  for (int i = 0; i < p.spatial; ++i)
    hi.push_back((out_dims[2 + i] - 1) * p.stride[i] + p.dilation[i] * (w.type.dims[2 + i] - 1) + 1 -
                 x.type.dims[2 + i] - p.padding[i]);
  return convolution(c, x, w, TensorType{accumulate_type(x.type.elem), out_dims}, conv_dn(p.spatial, "b", "f", "o", "i"),
                     p.stride, p.padding, hi, ones, p.dilation, p.groups, 1);
}

// d conv(x, w) / dx applied to g: g dilated by the stride, convolved with the
// spatially reversed kernel whose in/out channels are swapped per group.
// x_dims is the shape of x (for a transposed convolution: its output).
Value conv_input_grad(LowerCtx& c, const Value& g, const Value& w, const std::vector<int64_t>& x_dims,
                      const ConvParams& p) {
  Builder& b = c.b;
  int spatial = p.spatial;
  int64_t G = p.groups, O = w.type.dims[0], Ig = w.type.dims[1];
  std::vector<int64_t> k(w.type.dims.begin() + 2, w.type.dims.end());
  std::vector<int64_t> ones(spatial, 1), rev;
  for (int i = 0; i < spatial; ++i) rev.push_back(2 + i);
  Value wr = b.reverse(w, rev);
  std::vector<int64_t> grouped{G, O / G, Ig};
  grouped.insert(grouped.end(), k.begin(), k.end());
  std::vector<int64_t> perm{0, 2, 1};
  for (int i = 0; i < spatial; ++i) perm.push_back(3 + i);
  Value wt = b.transpose(b.reshape(wr, grouped), perm);  // [G, Ig, O/G, k...]
  std::vector<int64_t> kernel{G * Ig, O / G};
  kernel.insert(kernel.end(), k.begin(), k.end());
  wt = b.reshape(wt, kernel);
  std::vector<int64_t> lo, hi;
  for (int i = 0; i < spatial; ++i) {
    int64_t keff = p.dilation[i] * (k[i] - 1) + 1;
    lo.push_back(keff - 1 - p.padding[i]);
    hi.push_back(x_dims[2 + i] + p.padding[i] - 1 - (g.type.dims[2 + i] - 1) * p.stride[i]);
  }
  return convolution(c, g, wt, TensorType{accumulate_type(g.type.elem), x_dims}, conv_dn(spatial, "b", "f", "o", "i"),
                     ones, lo, hi, p.stride, p.dilation, G, 1);
}

// d conv(x, w) / dw applied to g: x (channels as batch) convolved with g as kernel.
Value conv_weight_grad(LowerCtx& c, const Value& x, const Value& g, const std::vector<int64_t>& w_dims,
                       const ConvParams& p) {
  int spatial = p.spatial;
  std::vector<int64_t> ones(spatial, 1), lo = p.padding, hi;
  for (int i = 0; i < spatial; ++i)
    hi.push_back((w_dims[2 + i] - 1) * p.dilation[i] + (g.type.dims[2 + i] - 1) * p.stride[i] + 1 -
                 x.type.dims[2 + i] - p.padding[i]);
  return convolution(c, x, g, TensorType{accumulate_type(x.type.elem), w_dims}, conv_dn(spatial, "f", "b", "i", "o"),
                     p.dilation, lo, hi, ones, p.stride, 1, p.groups);
}

std::vector<Value> conv_forward(LowerCtx& c) {
  // A transposed convolution is the input gradient of the convolution whose
  // weights it shares.
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value x = b.convert(c.t(0), out.elem), w = b.convert(c.t(1), out.elem);
  ConvParams p = conv_params(c, 3, x.type.rank() - 2);
  Value y = p.transposed ? conv_input_grad(c, x, w, out.dims, p) : conv_apply(c, x, w, out.dims, p);
  if (c.has(2)) y = b.add(y, b.broadcast_in_dim(b.convert(c.t(2), acc), out.dims, {1}));
  return {b.convert(y, out.elem)};
}

std::vector<TensorType> conv_backward_infer(LowerCtx& c) {
  const Value& x = c.t(1);
  const Value& w = c.t(2);
  const auto& mask = c.ints(9);
  c.present = {mask.size() > 0 && mask[0] != 0, mask.size() > 1 && mask[1] != 0, mask.size() > 2 && mask[2] != 0};
  bool transposed = c.flag(6);
  int64_t groups = c.i(8);
  return {x.type, w.type, TensorType{w.type.elem, {transposed ? w.type.dims[1] * groups : w.type.dims[0]}}};
}

std::vector<Value> conv_backward(LowerCtx& c) {
  Builder& b = c.b;
  Value g = c.t(0), x = c.t(1), w = c.t(2);
  ElemType t = x.type.elem, acc = accumulate_type(t);
  int spatial = x.type.rank() - 2;
  ConvParams p = conv_params(c, 3, spatial);
  g = b.convert(g, t);
  Value xt = b.convert(x, t), wt = b.convert(w, t);
  std::vector<Value> results;
  auto none = [&] { return b.constant(0, t, {0}); };
  // For a transposed convolution the roles flip: its input gradient is the
  // plain convolution of g, its weight gradient takes g as the input.
  if (c.wants(0)) {
    Value gi = p.transposed ? conv_apply(c, g, wt, x.type.dims, p) : conv_input_grad(c, g, wt, x.type.dims, p);
    results.push_back(b.convert(gi, t));
  } else {
    results.push_back(none());
  }
  if (c.wants(1)) {
    Value gw = p.transposed ? conv_weight_grad(c, g, xt, w.type.dims, p) : conv_weight_grad(c, xt, g, w.type.dims, p);
    results.push_back(b.convert(gw, t));
  } else {
    results.push_back(none());
  }
  if (c.wants(2)) {
    std::vector<int64_t> dims{0};
    for (int i = 0; i < spatial; ++i) dims.push_back(2 + i);
    Value gb = b.reduce(b.convert(g, acc), b.constant(0, acc), dims, Reducer::Add);
    results.push_back(b.convert(gb, t));
  } else {
    results.push_back(none());
  }
  return results;
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

}  // namespace

void append_convolution(std::vector<Lowering>& t) {
  t.push_back({"convolution", conv_forward, {"convolution_overrideable"}, kUsesMatmulPrecision, conv_infer});
  t.push_back({"convolution_backward", conv_backward, {"convolution_backward_overrideable"}, kUsesMatmulPrecision, conv_backward_infer});
  t.push_back({"im2col", im2col, {"im2col+"}});
  t.push_back({"col2im", col2im, {"col2im+"}});
}

}  // namespace ttpu::ops
