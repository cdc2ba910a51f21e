// Whose DeferAndFuse graph an op is recorded into (runtime/deferred.h).
//
// Each user thread gets an owner id the first time it records, kept in
// PyTorch's ThreadLocalDebugInfo. PyTorch carries that state into the
// threads that work for the caller (the autograd engine's device threads run
// each backward node under the calling thread's state), so a backward pass
// records into the graph of the thread that called backward() and forward +
// backward + optimizer still fuse into one graph, while two user threads
// training at once record into two graphs that never mix.
#include <atomic>
#include <memory>
#include <string_view>

#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/headeronly/version.h>

#include "runtime/deferred.h"

namespace ttpu::aten {

namespace {

std::atomic<uint64_t> g_next_owner{1};

#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 13
constexpr std::string_view kOwnerName = "torch_tpu.recording_owner";
const c10::DebugInfoKind kOwner(&kOwnerName);

struct OwnerInfo : c10::DebugInfoBase {
  explicit OwnerInfo(uint64_t id) : id(id) {}
  uint64_t id;
};

// The id is pushed as debug info so that it travels into the autograd
// engine's threads. PyTorch's profiler pops its PROFILER_STATE at the end
// and requires it on top of the stack, so while it is on top our entry goes
// under it (seen: profiling a DeferAndFuse region whose first recorded op is
// inside it broke the profiler's exit). If some other entry is on top the id
// is kept thread-local and pushed by a later op: the same id, so the
// thread's pending graph stays one graph.
uint64_t recording_owner() {
  if (auto* info = c10::ThreadLocalDebugInfo::get(kOwner)) return static_cast<OwnerInfo*>(info)->id;
  thread_local uint64_t t_id = 0;
  if (t_id == 0) t_id = g_next_owner++;
  auto owner = std::make_shared<OwnerInfo>(t_id);
  if (!c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) {
    c10::ThreadLocalDebugInfo::_push(kOwner, owner);  // stays for the thread's lifetime
    return t_id;
  }
  std::shared_ptr<c10::DebugInfoBase> profiler;
  try {
    profiler = c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);  // checks before it pops
  } catch (const c10::Error&) {
    return t_id;  // the profiler's entry is not on top: leave the stack alone
  }
  c10::ThreadLocalDebugInfo::_push(kOwner, owner);
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, profiler);
  return t_id;
}
#else
// torch < 2.13 has a closed enum of debug-info kinds, so no slot of our own:
// the owner is the OS thread. Values are the same; a backward pass on the
// autograd engine's device thread then records into a graph of its own.
uint64_t recording_owner() {
  thread_local uint64_t id = g_next_owner++;
  return id;
}
#endif

struct Install {
  Install() { runtime::set_owner_function(&recording_owner); }
} g_install;

}  // namespace

}  // namespace ttpu::aten
