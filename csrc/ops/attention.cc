// Fused scaled dot-product attention: the lowerings behind PyTorch's
// "overrideable" SDPA backend (_scaled_dot_product_fused_attention_overrideable
// and its backward), which F.scaled_dot_product_attention reaches on 'tpu'
// when csrc/aten/attention.cpp's choice function picks it. One module per
// call instead of math's chain of matmul, mask, softmax and matmul ops; the
// probabilities are recomputed in the backward from the saved logsumexp
// (as flash attention does), so no [L, S] matrix is kept between the two.
//
// Semantics follow PyTorch's math backend: scores = q k^T * scale (scale
// defaults to 1 / sqrt(E)), plus the additive bias (SDPA has already turned a
// boolean mask into 0 / -inf), causal masking aligned to the top left, and a
// row whose every score is -inf gives 0 (math's _safe_softmax), with a
// logsumexp of +inf so that the backward's recomputed probabilities are 0
// too. Grouped-query attention (fewer key/value heads than query heads, a
// whole multiple) repeats each key/value head for its group of query heads,
// as enable_gqa's repeat_interleave does; their gradients are summed back.
// f16/bf16 compute in f32; f32 dots follow torch.get_float32_matmul_precision().

#include <cmath>
#include <string>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

struct Attention {
  ElemType acc;
  shlo::Precision precision;
  int64_t rank, group;  // group: query heads per key/value head
  std::vector<int64_t> batch;  // the leading dims (batch, heads)
};

Attention setup(LowerCtx& c, const Value& q, const Value& k, const Value& v, const char* op) {
  Attention a;
  a.rank = q.type.rank();
  if (a.rank < 3 || k.type.rank() != a.rank || v.type.rank() != a.rank)
    throw Unsupported(std::string(op) + ": query, key and value must all be 3-D or 4-D, got " + q.type.str() +
                      ", " + k.type.str() + ", " + v.type.str());
  int64_t hq = q.type.dims[a.rank - 3], hk = k.type.dims[a.rank - 3];
  if (hk <= 0 || hq % hk != 0 || v.type.dims[a.rank - 3] != hk)
    throw Unsupported(std::string(op) + ": " + std::to_string(hq) + " query heads and " + std::to_string(hk) +
                      " key/value heads (the query heads must be a whole multiple)");
  a.group = hq / hk;
  a.acc = accumulate_type(q.type.elem);
  a.precision = a.acc == ElemType::F32 ? to_shlo(c.precision) : shlo::Precision::Highest;
  for (int64_t d = 0; d < a.rank - 2; ++d) a.batch.push_back(d);
  return a;
}

// (..., Hk, S, E) -> (..., Hk * G, S, E): each key/value head serves G query heads.
Value expand_heads(Builder& b, const Attention& a, const Value& x) {
  if (a.group == 1) return x;
  std::vector<int64_t> dims = x.type.dims, wide, map;
  for (int64_t d = 0; d < a.rank; ++d) {
    if (d == a.rank - 2) wide.push_back(a.group);
    wide.push_back(dims[d]);
    map.push_back(d < a.rank - 2 ? d : d + 1);
  }
  dims[a.rank - 3] *= a.group;
  return b.reshape(b.broadcast_in_dim(x, wide, map), dims);
}

// The inverse for gradients: (..., Hk * G, S, E) summed over each group.
Value reduce_heads(Builder& b, const Attention& a, const Value& x) {
  if (a.group == 1) return x;
  std::vector<int64_t> split;
  for (int64_t d = 0; d < a.rank; ++d) {
    if (d == a.rank - 3) {
      split.push_back(x.type.dims[d] / a.group);
      split.push_back(a.group);
    } else {
      split.push_back(x.type.dims[d]);
    }
  }
  return b.reduce(b.reshape(x, split), b.constant(0, x.type.elem), {a.rank - 2}, Reducer::Add);
}

