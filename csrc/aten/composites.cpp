// ATen overloads served by composing other ops on 'tpu': the
// _native_batch_norm_legit family (over native_batch_norm's lowering), equal
// (eq, all, then one bool read back),
// masked_select (through boolean indexing), the rrelu_with_noise
// overloads that update their noise argument (over the functional one), and
// nn.TransformerEncoderLayer's inference fast path.
#include <cmath>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include "aten/native_kernels.h"

namespace ttpu::aten {

// narrow_copy: a copy of narrow(), with CPU's kernel's checks in its order. A
// non-negative dim beyond the rank is CPU's RuntimeError (its kernel indexes
// the sizes before wrapping); a negative one wraps, an IndexError, as narrow's.
at::Tensor narrow_copy(const at::Tensor& self, int64_t dim, c10::SymInt start, c10::SymInt length) {
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  TORCH_CHECK(dim < self.dim(), "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(dim), len = length.guard_int(__FILE__, __LINE__);
  int64_t first = start.guard_int(__FILE__, __LINE__);
  TORCH_CHECK_INDEX(-size <= first && first <= size, "start out of range (expected to be in range of [", -size, ", ",
                    size, "], but got ", first, ")");
  if (first < 0) first += size;
  TORCH_CHECK(len >= 0 && first <= size - len, "start (", first, ") + length (", len, ") exceeds dimension size (", size, ").");
  return self.narrow(dim, first, len).clone(at::MemoryFormat::Contiguous);
}

// torch.equal: same sizes and every element equal (eq's promotion: 1.0
// equals 1; NaN equals nothing), as CPU's kernel answers. It returns a host
// bool, so it waits for the device (a sync point in DeferAndFuse).
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (self.sizes() != other.sizes()) return false;
  // CPU's kernel has no complex32 (or bcomplex32) case for two such tensors.
  for (at::ScalarType packed : {at::kComplexHalf, at::kBComplex32})
    TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != packed || other.scalar_type() != packed,
                                self.is_same(other) ? "\"equal_notnan_cpu\"" : "\"equal_cpu\"",
                                " not implemented for '", c10::toString(packed), "'");
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

// nn.TransformerEncoderLayer's inference fast path (eval, no grad,
// batch_first): the layer as its slow path computes it, from ATen ops that
// have lowerings: attention through scaled_dot_product_attention, masks
// already canonicalised to additive floats by the module (a bool mask,
// True = masked out, is converted the same way), arranged by mask_type as
// merge_masks makes them (0: [T, T], 1: key padding [B, T], 2: [B, H, T, T]).
at::Tensor transformer_encoder_layer_fwd(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type) {
  TORCH_CHECK(src.dim() == 3 && src.size(2) == embed_dim,
              "_transformer_encoder_layer_fwd on 'tpu': expected src of shape [batch, seq, ", embed_dim, "], got ",
              src.sizes());
  TORCH_CHECK(num_heads > 0 && embed_dim % num_heads == 0, "_transformer_encoder_layer_fwd: embed_dim ", embed_dim,
              " is not divisible by num_heads ", num_heads);
  const int64_t b = src.size(0), t = src.size(1), d = embed_dim / num_heads;
  auto norm = [&](const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
    return at::layer_norm(x, {embed_dim}, w, bias, eps);
  };
  auto attention = [&](const at::Tensor& x) {
    std::vector<at::Tensor> qkv = at::linear(x, qkv_weight, qkv_bias).chunk(3, -1);
    auto heads = [&](const at::Tensor& z) { return z.view({b, t, num_heads, d}).transpose(1, 2); };
    std::optional<at::Tensor> m;
    if (mask.has_value() && mask->defined()) {
      at::Tensor additive = mask->scalar_type() == at::kBool
                                ? at::zeros(mask->sizes(), x.options()).masked_fill(*mask, -INFINITY)
                                : mask->to(x.scalar_type());
      int64_t type = mask_type.value_or(-1);
      if (type == 0) additive = additive.view({1, 1, t, t});
      else if (type == 1) additive = additive.view({b, 1, 1, t});
      m = additive;
    }
    at::Tensor o = at::scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), m);
    return at::linear(o.transpose(1, 2).reshape({b, t, embed_dim}), proj_weight, proj_bias);
  };
  auto ffn = [&](const at::Tensor& x) {
    at::Tensor h = at::linear(x, ffn_weight_1, ffn_bias_1);
    h = use_gelu ? at::gelu(h) : at::relu(h);
    return at::linear(h, ffn_weight_2, ffn_bias_2);
  };
  at::Tensor x = src;
  if (norm_first) {
    x = x + attention(norm(x, norm_weight_1, norm_bias_1));
    return x + ffn(norm(x, norm_weight_2, norm_bias_2));
  }
  x = norm(x + attention(x), norm_weight_1, norm_bias_1);
  return norm(x + ffn(x), norm_weight_2, norm_bias_2);
}

// bernoulli(p, out=): out's own draw from the probabilities p (bernoulli_.Tensor's lowering).
at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> generator, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  return out.bernoulli_(self, std::move(generator));
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
  // CPU's checks of the written-to tensor, in its order
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
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
