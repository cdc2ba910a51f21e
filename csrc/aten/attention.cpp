// Which scaled_dot_product_attention backend runs on 'tpu'. PyTorch asks the
// device's _fused_sdp_choice stub (eager) or the _fused_sdp_choice op (the
// meta path under torch.compile asks the same stub for a PrivateUse1 query),
// as it asks CUDA's. We answer "overrideable" (one fused lowering per call,
// csrc/ops/attention.cc) when the call is one that lowering serves, else
// "math" (PyTorch's composite of matmul, softmax and dropout, which covers
// everything else: dropout, nested tensors, other ranks and dtypes), and
// honour torch.nn.attention.sdpa_kernel's enabled backends as CUDA does.
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

namespace ttpu::aten {

namespace {

bool fused_serves(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal, bool enable_gqa) {
  if (dropout_p != 0.0) return false;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  const int64_t r = q.dim();
  if ((r != 3 && r != 4) || k.dim() != r || v.dim() != r) return false;
  at::ScalarType t = q.scalar_type();
  if (!(t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16)) return false;
  if (k.scalar_type() != t || v.scalar_type() != t) return false;
  // sym_* sizes: under torch.compile the meta path asks with symbolic shapes
  // (the comparisons guard, as the other backends' checks do)
  if (q.sym_numel() == 0 || k.sym_numel() == 0 || v.sym_numel() == 0) return false;
  for (int64_t d = 0; d < r - 3; ++d)  // batch: no broadcasting between q, k and v
    if (k.sym_size(d) != q.sym_size(d) || v.sym_size(d) != q.sym_size(d)) return false;
  const c10::SymInt hq = q.sym_size(r - 3), hk = k.sym_size(r - 3);
  if (v.sym_size(r - 3) != hk) return false;
  if (hq != hk && !(enable_gqa && hq % hk == 0)) return false;
  if (k.sym_size(r - 2) != v.sym_size(r - 2) || q.sym_size(r - 1) != k.sym_size(r - 1)) return false;
  if (mask.has_value() && mask->defined()) {
    // Both a mask and is_causal: PyTorch's contract is an error, which math raises.
    if (is_causal) return false;
    if (mask->is_nested() || mask->dim() > r) return false;
    if (mask->scalar_type() != at::kBool && mask->scalar_type() != t) return false;
    // it must broadcast to the scores [..., L, S]: else math gives PyTorch's size error
    const c10::SymInt scores[] = {k.sym_size(r - 2), q.sym_size(r - 2), hq, q.sym_size(0)};
    for (int64_t i = 1; i <= mask->dim(); ++i) {
      const c10::SymInt& m = mask->sym_size(-i);
      if (m != 1 && m != scores[i - 1]) return false;
    }
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  const auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() && fused_serves(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  if (ctx.userEnabledMathSDP()) return static_cast<int64_t>(at::SDPBackend::math);
  TORCH_CHECK(false, "scaled_dot_product_attention on 'tpu': no enabled backend serves this call (query ",
              query.sym_sizes(), " ", query.scalar_type(), ", key ", key.sym_sizes(), ", value ", value.sym_sizes(),
              ", dropout_p ", dropout_p, "); the fused (OVERRIDEABLE) backend needs dropout_p = 0, 3-D or 4-D "
              "inputs of one floating dtype and whole query-head groups; enable SDPBackend.MATH for the rest");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_fused_sdp_choice", &fused_sdp_choice); }

}  // namespace ttpu::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &ttpu::aten::fused_sdp_choice)
}  // namespace at::native
