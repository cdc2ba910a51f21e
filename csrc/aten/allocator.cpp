// The device allocator: a c10::DeviceAllocator, so torch.accelerator's memory
// API (memory_allocated, memory_stats, get_memory_info, empty_cache, peaks)
// and torch.tpu's CUDA-shaped one read the same numbers.
//
// A storage is an address range plus a handle whose device buffer appears
// when the storage is first written (runtime/storage.h); the buffer is freed
// by PJRT as soon as the storage dies, so nothing is cached and "reserved"
// equals "allocated" (empty_cache has nothing to return). Stats count the
// bytes of live storages, with CUDA's pools: small (<= 1 MiB) and large.
//
// Out of memory: a request larger than the device's free memory raises
// torch.OutOfMemoryError naming requested, free and total bytes (checked for
// requests of 64 MiB and more, so the small ones that make up a step cost no
// query). Free/total come from the plugin's PJRT_Device_MemoryStats limit when
// it reports one (GPU, TPU), else, on the CPU plugin whose device memory is
// host memory, from the host's MemAvailable/MemTotal.
#include <sys/mman.h>

#include <c10/core/CachingDeviceAllocator.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

// ---------------------------------------------------------------------------
// Address ranges: every storage gets its own non-overlapping range inside a
// reserved, inaccessible region, so data_ptr arithmetic and overlap checks
// behave as on CPU and a stray host dereference faults loudly.

constexpr size_t kAlign = 64;

class AddressSpace {
 public:
  uintptr_t reserve(size_t nbytes) {
    size_t size = round(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto& bin = free_[size];
    if (!bin.empty()) {
      uintptr_t a = bin.back();
      bin.pop_back();
      return a;
    }
    if (!base_ || next_ + size > limit_) map(size);  // first use, or out of reserved addresses
    uintptr_t a = next_;
    next_ += size;
    return a;
  }
  void release(uintptr_t addr, size_t nbytes) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[round(nbytes)].push_back(addr);
  }

 private:
  static size_t round(size_t n) { return n == 0 ? kAlign : (n + kAlign - 1) / kAlign * kAlign; }
  void map(size_t at_least) {
    size_t len = size_t{1} << 42;  // 4 TiB of address space, no memory behind it
    void* p = MAP_FAILED;
    while (len >= (size_t{1} << 30) && len >= at_least + kAlign) {
      p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) break;
      len >>= 1;
    }
    TORCH_CHECK_WITH(OutOfMemoryError, p != MAP_FAILED, "torch_tpu: cannot reserve ", at_least,
                     " bytes of address space for a device storage");
    base_ = reinterpret_cast<uintptr_t>(p);
    next_ = base_ + kAlign;  // never hand out the region's first byte
    limit_ = base_ + len;
  }
  std::mutex mu_;
  uintptr_t base_ = 0, next_ = 0, limit_ = 0;
  std::map<size_t, std::vector<uintptr_t>> free_;
};

AddressSpace& address_space() {
  static AddressSpace* s = new AddressSpace();
  return *s;
}

// ---------------------------------------------------------------------------
// Statistics, in c10's CUDA-shaped layout.

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::StatType;

constexpr size_t kSmallBlock = 1 << 20;           // CUDA's small-pool limit
constexpr size_t kOomCheckFrom = size_t{64} << 20;  // requests that query free memory

std::mutex g_stats_mutex;
std::map<int, DeviceStats> g_stats;

template <typename F>
void each_pool(size_t nbytes, F f) {
  f(static_cast<size_t>(StatType::AGGREGATE));
  f(static_cast<size_t>(nbytes <= kSmallBlock ? StatType::SMALL_POOL : StatType::LARGE_POOL));
}

// Every per-pool statistic of a device (what the resets walk).
template <typename F>
void each_stat_array(DeviceStats& s, F f) {
  for (auto* arr : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes, &s.reserved_bytes,
                    &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (auto& st : *arr) f(st);
}

// One storage more (alloc) or fewer in every stat a storage counts in.
void count(int device, size_t nbytes, bool alloc) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  DeviceStats& s = g_stats[device];
  each_pool(nbytes, [&](size_t p) {
    for (auto* st : {&s.allocation[p], &s.segment[p], &s.active[p]}) alloc ? st->increase(1) : st->decrease(1);
    for (auto* st : {&s.allocated_bytes[p], &s.reserved_bytes[p], &s.active_bytes[p], &s.requested_bytes[p]})
      alloc ? st->increase(nbytes) : st->decrease(nbytes);
  });
  (alloc ? s.num_device_alloc : s.num_device_free)++;
}

// Host memory from /proc/meminfo, in bytes: (MemAvailable, MemTotal).
std::pair<size_t, size_t> host_memory() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  size_t avail = 0, total = 0;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    size_t kb = 0;
    in >> key >> kb;
    if (key == "MemAvailable:") avail = kb * 1024;
    if (key == "MemTotal:") total = kb * 1024;
  }
  return {avail, total};
}

std::string gib(size_t bytes) {
  std::ostringstream o;
  o.precision(2);
  o << std::fixed << static_cast<double>(bytes) / (1 << 30) << " GiB";
  return o.str();
}

void delete_handle(void* ctx) {
  auto* h = static_cast<runtime::StorageHandle*>(ctx);
  address_space().release(h->address, h->nbytes);
  count(h->device, h->nbytes, /*alloc=*/false);
  delete h;
}

class TpuAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    int device = current_device();
    if (nbytes >= kOomCheckFrom) check_fits(device, nbytes);
    auto* h = new runtime::StorageHandle();
    h->device = device;
    h->nbytes = nbytes;
    try {
      h->address = address_space().reserve(nbytes);
    } catch (...) {
      delete h;
      throw;
    }
    count(device, nbytes, /*alloc=*/true);
    return {reinterpret_cast<void*>(h->address), h, &delete_handle,
            c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device))};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    TORCH_CHECK(false, "torch_tpu: raw copies between device storages are not supported (", count,
                " bytes); use tensor.copy_()");
  }

  bool initialized() override { return true; }
  // Nothing is cached: a storage's buffer is freed when the storage dies.
  void emptyCache(c10::MempoolId_t) override {}
  // One stream per device: a buffer's last use is already ordered before its free.
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(g_stats_mutex);
    return g_stats[device];
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(g_stats_mutex);
    DeviceStats& s = g_stats[device];
    each_stat_array(s, [](c10::CachingAllocator::Stat& st) { st.reset_accumulated(); });
    s.num_alloc_retries = s.num_ooms = s.num_sync_all_streams = s.num_device_alloc = s.num_device_free = 0;
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(g_stats_mutex);
    each_stat_array(g_stats[device], [](c10::CachingAllocator::Stat& st) { st.reset_peak(); });
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override { return memory_info(device); }

 private:
  static void check_fits(int device, size_t nbytes) {
    auto [free, total] = memory_info(device);
    if (nbytes <= free) return;
    int64_t in_use;
    {
      std::lock_guard<std::mutex> lock(g_stats_mutex);
      DeviceStats& s = g_stats[device];
      s.num_ooms++;
      in_use = s.allocated_bytes[0].current;
    }
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torch_tpu: out of memory on tpu:", device, ": tried to allocate ",
                     gib(nbytes), " (", nbytes, " bytes); the device has ", gib(free), " free of ", gib(total),
                     " total, and ", gib(static_cast<size_t>(in_use)),
                     " are held by live tensors. Free tensors (del, or let them go out of scope), use a smaller "
                     "batch or lower precision.");
  }
};

TpuAllocator g_allocator;

// Storages created from Python (torch.UntypedStorage(n, device='tpu'), which
// torch.load uses to restore tensors), torch.accelerator's memory API and
// c10::getDeviceAllocator find the allocator through this table.
struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(c10::DeviceType::PrivateUse1, &g_allocator); }
} g_register_allocator;

}  // namespace

std::pair<size_t, size_t> memory_info(int device) {
  if (runtime::client_created() || runtime::plugin_config().platform != "cpu") {
    try {
      pjrt::Client& c = runtime::client();
      pjrt::Client::DeviceMemory m = c.device_memory(device);
      int64_t limit = m.bytes_limit, used = m.bytes_in_use;
      if (limit > 0 && used >= 0) return {static_cast<size_t>(std::max<int64_t>(limit - used, 0)), limit};
    } catch (const pjrt::Error&) {
      // no client: fall back to the host's numbers below
    }
  }
  return host_memory();
}

MemoryStats memory_stats(int device) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  const DeviceStats& s = g_stats[device];
  return MemoryStats{s.allocated_bytes[0].current, s.allocated_bytes[0].peak, s.allocation[0].allocated};
}

void reset_peak(int device) { g_allocator.resetPeakStats(static_cast<c10::DeviceIndex>(device)); }

c10::Allocator* tpu_allocator() { return &g_allocator; }

runtime::StorageHandle& handle_of(const at::Tensor& t) {
  void* ctx = t.storage().data_ptr().get_context();
  // A storage made around a 'tpu' address by someone else (torch._C's raw
  // DLPack import, from_blob) has no device buffer behind it. The public
  // DLPack imports resolve 'tpu' capsules to the exported storage instead
  // (torch_tpu/_integrations/dlpack.py).
  TORCH_CHECK(ctx != nullptr && t.storage().data_ptr().get_deleter() == &delete_handle, "torch_tpu: this tensor on ",
              t.device(), " does not own torch_tpu device memory (was it made by torch._C._from_dlpack or from_blob "
              "from a 'tpu' pointer?): a 'tpu' data_ptr() is a reserved address, the memory lives in the PJRT "
              "runtime. Import 'tpu' DLPack capsules with torch.from_dlpack / torch.utils.dlpack.from_dlpack, or "
              "exchange tensor.cpu().");
  return *static_cast<runtime::StorageHandle*>(ctx);
}

void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  auto* old = static_cast<runtime::StorageHandle*>(storage.data_ptr().get_context());
  TORCH_CHECK(old != nullptr, "torch_tpu: storage has no device handle");
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(old->device)));
  BufferPtr moved;
  try {
    moved = runtime::resized_buffer(*old, new_nbytes);
  } catch (...) {
    rethrow_as_torch_error("storage resize");
  }
  c10::DataPtr fresh = g_allocator.allocate(new_nbytes);
  static_cast<runtime::StorageHandle*>(fresh.get_context())->buffer = moved;
  const_cast<c10::Storage&>(storage).set_data_ptr_noswap(std::move(fresh));
  const_cast<c10::Storage&>(storage).set_nbytes(new_nbytes);
}

}  // namespace ttpu::aten
