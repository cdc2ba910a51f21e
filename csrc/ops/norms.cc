// Normalization layers: layer norm, group norm, batch norm
// (training and eval, running stats written back as the op's extra results)
// and renorm. Statistics of f16/bf16 inputs accumulate in f32.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ops/elementwise.h"
#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

// Layer norm over the trailing dims named by normalized_shape (arg 1).
struct NormDims {
  std::vector<int64_t> reduce;  // normalized dims
  std::vector<int64_t> outer;   // the others
  int64_t count = 1;            // elements per normalized group
};

NormDims norm_dims(const Value& x, size_t normalized_rank) {
  NormDims d;
  int64_t axis = x.type.rank() - static_cast<int64_t>(normalized_rank);
  for (int64_t i = 0; i < x.type.rank(); ++i) {
    if (i >= axis) {
      d.reduce.push_back(i);
      d.count *= x.type.dims[i];
    } else {
      d.outer.push_back(i);
    }
  }
  return d;
}

// Mean over `dims`, broadcast back to x's shape.
Value mean_keep(Builder& b, const Value& x, const NormDims& d) {
  Value s = b.reduce(x, b.constant(0, x.type.elem), d.reduce, Reducer::Add);
  s = b.div(s, b.constant(static_cast<double>(d.count), x.type.elem, s.type.dims));
  return b.broadcast_in_dim(s, x.type.dims, d.outer);
}

// Weight/bias of the normalized shape, broadcast over the outer dims.
Value affine(Builder& b, const Value& w, const Value& like, const NormDims& d) {
  return b.broadcast_in_dim(b.convert(w, like.type.elem), like.type.dims, d.reduce);
}

std::vector<Value> layer_norm(LowerCtx& c) {
  // -> (out, mean, rstd)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem);
  Value x = b.convert(c.t("input"), acc);
  NormDims d = norm_dims(x, c.ints("normalized_shape").size());
  Value mean = mean_keep(b, x, d);
  Value xc = b.sub(x, mean);
  Value var = mean_keep(b, b.mul(xc, xc), d);
  Value rstd = b.unary("rsqrt", b.add(var, b.constant(c.d("eps"), acc, var.type.dims)));
  Value y = b.mul(xc, rstd);
  if (c.has("weight")) y = b.mul(y, affine(b, c.t("weight"), y, d));
  if (c.has("bias")) y = b.add(y, affine(b, c.t("bias"), y, d));
  auto stat = [&](const Value& v, size_t k) {
    Value first = b.slice(v, std::vector<int64_t>(v.type.rank(), 0),
                          [&] { auto lim = v.type.dims; for (auto r : d.reduce) lim[r] = 1; return lim; }(),
                          std::vector<int64_t>(v.type.rank(), 1));
    return b.convert(b.reshape(first, c.out(k).dims), c.out(k).elem);
  };
  return {b.convert(y, c.out(0).elem), stat(mean, 1), stat(rstd, 2)};
}

std::vector<Value> layer_norm_backward(LowerCtx& c) {
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem == ElemType::F32 && c.wants(0) ? c.out(0).elem : c.t("input").type.elem);
  Value g = b.convert(c.t("grad_out"), acc), x = b.convert(c.t("input"), acc);
  NormDims d = norm_dims(x, c.ints("normalized_shape").size());
  auto stat = [&](std::string_view name) {
    Value s = b.convert(c.t(name), acc);
    return b.broadcast_in_dim(b.reshape(s, [&] {
                                std::vector<int64_t> dims;
                                for (auto o : d.outer) dims.push_back(x.type.dims[o]);
                                return dims;
                              }()),
                              x.type.dims, d.outer);
  };
  Value mean = stat("mean"), rstd = stat("rstd");
  Value xhat = b.mul(b.sub(x, mean), rstd);
  Value gw = c.has("weight") ? b.mul(g, affine(b, c.t("weight"), g, d)) : g;
  Value gi = b.mul(rstd, b.sub(b.sub(gw, mean_keep(b, gw, d)), b.mul(xhat, mean_keep(b, b.mul(gw, xhat), d))));
  auto outer_sum = [&](const Value& v, size_t k) {
    return b.convert(b.reshape(sum_dims(b, v, d.outer), c.out(k).dims), c.out(k).elem);
  };
  Value grad_w = c.wants(1) ? outer_sum(b.mul(g, xhat), 1) : b.constant(0, ElemType::F32, {0});
  Value grad_b = c.wants(2) ? outer_sum(g, 2) : b.constant(0, ElemType::F32, {0});
  return {b.convert(gi, c.out(0).elem), grad_w, grad_b};
}

