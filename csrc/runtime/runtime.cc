#include "runtime/runtime.h"

#include "runtime/checks.h"
#include "runtime/deferred.h"
#include "runtime/trace.h"
#include "ops/lowering.h"

#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <list>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace ttpu::runtime {

namespace {

std::mutex g_client_mutex;
pjrt::PluginConfig g_config;
pjrt::Client* g_client = nullptr;  // leaked at exit on purpose (see Client::~Client)
std::string g_init_error;          // a failed start is remembered, not retried
bool g_forked = false;

std::mutex g_cache_mutex;
// Most recently used first; the map points at each key's list node.
std::list<std::string> g_lru;
struct CacheEntry {
  CompiledOpPtr op;
  std::list<std::string>::iterator pos;
};
std::unordered_map<std::string, CacheEntry> g_cache;

size_t initial_capacity() {
  const char* env = std::getenv("TORCH_TPU_EXECUTABLE_CACHE_SIZE");
  if (env && *env) {
    long long n = std::atoll(env);
    if (n > 0) return static_cast<size_t>(n);
  }
  return 4096;
}
size_t g_capacity = initial_capacity();

// Drops least recently used entries beyond the capacity (g_cache_mutex held).
// The executables die when no graph or replay still holds them.
void evict_locked() {
  while (g_cache.size() > g_capacity && !g_lru.empty()) {
    g_cache.erase(g_lru.back());
    g_lru.pop_back();
    stats().cache_evictions++;
  }
}

void on_fork_child() {
  if (g_client) {
    g_forked = true;
    pjrt::disable_after_fork();
  }
}

struct ForkHandlerInstaller {
  ForkHandlerInstaller() { pthread_atfork(nullptr, nullptr, on_fork_child); }
} g_fork_handler;

std::atomic<int> g_mode{0};
std::atomic<bool> g_debug_nans{false};

}  // namespace

Mode mode() { return static_cast<Mode>(g_mode.load(std::memory_order_relaxed)); }
void set_mode(Mode m) {
  if (mode() == Mode::DeferAndFuse && m != Mode::DeferAndFuse) flush_all("leaving DeferAndFuse mode");
  g_mode.store(static_cast<int>(m));
}
bool debug_nans() { return g_debug_nans.load(std::memory_order_relaxed); }
void set_debug_nans(bool on) { g_debug_nans.store(on); }

void set_plugin_config(const pjrt::PluginConfig& config) {
  std::lock_guard<std::mutex> lock(g_client_mutex);
  g_config = config;
}

const pjrt::PluginConfig& plugin_config() { return g_config; }

bool forked_after_init() { return g_forked; }

namespace {
// On the CPU plugin "device" buffers are host memory: XLA allocates each
// execution's results and temporaries with malloc and frees them when they
// die. With glibc's defaults (a dynamic mmap threshold, trimming the heap top
// above 128 KiB) those pages went back to the kernel and were faulted in and
// zeroed again every step (about 600 page faults per small-GPT step). Large
// blocks up to 32 MiB now stay in malloc's heap and up to 256 MiB of free heap
// top is kept, as a caching allocator would; TORCH_TPU_HOST_MALLOC_TUNING=0
// leaves glibc's settings alone.
void tune_host_malloc(const std::string& platform) {
  const char* env = std::getenv("TORCH_TPU_HOST_MALLOC_TUNING");
  if (platform != "cpu" || (env && std::string(env) == "0")) return;
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}
}  // namespace

pjrt::Client& client() {
  if (g_client && !g_forked) return *g_client;
  std::lock_guard<std::mutex> lock(g_client_mutex);
  if (g_forked)
    throw pjrt::Error(
        "torch_tpu: Cannot re-initialize TPU in forked subprocess. To use TPU with multiprocessing, you must use "
        "the 'spawn' start method (the device was initialised before this process was forked; e.g. "
        "DataLoader(multiprocessing_context='spawn')).",
        0);
  if (g_client) return *g_client;
  if (!g_init_error.empty()) throw pjrt::Error(g_init_error, 0);
  try {
    tune_host_malloc(g_config.platform);
    g_client = new pjrt::Client(g_config);
    // Lowerings may pick a platform-specific form (ops::target()); the
    // platform is the plugin's own name, not the configured one.
    ops::set_target(ops::target_from_platform(g_client->platform_name()));
  } catch (const pjrt::Error& e) {
    g_init_error = e.what();
    throw;
  }
  return *g_client;
}

bool client_created() { return g_client != nullptr; }

int device_count_noexcept() {
  if (g_client) return g_client->device_count();
  if (g_config.platform == "cpu") return g_config.path.empty() ? 0 : g_config.cpu_device_count;
  try {
    return client().device_count();
  } catch (...) {
    return 0;
  }
}

Stats& stats() {
  static Stats s;
  return s;
}

void maybe_dump(const std::string& key, const std::string& text) {
  static const char* dir = std::getenv("TORCH_TPU_DUMP_DIR");
  if (!dir || !*dir) return;
  size_t h = std::hash<std::string>()(key);
  std::ofstream f(std::string(dir) + "/module_" + std::to_string(h) + ".mlir");
  f << text;
}

