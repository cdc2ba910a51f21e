// Foreach ops (torch._foreach_*: what the optimizers, clip_grad_norm_ and
// GradScaler run over every parameter) as one executable per call.
//
// PyTorch's generic kernels for these ops loop over the list and call the
// single-tensor op for each entry: on 'tpu' in Strict mode, one executable
// per parameter and per op (232 of a small GPT's 428 executions per AdamW
// step). Here the same generic kernel runs inside a runtime::FusedRegion:
// the per-tensor ops are recorded with their own lowerings and the region
// runs them as one graph (DeferAndFuse records them anyway; Debug keeps op by
// op). Results are those of the per-tensor ops by construction.
#include <ATen/ops/_foreach_abs_native.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_exp_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_log_native.h>
#include <ATen/ops/_foreach_maximum_native.h>
#include <ATen/ops/_foreach_minimum_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_pow_native.h>
#include <ATen/ops/_foreach_reciprocal_native.h>
#include <ATen/ops/_foreach_rsqrt_native.h>
#include <ATen/ops/_foreach_sigmoid_native.h>
#include <ATen/ops/_foreach_sign_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_tanh_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <torch/library.h>

#include <type_traits>

#include "aten/common.h"
#include "runtime/executor.h"

namespace ttpu::aten {

namespace {

// Runs the region's graph; its failure (a device OOM, a runtime error) is a
// PyTorch exception naming the graph's ops.
void close(runtime::FusedRegion& region) {
  try {
    region.close();
  } catch (...) {
    rethrow_as_torch_error("foreach op (fused region)");
  }
}

// PyTorch's generic kernel `F`, run inside a fused region.
template <auto F, class = decltype(F)>
struct Fused;
template <auto F, class R, class... A>
struct Fused<F, R (*)(A...)> {
  static R call(A... a) {
    runtime::FusedRegion region;
    if constexpr (std::is_void_v<R>) {
      F(a...);
      close(region);
    } else {
      R r = F(a...);
      close(region);
      return r;
    }
  }
};

}  // namespace

#define TTPU_FUSED(op, kernel) m.impl(op, TORCH_FN((Fused<&at::native::kernel>::call)))
// functional and in-place overloads of one variant: _foreach_add.Scalar and _foreach_add_.Scalar
#define TTPU_FUSED_PAIR(name, overload, kernel)                      \
  TTPU_FUSED("_foreach_" #name "." #overload, kernel);               \
  TTPU_FUSED("_foreach_" #name "_." #overload, kernel##_)
#define TTPU_FUSED_BINARY(name)                                                \
  TTPU_FUSED_PAIR(name, Scalar, foreach_tensor_##name##_scalar_kernel_slow);   \
  TTPU_FUSED_PAIR(name, List, foreach_tensor_##name##_list_kernel_slow);       \
  TTPU_FUSED_PAIR(name, ScalarList, foreach_tensor_##name##_scalarlist_kernel_slow)
#define TTPU_FUSED_UNARY(name)                                  \
  TTPU_FUSED("_foreach_" #name, foreach_tensor_##name##_slow);  \
  TTPU_FUSED("_foreach_" #name "_", foreach_tensor_##name##_slow_)

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TTPU_FUSED_BINARY(add);
  TTPU_FUSED_BINARY(sub);
  TTPU_FUSED_BINARY(mul);
  TTPU_FUSED_BINARY(div);
  TTPU_FUSED_BINARY(clamp_min);
  TTPU_FUSED_BINARY(clamp_max);
  TTPU_FUSED_PAIR(add, Tensor, foreach_tensor_add_tensor_kernel_slow);
  TTPU_FUSED_PAIR(mul, Tensor, foreach_tensor_mul_tensor_kernel_slow);
  TTPU_FUSED_PAIR(div, Tensor, foreach_tensor_div_tensor_kernel_slow);
  // maximum/minimum are clamp_min/clamp_max, as PyTorch registers them
  TTPU_FUSED_PAIR(maximum, Scalar, foreach_tensor_clamp_min_scalar_kernel_slow);
  TTPU_FUSED_PAIR(maximum, List, foreach_tensor_clamp_min_list_kernel_slow);
  TTPU_FUSED_PAIR(maximum, ScalarList, foreach_tensor_clamp_min_scalarlist_kernel_slow);
  TTPU_FUSED_PAIR(minimum, Scalar, foreach_tensor_clamp_max_scalar_kernel_slow);
  TTPU_FUSED_PAIR(minimum, List, foreach_tensor_clamp_max_list_kernel_slow);
  TTPU_FUSED_PAIR(minimum, ScalarList, foreach_tensor_clamp_max_scalarlist_kernel_slow);
  TTPU_FUSED_PAIR(addcmul, Scalar, foreach_tensor_addcmul_scalar_slow);
  TTPU_FUSED_PAIR(addcmul, ScalarList, foreach_tensor_addcmul_scalarlist_slow);
  TTPU_FUSED_PAIR(addcmul, Tensor, foreach_tensor_addcmul_tensor_slow);
  TTPU_FUSED_PAIR(addcdiv, Scalar, foreach_tensor_addcdiv_scalar_slow);
  TTPU_FUSED_PAIR(addcdiv, ScalarList, foreach_tensor_addcdiv_scalarlist_slow);
  TTPU_FUSED_PAIR(addcdiv, Tensor, foreach_tensor_addcdiv_tensor_slow);
  TTPU_FUSED_PAIR(lerp, List, foreach_tensor_ternary_lerp_slow);
  TTPU_FUSED_PAIR(lerp, Scalar, foreach_tensor_lerp_list_kernel_slow);
  TTPU_FUSED_PAIR(lerp, ScalarList, foreach_tensor_lerp_scalarlist_kernel_slow);
  TTPU_FUSED_PAIR(pow, List, foreach_tensor_pow_list_kernel_slow);
  TTPU_FUSED_PAIR(pow, Scalar, foreach_tensor_pow_scalar_kernel_slow);
  TTPU_FUSED_PAIR(pow, ScalarList, foreach_tensor_pow_scalarlist_kernel_slow);
  TTPU_FUSED("_foreach_pow.ScalarAndTensor", foreach_scalar_pow_list_kernel_slow);
  TTPU_FUSED_UNARY(sqrt);
  TTPU_FUSED_UNARY(rsqrt);
  TTPU_FUSED_UNARY(neg);
  TTPU_FUSED_UNARY(reciprocal);
  TTPU_FUSED_UNARY(abs);
  TTPU_FUSED_UNARY(sign);
  TTPU_FUSED_UNARY(exp);
  TTPU_FUSED_UNARY(log);
  TTPU_FUSED_UNARY(sigmoid);
  TTPU_FUSED_UNARY(tanh);
  TTPU_FUSED("_foreach_zero_", foreach_tensor_zero_slow_);
  TTPU_FUSED("_foreach_copy_", foreach_tensor_copy_list_kernel_slow_);
  TTPU_FUSED("_foreach_norm.Scalar", foreach_tensor_norm_slow);
}

}  // namespace ttpu::aten