// The masked, scaled scores (..., L, S) in the accumulation type.
Value scores(LowerCtx& c, const Attention& a, const Value& q, const Value& k, const std::string& bias_arg,
             bool causal, double scale) {
  Builder& b = c.b;
  Value s = b.dot_general(q, k, a.batch, a.batch, {a.rank - 1}, {a.rank - 1}, a.acc, a.precision);
  s = b.mul(s, b.constant(scale, a.acc, s.type.dims));
  Value neg_inf = b.constant(-INFINITY, a.acc, s.type.dims);
  if (c.has(bias_arg)) {
    const Value& bias = c.t(bias_arg);
    if (bias.type.elem == ElemType::Pred) {
      s = b.select(b.broadcast_to(bias, s.type.dims), s, neg_inf);
    } else {
      s = b.add(s, b.broadcast_to(b.convert(bias, a.acc), s.type.dims));
    }
  }
  if (causal) {  // query i sees keys 0..i (top-left aligned, as math's tril)
    TensorType idx{ElemType::S64, s.type.dims};
    Value keep = b.compare(Compare::GE, b.iota(idx, a.rank - 2), b.iota(idx, a.rank - 1));
    s = b.select(keep, s, neg_inf);
  }
  return s;
}

// Broadcast a (..., L) row statistic along the key dimension.
Value rows(Builder& b, const Value& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> map;
  for (int64_t d = 0; d + 1 < static_cast<int64_t>(dims.size()); ++d) map.push_back(d);
  return b.broadcast_in_dim(x, dims, map);
}

// The unnormalised probabilities p = exp(s - max) of each row, their sum
// (1 on a row with every key masked, whose p is all 0) and the row's
// logsumexp (+inf on such a row).
struct Softmax {
  Value p, l_safe, lse;
};
Softmax softmax(Builder& b, const Attention& a, const Value& s, const std::vector<int64_t>& row_dims) {
  Value m = b.reduce(s, b.constant(-INFINITY, a.acc), {a.rank - 1}, Reducer::Max);
  Value empty = b.compare(Compare::EQ, m, b.constant(-INFINITY, a.acc, row_dims));
  Value m_safe = b.select(empty, b.constant(0, a.acc, row_dims), m);
  Value p = b.unary("exponential", b.sub(s, rows(b, m_safe, s.type.dims)));
  Value l = b.reduce(p, b.constant(0, a.acc), {a.rank - 1}, Reducer::Add);
  Value l_safe = b.select(empty, b.constant(1, a.acc, row_dims), l);
  Value lse = b.select(empty, b.constant(INFINITY, a.acc, row_dims), b.add(m, b.unary("log", l_safe)));
  return {p, l_safe, lse};
}

double scale_of(LowerCtx& c, const Value& q) {
  return c.has("scale") ? c.d("scale") : 1.0 / std::sqrt(static_cast<double>(q.type.dims.back()));
}

void check_supported(LowerCtx& c, const char* op) {
  if (c.d("dropout_p") != 0.0)
    throw Unsupported(std::string(op) + " with dropout_p > 0 (scaled_dot_product_attention runs dropout through "
                                        "its math backend on 'tpu')");
}

// What the forward and the backward both start from: q, k, v in the
// accumulation type (k and v widened to the query heads), the masked scores.
struct Operands {
  Attention a;
  double scale;
  Value q, k, v, s;
  std::vector<int64_t> row_dims;  // the scores' dims without the key dimension
};
Operands operands(LowerCtx& c, const char* op) {
  check_supported(c, op);
  Builder& b = c.b;
  const Value &q0 = c.t("query"), &k0 = c.t("key"), &v0 = c.t("value");
  Operands o{setup(c, q0, k0, v0, op), scale_of(c, q0), {}, {}, {}, {}, {}};
  o.q = b.convert(q0, o.a.acc);
  o.k = expand_heads(b, o.a, b.convert(k0, o.a.acc));
  o.v = expand_heads(b, o.a, b.convert(v0, o.a.acc));
  o.s = scores(c, o.a, o.q, o.k, "attn_bias", c.flag("is_causal"), o.scale);
  o.row_dims.assign(o.s.type.dims.begin(), o.s.type.dims.end() - 1);
  return o;
}

std::vector<Value> sdpa_forward(LowerCtx& c) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable";
  Builder& b = c.b;
  Operands in = operands(c, op);
  if (c.flag("return_debug_mask")) throw Unsupported(std::string(op) + " with return_debug_mask=True");
  const Attention& a = in.a;
  Softmax sm = softmax(b, a, in.s, in.row_dims);
  Value o = b.dot_general(sm.p, in.v, a.batch, a.batch, {a.rank - 1}, {a.rank - 2}, a.acc, a.precision);
  o = b.div(o, rows(b, sm.l_safe, o.type.dims));
  Value lse = sm.lse;
  std::vector<Value> r;
  for (size_t j = 0; j < c.outs.size(); ++j) {
    const TensorType& t = c.out(j);
    if (j == 0) r.push_back(b.convert(o, t.elem));
    else if (j == 1) r.push_back(b.reshape(b.convert(lse, t.elem), t.dims));
    else r.push_back(b.constant(0, t.elem, t.dims));  // cum_seq_*, philox seed/offset (no dropout), debug mask
  }
  return r;
}