CompiledOpPtr get_or_compile(const std::string& key, const std::function<BuiltModule()>& build) {
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) {
      stats().cache_hits++;
      g_lru.splice(g_lru.begin(), g_lru, it->second.pos);
      return it->second.op;
    }
  }
  stats().cache_misses++;
  BuiltModule m = build();
  maybe_dump(key, m.text);
  pjrt::Client& c = client();
  // The persistent cache is keyed by the text too, so a changed lowering
  // never reuses an old binary.
  const bool use_disk = disk_cache::enabled();
  disk_cache::Key disk_key{};
  pjrt::ExecutablePtr exe;
  if (use_disk) {
    disk_key = disk_cache::entry_key(c, key, m.text);
    exe = disk_cache::load(c, disk_key, m.outputs);
  }
  if (exe) {
    stats().disk_loads++;
  } else {
    auto t0 = std::chrono::steady_clock::now();
    exe = c.compile(m.text, m.outputs);
    auto dt = std::chrono::steady_clock::now() - t0;
    stats().compiles++;
    stats().compile_nanoseconds += std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count();
    if (use_disk) disk_cache::store(c, disk_key, *exe);
  }
  auto op = std::make_shared<CompiledOp>(CompiledOp{exe, m.outputs, m.donated_args, m.output_present, m.checks});
  trace::name_executable(op.get(), key);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto [it, fresh] = g_cache.try_emplace(key);
  if (fresh) {
    g_lru.push_front(key);
    it->second = CacheEntry{op, g_lru.begin()};
    evict_locked();
  } else {  // another thread compiled it meanwhile: keep one
    g_lru.splice(g_lru.begin(), g_lru, it->second.pos);
    return it->second.op;
  }
  return op;
}

size_t cache_capacity() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_capacity;
}

void set_cache_capacity(size_t n) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_capacity = std::max<size_t>(n, 1);
  evict_locked();
}

CompiledOp::~CompiledOp() { trace::forget_executable(this); }

size_t cache_size() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_cache.size();
}

void clear_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache.clear();
  g_lru.clear();
}

std::vector<BufferPtr> execute(const CompiledOp& op, const std::vector<pjrt::Buffer*>& args, int device) {
  return execute(op, args, device, op.donated_args);
}

std::vector<BufferPtr> execute(const CompiledOp& op, const std::vector<pjrt::Buffer*>& args, int device,
                               const std::vector<int>& donated) {
  stats().executions++;
  if (!trace::on()) return client().execute(*op.exe, args, device, donated, /*aliasing=*/!op.donated_args.empty());
  int64_t issued = trace::now_ns();
  auto out = client().execute(*op.exe, args, device, donated, /*aliasing=*/!op.donated_args.empty());
  trace::note(op, device, issued, trace::now_ns());
  return out;
}

BufferPtr upload(const void* data, const TensorType& type, int device, std::function<void()> on_done) {
  stats().host_to_device++;
  if (on_done) stats().host_to_device_async++;
  if (!trace::on()) return client().from_host(data, type, device, std::move(on_done));
  int64_t issued = trace::now_ns();
  BufferPtr b = client().from_host(data, type, device, std::move(on_done));
  trace::note_copy(true, static_cast<int64_t>(b->nbytes()), device, issued, trace::now_ns());
  return b;
}

namespace {
struct ScalarKey {
  uint64_t bits;
  int type, device;
  bool operator==(const ScalarKey& o) const { return bits == o.bits && type == o.type && device == o.device; }
};
struct ScalarHash {
  size_t operator()(const ScalarKey& k) const { return std::hash<uint64_t>()(k.bits) ^ (k.type * 131 + k.device); }
};
std::mutex g_scalar_mu;
std::unordered_map<ScalarKey, BufferPtr, ScalarHash> g_scalar_cache;
}  // namespace

size_t scalar_cache_size() {
  std::lock_guard<std::mutex> lock(g_scalar_mu);
  return g_scalar_cache.size();
}

BufferPtr upload_scalar(const void* bytes, ElemType type, int device) {
  using Key = ScalarKey;
  auto& mu = g_scalar_mu;
  auto& cache = g_scalar_cache;
  Key key{0, static_cast<int>(type), device};
  std::memcpy(&key.bits, bytes, shlo::byte_size(type));
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  BufferPtr b = upload(bytes, TensorType{type, {}}, device);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 4096) cache.clear();  // bounded: a loop over ever-new values must not grow memory
  cache.emplace(key, b);
  return b;
}

void download(const pjrt::Buffer& buffer, void* dst) {
  stats().device_to_host++;
  if (!trace::on()) {
    client().to_host(buffer, dst);
  } else {
    int64_t issued = trace::now_ns();
    client().to_host(buffer, dst);
    trace::note_copy(false, static_cast<int64_t>(buffer.nbytes()), buffer.device(), issued, trace::now_ns());
  }
  // A sync point: the device-side checks of every op issued so far are read.
  raise_pending_checks();
}

}  // namespace ttpu::runtime
