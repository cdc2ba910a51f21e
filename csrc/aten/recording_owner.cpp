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

#include <c10/util/ThreadLocalDebugInfo.h>

#include "runtime/deferred.h"

namespace ttpu::aten {

namespace {

constexpr std::string_view kOwnerName = "torch_tpu.recording_owner";
const c10::DebugInfoKind kOwner(&kOwnerName);

struct OwnerInfo : c10::DebugInfoBase {
  explicit OwnerInfo(uint64_t id) : id(id) {}
  uint64_t id;
};

std::atomic<uint64_t> g_next_owner{1};

uint64_t recording_owner() {
  if (auto* info = c10::ThreadLocalDebugInfo::get(kOwner)) return static_cast<OwnerInfo*>(info)->id;
  auto info = std::make_shared<OwnerInfo>(g_next_owner++);
  c10::ThreadLocalDebugInfo::_push(kOwner, info);  // stays for the thread's lifetime
  return info->id;
}

struct Install {
  Install() { runtime::set_owner_function(&recording_owner); }
} g_install;

}  // namespace

}  // namespace ttpu::aten
