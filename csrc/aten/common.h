// Glue between PyTorch tensors and the torch-free runtime.
#pragma once

#include <map>

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include "ops/lowering.h"
#include "runtime/runtime.h"
#include "runtime/storage.h"

namespace ttpu::aten {

using runtime::BufferPtr;
using shlo::ElemType;
using shlo::TensorType;

ElemType elem_of(at::ScalarType t);  // throws a clear error for unsupported dtypes
at::ScalarType scalar_type_of(ElemType t);
TensorType type_of(const at::Tensor& t);  // dtype + sizes

runtime::StorageHandle& handle_of(const at::Tensor& t);
ops::ViewSpec view_of(const at::Tensor& t);

// The dense value of a tpu tensor (its dtype and shape).
BufferPtr read(const at::Tensor& t);
// Whether `t` is exactly its storage's buffer (read() returns it as it is).
bool is_whole_buffer(const runtime::StorageHandle& h, const at::Tensor& t);
// Whether ops take view operands as buffer + view (runtime::view_operand) rather than
// reading them first by an executable of their own; TORCH_TPU_FOLD_VIEWS=0 turns it off.
bool fold_views();
// Writes a value of dst's dtype and shape through dst (any view).
void write(const at::Tensor& dst, const BufferPtr& value);
// A new contiguous tensor that owns `value`.
at::Tensor wrap(const BufferPtr& value, at::ScalarType dtype);

c10::Allocator* tpu_allocator();
// Pinned host memory (host_allocator.cpp).
c10::Allocator* pinned_allocator();
bool is_pinned(const void* ptr);
// An asynchronous copy reads the pinned block holding `ptr` until `done` is
// set: the block is not given back to the system before that (CUDA's host
// allocator records an event for the same reason).
void pinned_record_use(const void* ptr, std::shared_ptr<std::atomic<bool>> done);
// The pinned allocator's statistics, named as torch.cuda.host_memory_stats()
// names them ("allocated_bytes.current", "num_host_free", ...).
std::map<std::string, int64_t> pinned_stats();
// Replaces the storage's bytes by a zero-padded/truncated copy of new_nbytes.
void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes);

int current_device();

// CPU kernel checks that meta functions skip (cpu_checks.cpp): the check for
// `op` (the schema name without namespace, e.g. "sub"), or null. It raises
// what CPU raises for these arguments.
using CpuCheck = void (*)(const std::vector<c10::IValue>& args);
CpuCheck cpu_kernel_check(const std::string& op);

// Streams and events (streams.cpp): what device.cpp's DeviceGuardImpl forwards.
c10::Stream current_stream(c10::DeviceIndex d);
c10::Stream exchange_stream(c10::Stream s);
c10::Stream new_stream(c10::DeviceIndex d, int priority);
c10::Stream pool_stream(c10::DeviceIndex d, bool high_priority);
void event_record(void** event, const c10::Stream& stream, c10::DeviceIndex device, c10::EventFlag flag);
bool event_query(void* event);
void event_synchronize(void* event);
void event_destroy(void* event);
double event_elapsed_ms(void* start, void* end);
bool stream_query(const c10::Stream& s);
void synchronize_device(int device);  // -1: all

// Memory accounting (bytes of live storages per device).
struct MemoryStats {
  int64_t allocated = 0;
  int64_t peak = 0;
  int64_t num_allocs = 0;
};
MemoryStats memory_stats(int device);
void reset_peak(int device);
// (free, total) bytes of the device's memory (allocator.cpp says where from).
std::pair<size_t, size_t> memory_info(int device);

// Random state for random ops: (key, counter), advancing the generator.
std::pair<uint64_t, uint64_t> next_rng_state(const std::optional<at::Generator>& gen, int device, uint64_t numel);
// Number of next_rng_state calls so far (graph replay refuses graphs that draw).
uint64_t rng_draws();
const at::Generator& default_generator(int device);

// Rethrows runtime failures as the right PyTorch exception, naming `what`.
[[noreturn]] void rethrow_as_torch_error(const std::string& what);
// For messages: "Float[2, 3]" (with "@cpu" when not on 'tpu'), and the
// tensors among the last n stack entries.
std::string describe(const at::Tensor& t);
std::string describe_args(const std::vector<c10::IValue>& stack, size_t n);
// The index of a tpu tensor's device (0 when unset).
inline int device_index(const at::Tensor& t) { return t.device().index() < 0 ? 0 : t.device().index(); }

// Whether 'tpu' and CPU tensors count as compatible shallow-copy types
// (Module._apply keeps Parameters, `cpu_t.data = tpu_t` works); see shallow_copy.cpp.
void set_shallow_copy_fix(bool on);
bool shallow_copy_fix();

// Names in the lowering table that match no ATen op overload in this torch.
std::vector<std::string>& unresolved_lowerings();
// (overload, lowering name) for every overload the table registered.
std::vector<std::pair<std::string, std::string>>& registered_lowerings();

// Calls of ops that ran through the explicit host path (linalg decompositions, FFT), by overload.
std::map<std::string, int64_t> host_op_counts();

}  // namespace ttpu::aten