std::vector<Value> renorm(LowerCtx& c) {
  // renorm(self, p, dim, maxnorm): each slice along dim whose p-norm exceeds
  // maxnorm is scaled to maxnorm / (norm + 1e-7). p's value is part of the key.
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value x = b.convert(c.t(0), acc);
  int64_t rank = x.type.rank();
  if (x.type.numel() == 0) return {b.convert(x, out.elem)};
  if (rank == 0) x = b.reshape(x, {1}), rank = 1;
  int64_t dim = wrap_dim(c.i(2), rank);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) dims.push_back(d);
  double p = c.args[1].scalar_value;
  // complex: the norms of |z| (real), and z times (scale + 0j) as CPU multiplies
  bool cplx = shlo::is_complex(acc);
  ElemType real = cplx ? shlo::part_type(acc) : acc;
  Value ax = cplx ? ew::cabs_c99(b, ew::parts(b, x).re, ew::parts(b, x).im) : b.unary("abs", x), norm;
  int64_t k = x.type.dims[dim];
  if (std::isinf(p)) {
    norm = b.reduce(ax, b.constant(p > 0 ? 0.0 : INFINITY, real), dims, p > 0 ? Reducer::Max : Reducer::Min);
  } else if (p == 1) {
    norm = b.reduce(ax, b.constant(0, real), dims, Reducer::Add);
  } else if (p == 2) {
    Value sq = cplx ? b.mul(ax, ax) : b.mul(x, x);
    norm = b.unary("sqrt", b.reduce(sq, b.constant(0, real), dims, Reducer::Add));
  } else {
    Value s = b.reduce(b.binary("power", ax, b.constant(p, real, x.type.dims)), b.constant(0, real), dims, Reducer::Add);
    norm = b.binary("power", s, b.constant(1.0 / p, real, {k}));
  }
  Value maxnorm = b.broadcast_in_dim(c.scalar(3, real), {k}, {});
  Value scale = b.div(maxnorm, b.add(norm, b.constant(1e-7, real, {k})));
  scale = b.select(b.compare(shlo::Compare::GT, norm, maxnorm), scale, b.constant(1, real, {k}));
  Value sb = b.broadcast_in_dim(scale, x.type.dims, {dim});
  Value r = cplx ? ew::cmul_naive(b, x, b.op("complex", {sb, b.constant(0, real, x.type.dims)}, x.type)) : b.mul(x, sb);
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

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
  // -> (out, save_mean, save_invstd); running stats updated in training.
  Builder& b = c.b;
  ElemType t = c.out(0).elem, acc = accumulate_type(t);
  Value x = b.convert(c.t("input"), acc);
  int64_t C = x.type.dims[1];
  auto dims = non_channel_dims(x.type.rank());
  int64_t n = x.type.numel() / std::max<int64_t>(C, 1);
  bool training = c.flag("training");
  double momentum = c.d("momentum"), eps = c.d("eps");
  Value mean, var;
  if (training) {
    mean = b.div(b.reduce(x, b.constant(0, acc), dims, Reducer::Add), b.constant((double)n, acc, {C}));
    Value xc = b.sub(x, per_channel(b, mean, x.type));
    var = b.div(b.reduce(b.mul(xc, xc), b.constant(0, acc), dims, Reducer::Add), b.constant((double)n, acc, {C}));
  } else {
    mean = b.convert(c.t("running_mean"), acc);
    var = b.convert(c.t("running_var"), acc);
  }
  Value invstd = b.unary("rsqrt", b.add(var, b.constant(eps, acc, {C})));
  Value y = b.mul(b.sub(x, per_channel(b, mean, x.type)), per_channel(b, invstd, x.type));
  if (c.has("weight")) y = b.mul(y, per_channel(b, c.t("weight"), x.type));
  if (c.has("bias")) y = b.add(y, per_channel(b, c.t("bias"), x.type));
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

