// The kernels registration.cpp registers by name, by file: storage_ops.cpp
// (storage and view primitives), copies.cpp, host_ops.cpp (explicit host
// paths and the fallback) and composites.cpp. The table kernel that serves
// every lowering is in table_kernel.h.
#pragma once

#include <optional>
#include <tuple>

#include <ATen/core/dispatch/Dispatcher.h>

#include "aten/common.h"
#include "aten/table_kernel.h"

namespace ttpu::aten {

// storage_ops.cpp
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory);
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<at::MemoryFormat> memory_format);
at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                                      c10::SymIntArrayRef size, c10::SymIntArrayRef stride);
at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source);
at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src);
at::Tensor& set_empty(at::Tensor& self);

// copies.cpp
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
at::Scalar local_scalar_dense(const at::Tensor& self);

// host_ops.cpp
at::Tensor nonzero_host(const at::Tensor& self);
at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2_host(const at::Tensor& self, bool sorted, bool return_inverse,
                                                            bool return_counts);
std::tuple<at::Tensor, at::Tensor> unique_host(const at::Tensor& self, bool sorted, bool return_inverse);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_host(const at::Tensor& self, int64_t dim, bool sorted,
                                                               bool return_inverse, bool return_counts);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive_host(const at::Tensor& self, bool return_inverse,
                                                                       bool return_counts, std::optional<int64_t> dim);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_consecutive_host(const at::Tensor& self, int64_t dim,
                                                                           bool return_inverse, bool return_counts);
at::Tensor repeat_interleave_host(const at::Tensor& repeats, std::optional<c10::SymInt> output_size);
// The boxed fallback for ops without a lowering.
void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// index / index_put: boolean masks in the index list become integer indices
// (through nonzero, a sync point), then the table kernel runs.
class MaskExpandingKernel final : public c10::OperatorKernel {
 public:
  explicit MaskExpandingKernel(const ops::Lowering* lowering) : inner_(lowering) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);

 private:
  TableKernel inner_;
};

// composites.cpp
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(const at::Tensor& input,
                                                                const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(const at::Tensor& input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_training(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const at::Tensor& running_mean, const at::Tensor& running_var, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_new(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve);
at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask);
bool equal(const at::Tensor& self, const at::Tensor& other);
at::Tensor narrow_copy(const at::Tensor& self, int64_t dim, c10::SymInt start, c10::SymInt length);
at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> generator, at::Tensor& out);
at::Tensor transformer_encoder_layer_fwd(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type);
at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out);
at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> generator);
at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                              bool training, std::optional<at::Generator> generator);
at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                                 const at::Scalar& upper, bool training, std::optional<at::Generator> generator,
                                 at::Tensor& out);
// storage_ops.cpp: a ZeroTensor (no storage; ops read it as zeros)
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory);

}  // namespace ttpu::aten
