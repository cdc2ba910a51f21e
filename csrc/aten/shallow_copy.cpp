// Compatible shallow-copy types: 'tpu' tensors count as dense, as CUDA ones do.
//
// torch 2.14.1's TensorImpl::has_compatible_shallow_copy_type lists the dense
// backends it accepts (CPU, CUDA, MPS, HIP, XPU, HPU, MTIA) and leaves out
// PrivateUse1 (pytorch#196975; fix proposed in pytorch#196978). Two things
// read that answer through aten::_has_compatible_shallow_copy_type:
//  - Module._apply (model.to('tpu'), .cpu(), to_empty): on "incompatible" it
//    builds a new Parameter per module, so tied weights untie and an optimizer
//    built before .to() keeps updating the old tensors;
//  - Variable::set_data (`cpu_param.data = tpu_tensor`), which refuses.
// The check is inline in torch's headers, so the fix is an override of that
// op for any call that involves a 'tpu' tensor (the AutogradPrivateUse1 key
// wins over the composite kernel as soon as one argument is on 'tpu'). With
// the workaround switched off (torch_tpu._C._set_shallow_copy_fix(False), or
// TORCH_TPU_SHALLOW_COPY_FIX=0 at import) the stock answer is returned, so a
// torch that ships the fix can be tested without it.
#include <atomic>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

std::atomic<bool> g_enabled{true};

bool dense_strided(const at::Tensor& t) {
  const c10::DispatchKeySet ks = t.key_set();
  if (!ks.has(c10::DispatchKey::Dense) || t.layout() != at::kStrided) return false;
  // CPU plus every accelerator torch itself already treats as dense, and us.
  constexpr auto backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit, c10::BackendComponent::MPSBit,
       c10::BackendComponent::HIPBit, c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  return ks.has_any(backends);
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) return true;
  if (!g_enabled.load(std::memory_order_relaxed)) return false;
  // A tensor subclass with its own TensorImpl (wrapper subclasses, functional
  // tensors) keeps the stock answer: only plain dense tensors are swapped.
  if (typeid(*self.unsafeGetTensorImpl()) != typeid(c10::TensorImpl) ||
      typeid(*from.unsafeGetTensorImpl()) != typeid(c10::TensorImpl))
    return false;
  return dense_strided(self) && dense_strided(from);
}

}  // namespace

void set_shallow_copy_fix(bool on) { g_enabled.store(on); }
bool shallow_copy_fix() { return g_enabled.load(); }

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", &has_compatible_shallow_copy_type);
}

}  // namespace ttpu::aten