std::vector<Value> group_norm(LowerCtx& c) {
  // -> (out, mean [N, G], rstd [N, G]); biased variance within each group of C/G channels x HxW.
  // A lowering of its own: PyTorch's composite form views the input, which fails on a
  // channels-last one (diffusers' UNets make them), and costs a batch_norm round trip.
  Builder& b = c.b;
  const Value& x0 = c.t("input");
  ElemType acc = accumulate_type(x0.type.elem);
  int64_t N = c.i("N"), C = c.i("C"), HW = c.i("HxW"), G = c.i("group"), D = (C / G) * HW;
  Value x = b.reshape(b.convert(x0, acc), {N, G, D});
  auto group_mean = [&](const Value& v) {
    Value s = b.reduce(v, b.constant(0, acc), {2}, Reducer::Add);
    return b.div(s, b.constant(static_cast<double>(D), acc, {N, G}));
  };
  Value mean = group_mean(x);
  Value xc = b.sub(x, b.broadcast_in_dim(mean, {N, G, D}, {0, 1}));
  Value var = group_mean(b.mul(xc, xc));
  Value rstd = b.unary("rsqrt", b.add(var, b.constant(c.d("eps"), acc, {N, G})));
  Value y = b.reshape(b.mul(xc, b.broadcast_in_dim(rstd, {N, G, D}, {0, 1})), {N, C, HW});
  if (c.has("weight")) y = b.mul(y, b.broadcast_in_dim(b.convert(c.t("weight"), acc), {N, C, HW}, {1}));
  if (c.has("bias")) y = b.add(y, b.broadcast_in_dim(b.convert(c.t("bias"), acc), {N, C, HW}, {1}));
  return {b.convert(b.reshape(y, x0.type.dims), c.out(0).elem), b.convert(mean, c.out(1).elem),
          b.convert(rstd, c.out(2).elem)};
}

std::vector<Value> group_norm_backward(LowerCtx& c) {
  // Within a group: gi = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * weight.
  Builder& b = c.b;
  const Value& x0 = c.t("input");
  ElemType acc = accumulate_type(x0.type.elem);
  int64_t N = c.i("N"), C = c.i("C"), HW = c.i("HxW"), G = c.i("group"), D = (C / G) * HW;
  TensorType per_c{acc, {N, C, HW}};
  Value g = b.reshape(b.convert(c.t("grad_out"), acc), per_c.dims), x = b.reshape(b.convert(x0, acc), per_c.dims);
  auto group_bcast = [&](const Value& v) {  // [N, G] -> [N, C, HW]
    Value r = b.broadcast_in_dim(b.reshape(b.convert(v, acc), {N, G}), {N, G, C / G, HW}, {0, 1});
    return b.reshape(r, per_c.dims);
  };
  Value mean = group_bcast(c.t("mean")), rstd = group_bcast(c.t("rstd"));
  Value xhat = b.mul(b.sub(x, mean), rstd);
  std::vector<Value> r;
  if (c.wants(0)) {
    Value gw = c.has("weight") ? b.mul(g, b.broadcast_in_dim(b.convert(c.t("weight"), acc), per_c.dims, {1})) : g;
    auto group_mean = [&](const Value& v) {
      Value s = b.reduce(b.reshape(v, {N, G, D}), b.constant(0, acc), {2}, Reducer::Add);
      return group_bcast(b.div(s, b.constant(static_cast<double>(D), acc, {N, G})));
    };
    Value gi = b.mul(rstd, b.sub(b.sub(gw, group_mean(gw)), b.mul(xhat, group_mean(b.mul(gw, xhat)))));
    r.push_back(b.convert(b.reshape(gi, x0.type.dims), c.out(0).elem));
  } else {
    r.push_back(b.constant(0, c.out(0).elem, c.out(0).dims));
  }
  auto per_channel_sum = [&](const Value& v, size_t k) {
    if (!c.wants(k)) return b.constant(0, c.out(k).elem, c.out(k).dims);
    Value s = b.reduce(v, b.constant(0, acc), {0, 2}, Reducer::Add);
    return b.convert(b.reshape(s, c.out(k).dims), c.out(k).elem);
  };
  r.push_back(per_channel_sum(b.mul(g, xhat), 1));
  r.push_back(per_channel_sum(g, 2));
  return r;
}

void append_norms(std::vector<Lowering>& t) {
  t.push_back({"group_norm", group_norm, {"native_group_norm+"}});
  t.push_back({"group_norm_backward", group_norm_backward, {"native_group_norm_backward+"}});
  t.push_back({"layer_norm", layer_norm, {"native_layer_norm"}});
  t.push_back({"layer_norm_backward", layer_norm_backward, {"native_layer_norm_backward"}});
  t.push_back({"renorm", renorm, {"renorm+"}, kScalarValuesInKey});
  t.push_back({"batch_norm", batch_norm, {"native_batch_norm"}, 0, nullptr, {3, 4}});
  t.push_back({"batch_norm_backward", batch_norm_backward, {"native_batch_norm_backward"}});
}

}  // namespace ttpu::ops
