// Pinned host memory for 'tpu': tensor.pin_memory(), is_pinned(),
// DataLoader(pin_memory=True), torch.accelerator's host-cache calls.
//
// A pinned block is host memory this allocator handed out and remembers, so
// is_pinned() answers for any pointer inside it. On the CPU plugin a device
// buffer is host memory too and a host-to-device copy is one memcpy, so no
// page locking is needed; on GPU/TPU plugins these blocks are where PJRT's
// pinned-host memory space belongs (not built yet). A copy to 'tpu' from
// pinned memory, non_blocking or not, takes a snapshot of the source before
// it returns (non_blocking is a permission, not a promise, as CUDA documents).
#include <ATen/core/CachingHostAllocator.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

class PinnedAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* p = nullptr;
    if (nbytes > 0) {
      TORCH_CHECK_WITH(OutOfMemoryError, posix_memalign(&p, 64, nbytes) == 0,
                       "torch_tpu: cannot allocate ", nbytes, " bytes of pinned host memory");
      std::lock_guard<std::mutex> lock(mu_);
      blocks_[reinterpret_cast<uintptr_t>(p)] = nbytes;
      count(nbytes, /*alloc=*/true);
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  // A block is reused only after it is freed, and a copy from it completes
  // before the copy returns: nothing to track per stream.
  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override {}  // nothing cached: blocks go back to the system when freed
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* st : counters()) st->reset_accumulated();
    stats_.num_host_alloc = stats_.num_host_free = 0;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* st : counters()) st->reset_peak();
  }

  bool contains(const void* ptr) {
    auto a = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    return a < it->first + it->second;
  }

 private:
  static void release(void* p);
  // The statistics a block counts in (under mu_).
  std::array<c10::CachingAllocator::Stat*, 4> counters() {
    return {&stats_.active_requests, &stats_.allocations, &stats_.active_bytes, &stats_.allocated_bytes};
  }
  void count(size_t nbytes, bool alloc) {
    auto [requests, allocations, active, allocated] = counters();
    for (auto* st : {requests, allocations}) alloc ? st->increase(1) : st->decrease(1);
    for (auto* st : {active, allocated}) alloc ? st->increase(nbytes) : st->decrease(nbytes);
    (alloc ? stats_.num_host_alloc : stats_.num_host_free)++;
  }
  std::mutex mu_;
  std::map<uintptr_t, size_t> blocks_;
  at::HostStats stats_;
};

PinnedAllocator g_pinned;

void PinnedAllocator::release(void* p) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(g_pinned.mu_);
    auto it = g_pinned.blocks_.find(reinterpret_cast<uintptr_t>(p));
    if (it != g_pinned.blocks_.end()) {
      g_pinned.count(it->second, /*alloc=*/false);
      g_pinned.blocks_.erase(it);
    }
  }
  std::free(p);
}

}  // namespace

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_pinned)

c10::Allocator* pinned_allocator() { return &g_pinned; }
bool is_pinned(const void* ptr) { return ptr && g_pinned.contains(ptr); }

}  // namespace ttpu::aten
