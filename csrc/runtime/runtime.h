// Process-wide runtime: the lazily created PJRT client, the executable cache
// and execution counters. Torch-free; the aten layer sits on top of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/lowering.h"
#include "pjrt/client.h"
#include "runtime/disk_cache.h"

namespace ttpu::runtime {

using pjrt::BufferPtr;
using shlo::ElemType;
using shlo::TensorType;
using shlo::Value;

// Where the plugin comes from. Python fills this in at import (paths only; no
// plugin is loaded until the first device use).
void set_plugin_config(const pjrt::PluginConfig& config);
const pjrt::PluginConfig& plugin_config();

// The client, created on first call. Throws pjrt::Error with a fix-it message.
pjrt::Client& client();
bool client_created();
// Number of devices without forcing plugin start-up where it can be known
// (CPU plugin); never throws: returns 0 when the plugin cannot load.
int device_count_noexcept();

struct CompiledOp {
  ~CompiledOp();  // forgets its profiler name
  pjrt::ExecutablePtr exe;
  std::vector<TensorType> outputs;
  std::vector<int> donated_args;
  std::vector<bool> output_present;  // empty = all present; false = an undefined (not requested) result
  std::vector<ops::CheckSpec> checks;  // the last checks.size() outputs are device-side check flags
};
using CompiledOpPtr = std::shared_ptr<const CompiledOp>;

struct Stats {
  std::atomic<uint64_t> compiles{0};  // real compilations (a disk-cache load is not one)
  std::atomic<uint64_t> disk_loads{0};  // executables loaded from the persistent cache instead
  std::atomic<uint64_t> cache_hits{0};
  std::atomic<uint64_t> cache_misses{0};
  std::atomic<uint64_t> cache_evictions{0};  // least recently used executables dropped at capacity
  std::atomic<uint64_t> executions{0};
  std::atomic<uint64_t> compile_nanoseconds{0};
  std::atomic<uint64_t> host_to_device{0};
  std::atomic<uint64_t> host_to_device_async{0};  // of those, copies the host did not wait for
  std::atomic<uint64_t> device_to_host{0};
};
Stats& stats();

// Looks up `key`; on a miss calls `build` to make StableHLO text (and output
// types), loads it from the persistent disk cache (disk_cache.h) or compiles
// it (and stores it there), and caches the result. A hit builds no text.
struct BuiltModule {
  std::string text;
  std::vector<TensorType> outputs;
  std::vector<int> donated_args;
  std::vector<bool> output_present;
  std::vector<ops::CheckSpec> checks = {};
};
//
// The in-memory cache is bounded (least recently used executables are
// dropped): each loaded executable holds JIT code mappings on XLA:CPU (about
// 5 per executable), and a process that keeps meeting new shapes would
// otherwise reach the kernel's map limit and fail inside LLVM. A dropped
// executable comes back from the disk cache (or is compiled) when needed.
// Capacity: TORCH_TPU_EXECUTABLE_CACHE_SIZE (default 4096), or set below.
CompiledOpPtr get_or_compile(const std::string& key, const std::function<BuiltModule()>& build);
size_t cache_size();
size_t cache_capacity();
void set_cache_capacity(size_t n);  // at least 1; evicts at once down to n
void clear_cache();

// Runs a compiled op on `device` (asynchronously where the plugin allows).
std::vector<BufferPtr> execute(const CompiledOp& op, const std::vector<pjrt::Buffer*>& args, int device);
// The same, donating only `donated` (a subset of op.donated_args): the plugin
// copies an aliased argument that is not donated.
std::vector<BufferPtr> execute(const CompiledOp& op, const std::vector<pjrt::Buffer*>& args, int device,
                               const std::vector<int>& donated);

// A device copy of host `data`. Without `on_done`, `data` may change once
// this returns. With it (a non_blocking copy from pinned memory) the host
// does not wait for the copy: `data` must stay unchanged until `on_done`
// runs, maybe on a plugin thread, so it must not take the GIL or block.
// Readers of the buffer wait for the copy either way.
BufferPtr upload(const void* data, const TensorType& type, int device, std::function<void()> on_done = nullptr);
// A 0-d value (at most 8 bytes) on the device, shared by every caller that
// asks for the same value: recently used scalars (alpha=1, lr, eps, view
// offsets) are uploaded once. The cache holds a reference, so such a buffer
// is never donated.
BufferPtr upload_scalar(const void* bytes, ElemType type, int device);
// Scalar buffers upload_scalar keeps (bounded; leak tests discount them).
size_t scalar_cache_size();

// Appends a type ("f32,2,3;") to a cache key.
void append_type(std::string& key, const TensorType& t);
void download(const pjrt::Buffer& buffer, void* dst);

// Execution mode: Strict (asynchronous, default) or Debug (every op waits for
// its own completion so errors surface at the op that caused them; optional
// NaN/Inf check of every floating-point result).
enum class Mode : int { Strict = 0, Debug = 1, DeferAndFuse = 2 };
Mode mode();
void set_mode(Mode m);
bool debug_nans();
void set_debug_nans(bool on);

// Set by the fork handler: the child of a fork must not touch the parent's client.
bool forked_after_init();

// Optional text dump of every compiled module (TORCH_TPU_DUMP_DIR).
void maybe_dump(const std::string& key, const std::string& text);

}  // namespace ttpu::runtime
