// Storage and view primitives: a tpu tensor's dense value (read/write through
// any view), wrapping a runtime buffer as a tensor, empty/empty_strided,
// resize_ and set_ (storages are byte-addressed PJRT buffers, runtime/storage.h).
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DeviceGuard.h>

#include "aten/native_kernels.h"

namespace ttpu::aten {

// ---------------------------------------------------------------------------
// Tensor <-> runtime

ops::ViewSpec view_of(const at::Tensor& t) {
  return ops::ViewSpec{elem_of(t.scalar_type()), t.sizes().vec(), t.strides().vec(), t.storage_offset()};
}

bool is_whole_buffer(const runtime::StorageHandle& h, const at::Tensor& t) {
  return h.buffer && t.storage_offset() == 0 && t.is_contiguous() && h.buffer->type().dims == t.sizes() &&
         h.buffer->type().elem == elem_of(t.scalar_type());
}

BufferPtr read(const at::Tensor& t) {
  runtime::StorageHandle& h = handle_of(t);
  // Hot path: the tensor is exactly its storage's buffer (no view metadata to build).
  if (is_whole_buffer(h, t)) return h.buffer;
  return runtime::read_view(h, view_of(t));
}

bool fold_views() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_TPU_FOLD_VIEWS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

void write(const at::Tensor& dst, const BufferPtr& value) { runtime::write_view(handle_of(dst), view_of(dst), value); }

at::Tensor wrap(const BufferPtr& value, at::ScalarType dtype) {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(value->device())));
  at::Tensor t = at::detail::empty_generic(value->type().dims, tpu_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype, std::nullopt);
  handle_of(t).buffer = value;
  return t;
}

// ---------------------------------------------------------------------------
// Storage and view primitives

namespace {

// torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (the default): CPU and
// CUDA fill new memory with NaN (floating, complex) or the dtype's largest
// value (integers, bool), so a read of uninitialised memory is reproducible
// and visible. The fill is an ordinary fill_ (recorded in DeferAndFuse).
bool fill_uninitialized() {
  const auto& ctx = at::globalContext();
  return ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory();
}

at::Tensor filled_if_deterministic(at::Tensor t) {
  if (C10_UNLIKELY(fill_uninitialized()) && t.numel() > 0) at::native::fill_empty_deterministic_(t);
  return t;
}

}  // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!layout.has_value() || *layout == at::kStrided, "torch_tpu: only strided tensors are supported, got ",
              *layout);
  c10::DeviceGuard guard(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
  auto st = dtype.value_or(at::get_default_dtype_as_scalartype());
  elem_of(st);  // reject unsupported dtypes early with a clear message
  return filled_if_deterministic(at::detail::empty_generic(
      size, tpu_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st, memory_format));
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
  auto st = dtype.value_or(at::get_default_dtype_as_scalartype());
  elem_of(st);
  return filled_if_deterministic(at::detail::empty_strided_generic(
      size, stride, tpu_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st));
}

// _efficientzerotensor: as on CPU and CUDA, a tensor with the ZeroTensor
// key and no memory (autograd makes these for gradients known to be zero,
// torch.func.hessian among others). ATen's ZeroTensor fallback hands ops a
// materialised zeros tensor on 'tpu' and refuses writes into it.
namespace {
void no_delete(void*) {}
struct ZeroAllocator final : c10::Allocator {
  c10::Device device;
  explicit ZeroAllocator(c10::Device d) : device(d) {}
  c10::DataPtr allocate(size_t) override { return {nullptr, nullptr, &no_delete, device}; }
  c10::DeleterFnPtr raw_deleter() const override { return &no_delete; }
  void copy_data(void*, const void*, std::size_t) const override {}
};
}  // namespace

at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory) {
  at::Device d = device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device()));
  if (d.index() < 0) d = at::Device(c10::DeviceType::PrivateUse1, current_device());
  auto st = dtype.value_or(at::get_default_dtype_as_scalartype());
  elem_of(st);
  // The storage keeps a pointer to its allocator: one per device, for good.
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ZeroAllocator>> allocators;
  ZeroAllocator* allocator;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& a = allocators[d.index()];
    if (!a) a = std::make_unique<ZeroAllocator>(d);
    allocator = a.get();
  }
  auto keys = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, allocator, keys, st, std::nullopt);
}

void ensure_storage_bytes(const at::Tensor& self, int64_t needed) {
  if (needed > static_cast<int64_t>(self.storage().nbytes())) resize_storage_bytes(self.storage(), needed);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memory_format.has_value()) return self;
  const int64_t old_nbytes = static_cast<int64_t>(self.storage().nbytes());
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value() && *memory_format != at::MemoryFormat::Preserve)
    impl->empty_tensor_restride(*memory_format);
  int64_t needed = static_cast<int64_t>(
      at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(), self.storage_offset()));
  ensure_storage_bytes(self, needed);
  // As CPU: the bytes a growth added are filled (NaN / max), the old ones kept.
  if (C10_UNLIKELY(fill_uninitialized())) at::native::fill_resize_deterministic_(self, old_nbytes);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  std::optional<c10::IntArrayRef> st = stride.data() ? std::optional<c10::IntArrayRef>(stride) : std::nullopt;
  if (st) {
    self.unsafeGetTensorImpl()->set_sizes_and_strides(size, *st);
  } else {
    self.unsafeGetTensorImpl()->set_sizes_contiguous(size);
  }
  int64_t needed = static_cast<int64_t>(
      at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(), offset));
  ensure_storage_bytes(self, needed);
  return self;
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                                      c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return set_storage(self, std::move(source), offset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                     C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {n}, {1});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  if (self.is_same(src)) return self;
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), true);
  return set_storage(self, storage, 0, {0}, {});
}

}  // namespace ttpu::aten
