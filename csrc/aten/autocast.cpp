// Autocast for 'tpu': torch.autocast("tpu", dtype=torch.bfloat16 / float16).
//
// PyTorch 2.14.1 registers autocast kernels for CPU, CUDA, XPU, MPS, MTIA and
// MAIA, none for AutocastPrivateUse1: without this file every op under
// torch.autocast("tpu") fails with "Could not run 'aten::linear' with
// arguments from the 'Autocasttpu' backend". We use the cast policy CUDA
// uses, through the op lists and wrappers ATen publishes in
// ATen/autocast_mode.h for exactly this purpose (so a model autocasts on
// 'tpu' as it does on 'cuda'):
//  - lower_precision_fp: matmuls, convolutions, linear, attention, RNN cells
//    run in the autocast dtype;
//  - fp32: pointwise ops that lose range or precision (exp, log, pow, ...),
//    norms and losses run in float32;
//  - fp32_set_opt_dtype / fp32_append_dtype: softmax, sums, cumsum, norm
//    accumulate in float32 (an explicit dtype= is respected);
//  - promote: multi-input ops (addcmul, index_put, ...) run in the widest
//    input type.
// Every other op falls through to the 'tpu' kernel unchanged.
// binary_cross_entropy is refused with CUDA's advice (use the logits form).
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>

namespace ttpu::aten {

namespace {

at::Tensor binary_cross_entropy_refused(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                        int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast on 'tpu' "
              "(as on 'cuda'): the sigmoid before them saturates in float16/bfloat16. Use "
              "torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss, which are "
              "safe to autocast, or compute the loss outside the autocast region in float32.");
}

}  // namespace

// The op lists spell ATen types unqualified.
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
using at::DimnameList;  // older op lists still name the named-tensor overloads
#endif
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TTPU_AUTOCAST_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TTPU_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TTPU_AUTOCAST_FP32_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TTPU_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(TTPU_AUTOCAST_LOWER)
  AT_FORALL_FP32(TTPU_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TTPU_AUTOCAST_FP32_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TTPU_AUTOCAST_PROMOTE)
#undef TTPU_AUTOCAST_LOWER
#undef TTPU_AUTOCAST_FP32
#undef TTPU_AUTOCAST_FP32_OPT_DTYPE
#undef TTPU_AUTOCAST_PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_refused));
}

}  // namespace ttpu::aten
