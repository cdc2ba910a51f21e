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

// The dense value of `view` (shape view.sizes, type view.elem).
BufferPtr read_view(StorageHandle& h, const ops::ViewSpec& view);
// Writes `value` (shape view.sizes, type view.elem) through `view`.
void write_view(StorageHandle& h, const ops::ViewSpec& view, const BufferPtr& value);
// Moves the contents into a storage of `new_nbytes` (zero-filled tail).
BufferPtr resized_buffer(StorageHandle& h, size_t new_nbytes);
// A buffer of `type` filled with zeros.
BufferPtr zeros(const TensorType& type, int device);
// Converts and broadcasts a value (dtype conversion in copy_).
BufferPtr convert_broadcast(const BufferPtr& value, const TensorType& to, int device);

}  // namespace ttpu::runtime