// Sums a gradient of the broadcast scores (..., L, S) back to the bias's shape.
Value to_bias_shape(Builder& b, const Value& g, const TensorType& bias) {
  int64_t lead = g.type.rank() - bias.rank();
  std::vector<int64_t> sum;
  for (int64_t d = 0; d < g.type.rank(); ++d)
    if (d < lead || bias.dims[d - lead] == 1) sum.push_back(d);
  Value r = sum.empty() ? g : b.reduce(g, b.constant(0, g.type.elem), sum, Reducer::Add);
  return b.reshape(r, bias.dims);
}

std::vector<Value> sdpa_backward(LowerCtx& c) {
  Builder& b = c.b;
  Operands in = operands(c, "_scaled_dot_product_fused_attention_overrideable_backward");
  const Attention& a = in.a;
  const double scale = in.scale;
  const Value &q = in.q, &k = in.k, &v = in.v, &s = in.s;
  const std::vector<int64_t>& sd = s.type.dims;
  Value dout = b.convert(c.t("grad_out"), a.acc), out = b.convert(c.t("out"), a.acc);
  // The saved logsumexp is f32 (the meta function's dtype): f64 recomputes
  // it from the scores rather than lose half its digits.
  Value lse = a.acc == ElemType::F64 ? softmax(b, a, s, in.row_dims).lse
                                     : b.reshape(b.convert(c.t("logsumexp"), a.acc), in.row_dims);
  Value p = b.unary("exponential", b.sub(s, rows(b, lse, sd)));  // 0 on masked rows (lse = +inf)
  const int64_t L = a.rank - 2, S = a.rank - 1;
  Value dv = b.dot_general(p, dout, a.batch, a.batch, {L}, {L}, a.acc, a.precision);
  Value dp = b.dot_general(dout, v, a.batch, a.batch, {S}, {S}, a.acc, a.precision);
  Value delta = b.reduce(b.mul(dout, out), b.constant(0, a.acc), {S}, Reducer::Add);
  Value ds = b.mul(p, b.sub(dp, rows(b, delta, sd)));
  Value dq = b.dot_general(ds, k, a.batch, a.batch, {S}, {L}, a.acc, a.precision);
  Value dk = b.dot_general(ds, q, a.batch, a.batch, {L}, {L}, a.acc, a.precision);
  dq = b.mul(dq, b.constant(scale, a.acc, dq.type.dims));
  dk = b.mul(dk, b.constant(scale, a.acc, dk.type.dims));
  std::vector<Value> r = {b.convert(dq, c.out(0).elem), b.convert(reduce_heads(b, a, dk), c.out(1).elem),
                          b.convert(reduce_heads(b, a, dv), c.out(2).elem)};
  const TensorType& tb = c.out(3);
  // only when autograd asks (a mask made from a bool one needs no gradient)
  const std::vector<int64_t>& wanted = c.ints("grad_input_mask");
  bool bias_grad = wanted.size() > 3 && wanted[3];
  if (bias_grad && c.wants(3) && c.has("attn_bias") && shlo::is_float(c.t("attn_bias").type.elem))
    r.push_back(b.convert(to_bias_shape(b, ds, c.t("attn_bias").type), tb.elem));
  else
    r.push_back(b.constant(0, tb.elem, tb.dims));
  return r;
}

}  // namespace

void append_attention(std::vector<Lowering>& t) {
  t.push_back({"scaled_dot_product_fused_attention", sdpa_forward,
               {"_scaled_dot_product_fused_attention_overrideable"}, kUsesMatmulPrecision});
  t.push_back({"scaled_dot_product_fused_attention_backward", sdpa_backward,
               {"_scaled_dot_product_fused_attention_overrideable_backward"}, kUsesMatmulPrecision});
}

}  // namespace ttpu::ops
