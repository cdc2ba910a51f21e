// Convolution (forward and backward as StableHLO convolutions), batch norm
// (training and eval, running stats written back). Pooling is in pool.cc.
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

std::string dims_spec(const char* lead, int spatial) {
  std::string s = std::string("[") + lead;
  for (int i = 0; i < spatial; ++i) s += ", " + std::to_string(i);
  return s + "]";
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
  Value wr = b.op("reverse", {w}, w.type, "dimensions = " + shlo::int_array(rev));
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

// ---------------------------------------------------------------------------
// Batch norm over every dim but 1.

std::vector<int64_t> non_channel_dims(int rank) {
  std::vector<int64_t> d{0};
  for (int i = 2; i < rank; ++i) d.push_back(i);
  return d;
}

Value per_channel(Builder& b, const Value& v, const TensorType& like) {
  return b.broadcast_in_dim(b.convert(v, like.elem), like.dims, {1});
}

std::vector<Value> batch_norm(LowerCtx& c) {
  // native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
  //   -> (out, save_mean, save_invstd); running stats updated in training.
  Builder& b = c.b;
  ElemType t = c.out(0).elem, acc = accumulate_type(t);
  Value x = b.convert(c.t(0), acc);
  int64_t C = x.type.dims[1];
  auto dims = non_channel_dims(x.type.rank());
  int64_t n = x.type.numel() / std::max<int64_t>(C, 1);
  bool training = c.flag(5);
  double momentum = c.d(6), eps = c.d(7);
  Value mean, var;
  if (training) {
    mean = b.div(b.reduce(x, b.constant(0, acc), dims, Reducer::Add), b.constant((double)n, acc, {C}));
    Value xc = b.sub(x, per_channel(b, mean, x.type));
    var = b.div(b.reduce(b.mul(xc, xc), b.constant(0, acc), dims, Reducer::Add), b.constant((double)n, acc, {C}));
  } else {
    mean = b.convert(c.t(3), acc);
    var = b.convert(c.t(4), acc);
  }
  Value invstd = b.unary("rsqrt", b.add(var, b.constant(eps, acc, {C})));
  Value y = b.mul(b.sub(x, per_channel(b, mean, x.type)), per_channel(b, invstd, x.type));
  if (c.has(1)) y = b.mul(y, per_channel(b, c.t(1), x.type));
  if (c.has(2)) y = b.add(y, per_channel(b, c.t(2), x.type));
  std::vector<Value> r{b.convert(y, t)};
  // save_mean / save_invstd: empty in eval, as on CPU (shapes from the meta function).
  r.push_back(training ? b.convert(mean, c.out(1).elem) : b.constant(0, c.out(1).elem, c.out(1).dims));
  r.push_back(training ? b.convert(invstd, c.out(2).elem) : b.constant(0, c.out(2).elem, c.out(2).dims));
  // Running statistics (written back by the runtime when present).
  for (size_t k : {3, 4}) {
    if (!c.has(k)) {
      r.push_back(b.constant(0, acc, {C}));
      continue;
    }
    Value old = b.convert(c.t(k), acc);
    if (!training) {
      r.push_back(old);
      continue;
    }
    Value stat = k == 3 ? mean : b.mul(var, b.constant(n > 1 ? (double)n / (n - 1) : 1.0, acc, {C}));
    Value m = b.constant(momentum, acc, {C});
    r.push_back(b.add(b.mul(b.sub(b.constant(1, acc, {C}), m), old), b.mul(m, stat)));
  }
  return r;
}

std::vector<Value> batch_norm_backward(LowerCtx& c) {
  // native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?,
  //                            save_invstd?, train, eps, output_mask)
  Builder& b = c.b;
  ElemType t = c.t(1).type.elem, acc = accumulate_type(t);
  Value g = b.convert(c.t(0), acc), x = b.convert(c.t(1), acc);
  int64_t C = x.type.dims[1];
  auto dims = non_channel_dims(x.type.rank());
  int64_t n = x.type.numel() / std::max<int64_t>(C, 1);
  bool train = c.flag(7);
  Value mean, invstd;
  if (train) {
    mean = b.convert(c.t(5), acc);
    invstd = b.convert(c.t(6), acc);
  } else {
    mean = b.convert(c.t(3), acc);
    invstd = b.unary("rsqrt", b.add(b.convert(c.t(4), acc), b.constant(c.d(8), acc, {C})));
  }
  Value w = c.has(2) ? b.convert(c.t(2), acc) : b.constant(1, acc, {C});
  Value xhat = b.mul(b.sub(x, per_channel(b, mean, x.type)), per_channel(b, invstd, x.type));
  Value sum_g = b.reduce(g, b.constant(0, acc), dims, Reducer::Add);
  Value sum_gx = b.reduce(b.mul(g, xhat), b.constant(0, acc), dims, Reducer::Add);
  Value gi;
  if (train) {
    Value nn = b.constant((double)n, acc, {C});
    Value term = b.sub(b.sub(g, per_channel(b, b.div(sum_g, nn), x.type)),
                       b.mul(xhat, per_channel(b, b.div(sum_gx, nn), x.type)));
    gi = b.mul(term, per_channel(b, b.mul(invstd, w), x.type));
  } else {
    gi = b.mul(g, per_channel(b, b.mul(invstd, w), x.type));
  }
  std::vector<Value> r;
  r.push_back(c.wants(0) ? b.convert(gi, c.out(0).elem) : b.constant(0, c.out(0).elem, c.out(0).dims));
  r.push_back(c.wants(1) ? b.convert(sum_gx, c.out(1).elem) : b.constant(0, c.out(1).elem, c.out(1).dims));
  r.push_back(c.wants(2) ? b.convert(sum_g, c.out(2).elem) : b.constant(0, c.out(2).elem, c.out(2).dims));
  return r;
}

}  // namespace

void append_conv(std::vector<Lowering>& t) {
  t.push_back({"convolution", conv_forward, {"convolution_overrideable"}, kUsesMatmulPrecision, conv_infer});
  t.push_back({"convolution_backward", conv_backward, {"convolution_backward_overrideable"}, kUsesMatmulPrecision, conv_backward_infer});
  t.push_back({"batch_norm", batch_norm, {"native_batch_norm"}, 0, nullptr, {3, 4}});
  t.push_back({"batch_norm_backward", batch_norm_backward, {"native_batch_norm_backward"}});
}

}  // namespace ttpu::ops
