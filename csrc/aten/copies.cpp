// Copies between tpu tensors, and between the host and a tpu tensor (any
// view, any dtype: a copy converts and broadcasts on the device), and item().
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include "aten/native_kernels.h"

namespace ttpu::aten {

namespace {

// The integer dtype of the same width: a host copy between tensors of one
// dtype moves bits (CPU has no copy kernel for float4_e2m1fn_x2, and a
// float round trip could touch NaN payloads); kUndefined for other widths.
at::ScalarType bits_dtype(at::ScalarType t) {
  switch (c10::elementSize(t)) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
    default: return at::ScalarType::Undefined;
  }
}

// The value of a tpu view on the host, in `dtype` (the source dtype or its
// bits). A view that is not its storage's buffer is gathered on the device,
// one executable per view shape, unless the whole storage is small next to
// the view: then the storage comes down and the view is taken on the host.
// Reading many differently shaped views of one buffer (a bucketed graph's
// narrowed results, slices of a sequence in a loop) then compiles nothing.
at::Tensor download_view(const at::Tensor& src, at::ScalarType dtype) {
  at::Tensor host = at::empty(src.sizes(), at::TensorOptions().dtype(dtype));
  if (src.numel() == 0) return host;
  runtime::StorageHandle& h = handle_of(src);
  const size_t view_bytes = static_cast<size_t>(src.numel()) * src.element_size();
  constexpr size_t kSmallStorage = 1 << 20;
  const bool whole_storage = h.buffer && h.buffer->type().elem == elem_of(src.scalar_type()) &&
                             h.buffer->nbytes() == h.nbytes && h.nbytes <= std::max(4 * view_bytes, kSmallStorage);
  const bool is_buffer = h.buffer && src.storage_offset() == 0 && src.is_contiguous() &&
                         h.buffer->type().dims == src.sizes();
  if (whole_storage && !is_buffer) {
    at::Tensor storage = at::empty({static_cast<int64_t>(h.nbytes / src.element_size())},
                                   at::TensorOptions().dtype(dtype));
    runtime::download(*h.buffer, storage.data_ptr());
    host.copy_(storage.as_strided(src.sizes(), src.strides(), src.storage_offset()));
    return host;
  }
  BufferPtr value = read(src);
  runtime::download(*value, host.data_ptr());
  return host;
}

// A non_blocking copy from pinned host memory that needs no host-side work
// (one dtype, one shape, dense): the plugin reads the block while the host
// goes on, as a CUDA copy from pinned memory does. Anything else (pageable
// memory, a conversion, a broadcast) is a snapshot taken before copy_ returns.
bool upload_in_background(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  return non_blocking && src.device().is_cpu() && src.scalar_type() == dst.scalar_type() &&
         src.sizes() == dst.sizes() && src.is_contiguous() && !src.is_conj() && !src.is_neg() &&
         is_pinned(src.data_ptr());
}

void copy_into(const at::Tensor& dst, const at::Tensor& src, bool non_blocking = false) {
  if (dst.numel() == 0) return;
  // Lazy conj/neg bits (fft results, x.conj()): copy the stored values, then
  // apply the pending conjugation/negation to the destination. (resolve_conj
  // itself copies, so calling it here would recurse.)
  if (src.is_conj()) {
    copy_into(dst, src.conj());
    if (dst.is_complex()) dst.conj_physical_();
    return;
  }
  if (src.is_neg()) {
    copy_into(dst, src._neg_view());
    dst.neg_();
    return;
  }
  // one dtype on both sides: the host side moves bits
  const at::ScalarType bits =
      src.scalar_type() == dst.scalar_type() ? bits_dtype(src.scalar_type()) : at::ScalarType::Undefined;
  if (dst.is_privateuseone()) {
    c10::DeviceGuard guard(dst.device());
    int dev = device_index(dst);
    TensorType to{elem_of(dst.scalar_type()), dst.sizes().vec()};
    BufferPtr value;
    if (src.is_privateuseone()) {
      value = read(src);
      if (device_index(src) != dev) value = runtime::client().copy_to_device(*value, dev);
      value = runtime::convert_broadcast(value, to, dev);
    } else if (upload_in_background(dst, src, non_blocking)) {
      auto done = std::make_shared<std::atomic<bool>>(false);
      pinned_record_use(src.data_ptr(), done);
      value = runtime::upload(src.data_ptr(), to, dev, [done] { done->store(true, std::memory_order_release); });
    } else {
      at::Tensor host = bits != at::ScalarType::Undefined
                            ? src.to(at::kCPU).view(bits).expand(dst.sizes()).contiguous()
                            : src.to(at::kCPU).to(dst.scalar_type()).expand(dst.sizes()).contiguous();
      value = runtime::upload(host.data_ptr(), to, dev);
    }
    write(dst, value);
    return;
  }
  // device -> host
  if (bits != at::ScalarType::Undefined) {
    dst.view(bits).copy_(download_view(src, bits));
  } else {
    dst.copy_(download_view(src, src.scalar_type()));
  }
}

}  // namespace

at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  TORCH_CHECK(self.defined() && src.defined(), "copy_: tensors must be defined");
  try {
    copy_into(self, src, non_blocking);
  } catch (...) {
    rethrow_as_torch_error("copy_ (" + describe(src) + " -> " + describe(self) + ")");
  }
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor d = dst;
  copy_(d, self, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_output(dst, self.sizes());
  at::Tensor d = dst;
  copy_(d, self, false);
  return dst;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  at::Tensor host = at::empty({}, at::TensorOptions().dtype(self.scalar_type()));
  try {
    BufferPtr v = read(self);
    runtime::download(*v, host.data_ptr());
  } catch (...) {
    rethrow_as_torch_error("item() of " + describe(self));
  }
  return host.item();
}

}  // namespace ttpu::aten
