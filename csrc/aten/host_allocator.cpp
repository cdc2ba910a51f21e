// Pinned host memory for 'tpu': tensor.pin_memory(), is_pinned(),
// DataLoader(pin_memory=True), torch.accelerator's host-cache calls.
//
// A pinned block is host memory this allocator handed out and remembers, so
// is_pinned() answers for any pointer inside it. On the CPU plugin a device
// buffer is host memory too and a host-to-device copy is one memcpy, so no
// page locking is needed; on GPU/TPU plugins these blocks are where PJRT's
// pinned-host memory space belongs (not built yet). A copy to 'tpu' from
// pageable memory, or a blocking one, takes a snapshot of the source before it
// returns. A non_blocking copy from a pinned block returns at once and the
// plugin reads the block while the host goes on (copies.cpp), as CUDA's does:
// changing the block before the copy is done is the user's race, as on CUDA,
// but freeing it is not: a block with an unfinished copy is given back to the
// system only once the copy is done (the copy's callback sets a flag; the
// block is freed by the next allocator call that finds it set, never on the
// plugin's thread).
#include <ATen/core/CachingHostAllocator.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

class PinnedAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* p = nullptr;
    if (nbytes > 0) {
      sweep();
      TORCH_CHECK_WITH(OutOfMemoryError, posix_memalign(&p, 64, nbytes) == 0,
                       "torch_tpu: cannot allocate ", nbytes, " bytes of pinned host memory");
      std::lock_guard<std::mutex> lock(mu_);
      blocks_[reinterpret_cast<uintptr_t>(p)] = Block{nbytes, {}};
      count(nbytes, /*alloc=*/true);
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  // Our copies record their own use (record_use); stream order adds nothing,
  // since a block is reused only after the system has it back.
  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override { sweep(); }  // nothing cached beyond blocks still being read
  at::HostStats get_stats() override {
    sweep();
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
    std::lock_guard<std::mutex> lock(mu_);
    return find(ptr) != blocks_.end();
  }

  void record_use(const void* ptr, std::shared_ptr<std::atomic<bool>> done) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = find(ptr);
    TORCH_INTERNAL_ASSERT(it != blocks_.end(), "pinned_record_use: not a pinned block");
    auto& uses = it->second.uses;
    std::erase_if(uses, [](const auto& u) { return u->load(std::memory_order_acquire); });
    uses.push_back(std::move(done));
  }

 private:
  struct Block {
    size_t nbytes;
    std::vector<std::shared_ptr<std::atomic<bool>>> uses;  // copies that may still read it
    bool busy() const {
      for (const auto& u : uses)
        if (!u->load(std::memory_order_acquire)) return true;
      return false;
    }
  };
  // The block holding ptr, or end() (under mu_).
  std::map<uintptr_t, Block>::iterator find(const void* ptr) {
    auto a = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return blocks_.end();
    --it;
    return a < it->first + it->second.nbytes ? it : blocks_.end();
  }
  // Frees the released blocks whose copies are done.
  void sweep() {
    std::vector<void*> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(released_, [&](uintptr_t a) {
        auto it = blocks_.find(a);
        if (it->second.busy()) return false;
        count_freed(it->second.nbytes);
        blocks_.erase(it);
        done.push_back(reinterpret_cast<void*>(a));
        return true;
      });
    }
    for (void* p : done) std::free(p);
  }
  static void release(void* p);
  // The statistics a block counts in (under mu_).
  std::array<c10::CachingAllocator::Stat*, 4> counters() {
    return {&stats_.active_requests, &stats_.allocations, &stats_.active_bytes, &stats_.allocated_bytes};
  }
  // As CUDA's host allocator counts: a block stops being active when its
  // owner frees it, and stops being allocated when it goes back to the
  // system (later, if a copy still reads it).
  void count(size_t nbytes, bool alloc) {
    if (alloc) {
      stats_.active_requests.increase(1);
      stats_.allocations.increase(1);
      stats_.active_bytes.increase(nbytes);
      stats_.allocated_bytes.increase(nbytes);
      stats_.num_host_alloc++;
      return;
    }
    count_inactive(nbytes);
    count_freed(nbytes);
  }
  void count_inactive(size_t nbytes) {
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(nbytes);
  }
  void count_freed(size_t nbytes) {
    stats_.allocations.decrease(1);
    stats_.allocated_bytes.decrease(nbytes);
    stats_.num_host_free++;
  }
  std::mutex mu_;
  std::map<uintptr_t, Block> blocks_;
  std::vector<uintptr_t> released_;  // freed by their owner, still read by a copy
  at::HostStats stats_;
};

PinnedAllocator g_pinned;

void PinnedAllocator::release(void* p) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(g_pinned.mu_);
    auto it = g_pinned.blocks_.find(reinterpret_cast<uintptr_t>(p));
    if (it != g_pinned.blocks_.end()) {
      if (it->second.busy()) {
        g_pinned.count_inactive(it->second.nbytes);
        g_pinned.released_.push_back(it->first);
        return;
      }
      g_pinned.count(it->second.nbytes, /*alloc=*/false);
      g_pinned.blocks_.erase(it);
    }
  }
  std::free(p);
  g_pinned.sweep();
}

}  // namespace

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_pinned)

c10::Allocator* pinned_allocator() { return &g_pinned; }
bool is_pinned(const void* ptr) { return ptr && g_pinned.contains(ptr); }
std::map<std::string, int64_t> pinned_stats() {
  at::HostStats st = g_pinned.get_stats();
  std::map<std::string, int64_t> out;
  auto put = [&](const std::string& name, const c10::CachingAllocator::Stat& s) {
    out[name + ".current"] = s.current;
    out[name + ".peak"] = s.peak;
    out[name + ".allocated"] = s.allocated;
    out[name + ".freed"] = s.freed;
  };
  put("allocations", st.allocations);
  put("allocated_bytes", st.allocated_bytes);
  put("active_requests", st.active_requests);
  put("active_bytes", st.active_bytes);
  out["num_host_alloc"] = st.num_host_alloc;
  out["num_host_free"] = st.num_host_free;
  return out;
}

void pinned_record_use(const void* ptr, std::shared_ptr<std::atomic<bool>> done) {
  g_pinned.record_use(ptr, std::move(done));
}

}  // namespace ttpu::aten
