// ATen overloads served by composing other ops on 'tpu': the
// _native_batch_norm_legit family (over native_batch_norm's lowering), equal
// (eq, all, then one bool read back),
// masked_select (through boolean indexing) and the rrelu_with_noise
// overloads that update their noise argument (over the functional one).
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include "aten/native_kernels.h"

namespace ttpu::aten {

// torch.equal: same sizes and every element equal (eq's promotion: 1.0
// equals 1; NaN equals nothing), as CPU's kernel answers. It returns a host
// bool, so it waits for the device (a sync point in DeferAndFuse).
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

// The _native_batch_norm_legit family declares the running stats as mutated
// arguments; native_batch_norm's lowering already updates them.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(const at::Tensor& input,
                                                                const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps) {
  auto r = at::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
  if (!training) {  // as on CPU: no saved statistics in evaluation
    std::get<1>(r) = at::empty({0}, input.options());
    std::get<2>(r) = at::empty({0}, input.options());
  } else {  // CPU saves them in the input's dtype
    std::get<1>(r) = std::get<1>(r).to(input.scalar_type());
    std::get<2>(r) = std::get<2>(r).to(input.scalar_type());
  }
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(const at::Tensor& input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps) {
  return at::native_batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_training(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const at::Tensor& running_mean, const at::Tensor& running_var, double momentum, double eps) {
  auto r = at::native_batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
  std::get<1>(r) = at::empty({0}, input.options());
  std::get<2>(r) = at::empty({0}, input.options());
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [y, mean, invstd] = at::native_batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {y, mean.to(input.scalar_type()), invstd.to(input.scalar_type()),
          at::empty({0}, input.options().dtype(at::kByte))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_new(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  return at::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
                                        eps, output_mask);
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  auto shape = at::infer_size(self.sizes(), mask.sizes());
  if (shape.empty()) shape.push_back(1);  // 0-d: select from a 1-element vector
  c10::List<std::optional<at::Tensor>> idx;
  idx.push_back(mask.expand(shape));
  return at::index(self.expand(shape), idx);
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  at::Tensor r = ttpu::aten::masked_select(self, mask);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

// rrelu_with_noise and its in-place and out= forms write the drawn slopes
// into `noise`; the lowering is the functional form, which returns them.
at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  auto [out, noise_out] = at::rrelu_with_noise_functional(self, noise, lower, upper, training, generator);
  if (training) noise.copy_(noise_out);
  return out;
}

at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                              bool training, std::optional<at::Generator> generator) {
  return self.copy_(ttpu::aten::rrelu_with_noise(self, noise, lower, upper, training, generator));
}

at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                                 const at::Scalar& upper, bool training, std::optional<at::Generator> generator,
                                 at::Tensor& out) {
  at::Tensor r = ttpu::aten::rrelu_with_noise(self, noise, lower, upper, training, generator);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

}  // namespace ttpu::aten
