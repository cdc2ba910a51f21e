// Backend metadata through torch.save/torch.load (PyTorch's
// TensorBackendMetaRegistry, as OpenReg registers it):
// torch._utils.set_tensor_metadata(t, {"name": bool, ...}) on a 'tpu' tensor
// keeps the entries PyTorch does not own itself (conj/neg are PyTorch's) in
// the tensor's c10::BackendMeta; get_tensor_metadata returns them, and since
// torch.save stores get_tensor_metadata() beside a tensor and torch.load
// applies it with set_tensor_metadata(), they survive a round trip. Without
// these hooks PyTorch silently drops such entries. Values are bools: that is
// the type PyTorch's hook carries.
#if __has_include(<torch/csrc/jit/serialization/pickler_helper.h>)
#include <torch/csrc/jit/serialization/pickler_helper.h>
#else
#include <torch/csrc/jit/serialization/pickler.h>  // older torch (the GPU machine's 2.11) keeps the registry here
#endif

#include "aten/common.h"

namespace ttpu::aten {

namespace {

struct TpuBackendMeta final : c10::BackendMeta {
  std::unordered_map<std::string, bool> entries;
  // A tensor copied with its metadata (shallow copy, detach) gets its own entries.
  c10::intrusive_ptr<c10::BackendMeta> clone(const c10::intrusive_ptr<c10::BackendMeta>&) const override {
    auto copy = c10::make_intrusive<TpuBackendMeta>();
    copy->entries = entries;
    return copy;
  }
};

void get_metadata(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  auto* meta = dynamic_cast<TpuBackendMeta*>(t.unsafeGetTensorImpl()->get_backend_meta());
  if (!meta) return;
  for (const auto& [k, v] : meta->entries) metadata[k] = v;
}

void set_metadata(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  if (metadata.empty()) return;
  auto* impl = t.unsafeGetTensorImpl();
  auto* meta = dynamic_cast<TpuBackendMeta*>(impl->get_backend_meta());
  if (!meta) {
    auto fresh = c10::make_intrusive<TpuBackendMeta>();
    meta = fresh.get();
    impl->set_backend_meta(fresh);
  }
  for (const auto& [k, v] : metadata) meta->entries[k] = v;
}

struct RegisterBackendMeta {
  RegisterBackendMeta() {
    torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &get_metadata, &set_metadata);
  }
} g_register_backend_meta;

}  // namespace

}  // namespace ttpu::aten
