// The storage model. A PyTorch storage on 'tpu' owns one StorageHandle (it
// is the DataPtr's context). The handle holds the device buffer with the
// storage's current bytes. Buffers are typed, storages are untyped bytes:
// a view of another dtype reinterprets the bytes exactly (bitcast).
//
// Reading a view gathers it from the buffer; writing through a view scatters
// the value into a new buffer and swaps it into the handle, so every alias
// (base, siblings, views of views) sees the write on its next read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/lowering.h"
#include "runtime/runtime.h"

namespace ttpu::runtime {

struct StorageHandle {
  int device = 0;
  size_t nbytes = 0;
  uintptr_t address = 0;  // start of this storage's reserved address range
  BufferPtr buffer;       // null until first written: reads as zeros
};

// Whether `view` is exactly the storage's current buffer (its value needs no gather).
bool is_whole_buffer(const StorageHandle& h, const ops::ViewSpec& view);
// The dense value of `view` (shape view.sizes, type view.elem).
BufferPtr read_view(StorageHandle& h, const ops::ViewSpec& view);
// A view as an operand of another op's module, without an executable of its
// own: appends the storage's buffer and the view's offset (an s64 scalar) to
// `inputs` and the view to `key`; the op's module gathers the view
// (ops::gather_view), next to the op that consumes it, so XLA fuses the
// transpose or slice into it. The buffer is made first for a fresh storage.
void view_operand(StorageHandle& h, const ops::ViewSpec& view, std::vector<BufferPtr>& inputs, std::string& key);
// Writes `value` (shape view.sizes, type view.elem) through `view`.
void write_view(StorageHandle& h, const ops::ViewSpec& view, const BufferPtr& value);
// Moves the contents into a storage of `new_nbytes` (zero-filled tail).
BufferPtr resized_buffer(StorageHandle& h, size_t new_nbytes);
// A buffer of `type` filled with zeros.
BufferPtr zeros(const TensorType& type, int device);
// Converts and broadcasts a value (dtype conversion in copy_).
BufferPtr convert_broadcast(const BufferPtr& value, const TensorType& to, int device);

}  // namespace ttpu::runtime
