#include "runtime/disk_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <tuple>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ttpu::runtime::disk_cache {

// ===========================================================================
// SHA-256, written from the FIPS 180-4 description: 64-byte blocks, a message
// schedule of 64 words, eight working variables, big-endian length padding.
// ===========================================================================
namespace {

constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t kInitialHash[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256() { std::memcpy(h_, kInitialHash, sizeof(h_)); }

void Sha256::block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t t1 = h + big1 + choose + kRoundConstants[i] + w[i];
    uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = big0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += size;
  if (buf_len_) {
    size_t take = std::min(size, sizeof(buf_) - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    size -= take;
    if (buf_len_ < sizeof(buf_)) return;
    block(buf_);
    buf_len_ = 0;
  }
  for (; size >= 64; p += 64, size -= 64) block(p);
  std::memcpy(buf_, p, size);
  buf_len_ = size;
}

void Sha256::field(const std::string& s) {
  uint64_t n = s.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
  update(len, sizeof(len));
  update(s);
}

std::array<uint8_t, 32> Sha256::finish() {
  const uint64_t bits = total_ * 8;
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (buf_len_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
  update(len, 8);
  std::array<uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) out[4 * i + k] = uint8_t(h_[i] >> (24 - 8 * k));
  return out;
}

std::array<uint8_t, 32> sha256(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string to_hex(const std::array<uint8_t, 32>& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : digest) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// ===========================================================================
// The cache.
// ===========================================================================
namespace {

constexpr char kMagic[8] = {'T', 'T', 'P', 'U', 'X', 'E', 'C', '1'};
constexpr uint32_t kFormatVersion = 1;
// magic | format | header bytes | key | payload bytes | payload sha256
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 32 + 8 + 32;
constexpr const char* kSuffix = ".xc";
constexpr uint64_t kDefaultMaxBytes = 2ull << 30;
constexpr double kLowWater = 0.9;                 // eviction stops at this fraction of the bound
constexpr int64_t kStaleTempSeconds = 3600;       // leftovers of crashed writers

struct State {
  std::mutex mu;
  bool configured = false;
  bool enabled = false;
  std::string dir;
  uint64_t max_bytes = kDefaultMaxBytes;
  int supported = -1;
  std::string unsupported_reason;
  bool have_fingerprint = false;
  Key fingerprint{};
  bool dir_ready = false;
  bool scanned = false;
  uint64_t tracked_bytes = 0;  // this process's view of the directory size
  uint64_t hits = 0, misses = 0, writes = 0, corrupt = 0, errors = 0, evictions = 0;
  uint64_t load_ns = 0, write_ns = 0;
};

State& state() {
  static State s;
  return s;
}

std::string home_dir() {
  const char* h = std::getenv("HOME");
  if (h && *h) return h;
  return "/tmp";
}

void configure_locked(State& st) {
  if (st.configured) return;
  st.configured = true;
  const char* d = std::getenv("TORCH_TPU_CACHE_DIR");
  if (d) {
    std::string v(d);
    st.enabled = !(v.empty() || v == "0");
    st.dir = st.enabled ? v : "";
  } else {
    st.enabled = true;
    st.dir = home_dir() + "/.cache/torch_tpu/xla";
  }
  while (st.dir.size() > 1 && st.dir.back() == '/') st.dir.pop_back();
  if (const char* m = std::getenv("TORCH_TPU_CACHE_MAX_BYTES")) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(m, &end, 10);
    if (errno == 0 && end != m) {
      switch (*end) {  // optional K/M/G suffix (powers of 1024)
        case 'k': case 'K': v <<= 10; break;
        case 'm': case 'M': v <<= 20; break;
        case 'g': case 'G': v <<= 30; break;
        default: break;
      }
      st.max_bytes = v;
    }
  }
}

uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string file_identity(const std::string& path) {
  struct stat sb;
  if (path.empty() || ::stat(path.c_str(), &sb) != 0) return "missing:" + path;
  char real[PATH_MAX];
  std::string p = ::realpath(path.c_str(), real) ? std::string(real) : path;
  return p + "|" + std::to_string(static_cast<long long>(sb.st_size)) + "|" +
         std::to_string(static_cast<long long>(sb.st_mtim.tv_sec)) + "." +
         std::to_string(static_cast<long long>(sb.st_mtim.tv_nsec));
}

// Size and mtime of the shared object this code lives in (torch_tpu._C).
std::string own_build_id() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&own_build_id), &info) || !info.dli_fname) return "unknown";
  struct stat sb;
  if (::stat(info.dli_fname, &sb) != 0) return "unknown";
  return std::to_string(static_cast<long long>(sb.st_size)) + "|" +
         std::to_string(static_cast<long long>(sb.st_mtim.tv_sec)) + "." +
         std::to_string(static_cast<long long>(sb.st_mtim.tv_nsec));
}

// The host's instruction-set features: CPUID words on x86 (identical on every
// core, independent of the kernel's naming), /proc/cpuinfo elsewhere.
std::string cpu_features() {
  if (const char* o = std::getenv("TORCH_TPU_CACHE_TEST_CPU_FEATURES")) return std::string("test-override:") + o;
  std::string out;
  struct utsname u;
  if (uname(&u) == 0) out += std::string("machine=") + u.machine + "\n";
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  auto hex = [](unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08x", v);
    return std::string(buf);
  };
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13];
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    out += std::string("vendor=") + vendor + "\n";
  }
  // leaf 1: signature (family/model/stepping) and feature words; EBX holds
  // the APIC id of the calling core, so it is left out.
  if (__get_cpuid(1, &a, &b, &c, &d)) out += "1=" + hex(a) + "," + hex(c) + "," + hex(d) + "\n";
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    out += "7.0=" + hex(b) + "," + hex(c) + "," + hex(d) + "\n";
    __cpuid_count(7, 1, a, b, c, d);
    out += "7.1=" + hex(a) + "," + hex(b) + "," + hex(c) + "," + hex(d) + "\n";
  }
  if (max_leaf >= 0xd) {
    __cpuid_count(0xd, 1, a, b, c, d);
    out += "d.1=" + hex(a) + "\n";
  }
  if (__get_cpuid(0x80000001, &a, &b, &c, &d)) out += "e1=" + hex(c) + "," + hex(d) + "\n";
  // Which register states the OS enabled (AVX, AVX-512, AMX need it).
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    out += "xcr0=" + hex(hi) + hex(lo) + "\n";
  }
#else
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  bool seen = false;
  while (std::getline(f, line)) {
    if (line.empty()) {
      if (seen) break;
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k == "flags" || k == "Features" || k == "vendor_id" || k == "cpu family" || k == "model" ||
        k == "CPU implementer" || k == "CPU architecture" || k == "CPU variant" || k == "CPU part" ||
        k == "isa" || k == "cpu") {
      out += line + "\n";
      seen = true;
    }
  }
#endif
  return out;
}

// Everything about this process that can change a compiled binary.
Key compute_fingerprint(pjrt::Client& client) {
  Sha256 h;
  h.field("torch_tpu executable cache");
  h.field(std::to_string(kFormatVersion));
  h.field(file_identity(client.plugin_path()));
  h.field(std::to_string(client.api_major()) + "." + std::to_string(client.api_minor()));
  h.field(client.platform_name());
  auto guarded = [](auto fn) -> std::string {
    try {
      return fn();
    } catch (const std::exception& e) {
      return std::string("error:") + e.what();
    }
  };
  h.field(guarded([&] { return client.platform_version(); }));
  h.field(guarded([&] { return client.device_count() > 0 ? client.device_kind(0) : std::string("none"); }));
  h.field(guarded([&] { return client.plugin_attributes(); }));
  h.field(own_build_id());
  h.field(cpu_features());
  const char* xla_flags = std::getenv("XLA_FLAGS");
  h.field(xla_flags ? std::string("set:") + xla_flags : std::string("unset"));
  h.field(pjrt::Client::compile_options());
  return h.finish();
}

std::string entry_path(const State& st, const Key& key) { return st.dir + "/" + to_hex(key) + kSuffix; }

bool is_entry_name(const char* name) {
  size_t n = std::strlen(name);
  return n == 64 + 3 && std::strcmp(name + 64, kSuffix) == 0;
}

bool mkdirs(const std::string& dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat sb;
  return ::stat(dir.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

struct DirEntry {
  int64_t mtime_ns;
  uint64_t bytes;
  std::string name;
};

// Entries of the directory; stale temporary files are removed on the way.
std::vector<DirEntry> scan(const std::string& dir) {
  std::vector<DirEntry> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  const int64_t now_s = static_cast<int64_t>(::time(nullptr));
  while (dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    bool entry = is_entry_name(name);
    bool temp = name[0] == '.' && std::strstr(name, ".tmp.") != nullptr;
    if (!entry && !temp) continue;
    std::string path = dir + "/" + name;
    struct stat sb;
    if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (temp) {
      if (now_s - static_cast<int64_t>(sb.st_mtim.tv_sec) > kStaleTempSeconds) ::unlink(path.c_str());
      continue;
    }
    out.push_back({static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec,
                   static_cast<uint64_t>(sb.st_size), name});
  }
  ::closedir(d);
  return out;
}

// Deletes least recently used entries until the directory is under the low
// water mark; `keep` (the entry just written) is never chosen.
void evict_locked(State& st, const std::string& keep) {
  auto entries = scan(st.dir);
  uint64_t total = 0;
  for (auto& e : entries) total += e.bytes;
  if (total > st.max_bytes) {
    std::sort(entries.begin(), entries.end(), [](const DirEntry& x, const DirEntry& y) {
      return std::tie(x.mtime_ns, x.name) < std::tie(y.mtime_ns, y.name);
    });
    const uint64_t target = static_cast<uint64_t>(static_cast<double>(st.max_bytes) * kLowWater);
    for (auto& e : entries) {
      if (total <= target) break;
      if (e.name == keep) continue;
      if (::unlink((st.dir + "/" + e.name).c_str()) == 0 || errno == ENOENT) {
        total -= e.bytes;
        st.evictions++;
      }
    }
  }
  st.tracked_bytes = total;
  st.scanned = true;
}

bool read_all(int fd, std::string& out, size_t size) {
  out.resize(size);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, &out[got], size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, const char* p, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>(v >> (8 * i));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>(v >> (8 * i));
}
uint64_t get_le(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Checks a whole entry file; on success `payload` holds the executable bytes.
bool valid_entry(const std::string& file, const Key& key, std::string& payload) {
  if (file.size() < kHeaderBytes) return false;
  const char* p = file.data();
  if (std::memcmp(p, kMagic, 8) != 0) return false;
  if (get_le(p + 8, 4) != kFormatVersion || get_le(p + 12, 4) != kHeaderBytes) return false;
  if (std::memcmp(p + 16, key.data(), 32) != 0) return false;
  uint64_t len = get_le(p + 48, 8);
  if (len == 0 || len != file.size() - kHeaderBytes) return false;
  auto sum = sha256(p + kHeaderBytes, len);
  if (std::memcmp(p + 56, sum.data(), 32) != 0) return false;
  payload.assign(p + kHeaderBytes, len);
  return true;
}

void learn_support_locked(State& st, pjrt::Client& client) {
  if (st.supported != -1) return;
  if (client.has_serialization()) {
    st.supported = 1;
  } else {
    st.supported = 0;
    st.unsupported_reason =
        "the PJRT plugin's API table has no PJRT_Executable_Serialize / PJRT_Executable_DeserializeAndLoad";
  }
}

}  // namespace

bool enabled() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  configure_locked(st);
  return st.enabled;
}

Key entry_key(pjrt::Client& client, const std::string& memory_key, const std::string& text) {
  State& st = state();
  Key fp;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.have_fingerprint) {
      st.fingerprint = compute_fingerprint(client);
      st.have_fingerprint = true;
    }
    fp = st.fingerprint;
  }
  Sha256 h;
  h.update(fp.data(), fp.size());
  h.field(memory_key);
  h.field(text);
  return h.finish();
}

pjrt::ExecutablePtr load(pjrt::Client& client, const Key& key, std::vector<shlo::TensorType> outputs) {
  State& st = state();
  std::string path;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    configure_locked(st);
    if (!st.enabled) return nullptr;
    learn_support_locked(st, client);
    if (st.supported == 0) {
      st.misses++;
      return nullptr;
    }
    path = entry_path(st, key);
  }
  const uint64_t t0 = now_ns();
  auto fail = [&](bool corrupt, bool io_error) -> pjrt::ExecutablePtr {
    std::lock_guard<std::mutex> lock(st.mu);
    st.misses++;
    if (corrupt) st.corrupt++;
    if (io_error) st.errors++;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(false, errno != ENOENT);
  struct stat sb;
  std::string file;
  bool ok = ::fstat(fd, &sb) == 0 && read_all(fd, file, static_cast<size_t>(sb.st_size));
  if (ok) ::futimens(fd, nullptr);  // a hit makes the entry the most recently used
  ::close(fd);
  std::string payload;
  if (!ok || !valid_entry(file, key, payload)) {
    ::unlink(path.c_str());
    return fail(true, false);
  }
  file.clear();
  file.shrink_to_fit();
  pjrt::ExecutablePtr exe;
  try {
    exe = client.deserialize(payload, std::move(outputs));
  } catch (const std::exception&) {
    ::unlink(path.c_str());  // checksummed but refused: rebuilt by the caller
    return fail(false, true);
  }
  std::lock_guard<std::mutex> lock(st.mu);
  st.hits++;
  st.load_ns += now_ns() - t0;
  return exe;
}

void store(pjrt::Client& client, const Key& key, const pjrt::Executable& exe) {
  State& st = state();
  std::string dir, path;
  uint64_t max_bytes;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    configure_locked(st);
    if (!st.enabled) return;
    learn_support_locked(st, client);
    if (st.supported == 0) return;
    if (!st.dir_ready) {
      if (!mkdirs(st.dir)) {
        st.errors++;
        return;
      }
      st.dir_ready = true;
    }
    dir = st.dir;
    path = entry_path(st, key);
    max_bytes = st.max_bytes;
  }
  const uint64_t t0 = now_ns();
  std::string payload;
  try {
    payload = client.serialize(exe);
  } catch (const pjrt::Error& e) {
    std::lock_guard<std::mutex> lock(st.mu);
    if (e.code == 12 /* UNIMPLEMENTED */) {
      st.supported = 0;
      st.unsupported_reason = e.what();
    } else {
      st.errors++;
    }
    return;
  } catch (const std::exception&) {
    std::lock_guard<std::mutex> lock(st.mu);
    st.errors++;
    return;
  }
  if (payload.empty()) {
    std::lock_guard<std::mutex> lock(st.mu);
    st.errors++;
    return;
  }
  if (payload.size() + kHeaderBytes > max_bytes) return;  // could never fit: not written

  std::string header;
  header.reserve(kHeaderBytes);
  header.append(kMagic, 8);
  put_u32(header, kFormatVersion);
  put_u32(header, static_cast<uint32_t>(kHeaderBytes));
  header.append(reinterpret_cast<const char*>(key.data()), 32);
  put_u64(header, payload.size());
  auto sum = sha256(payload.data(), payload.size());
  header.append(reinterpret_cast<const char*>(sum.data()), 32);

  static std::atomic<uint64_t> counter{0};
  const std::string hex = to_hex(key);
  const std::string tmp = dir + "/." + hex + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  ok = ok && write_all(fd, header.data(), header.size()) && write_all(fd, payload.data(), payload.size());
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    std::lock_guard<std::mutex> lock(st.mu);
    st.errors++;
    return;
  }
  std::lock_guard<std::mutex> lock(st.mu);
  st.writes++;
  st.write_ns += now_ns() - t0;
  if (!st.scanned) {
    evict_locked(st, hex + kSuffix);  // first write of this process: learn the directory size
  } else {
    st.tracked_bytes += header.size() + payload.size();
    if (st.tracked_bytes > st.max_bytes) evict_locked(st, hex + kSuffix);
  }
}

Stats stats() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  configure_locked(st);
  Stats s;
  s.enabled = st.enabled;
  s.supported = st.supported;
  s.unsupported_reason = st.unsupported_reason;
  s.dir = st.dir;
  s.max_bytes = st.max_bytes;
  s.hits = st.hits;
  s.misses = st.misses;
  s.writes = st.writes;
  s.corrupt = st.corrupt;
  s.errors = st.errors;
  s.evictions = st.evictions;
  s.load_seconds = static_cast<double>(st.load_ns) / 1e9;
  s.write_seconds = static_cast<double>(st.write_ns) / 1e9;
  if (st.have_fingerprint) s.fingerprint = to_hex(st.fingerprint);
  if (st.enabled) {
    for (auto& e : scan(st.dir)) {
      s.bytes += e.bytes;
      s.entries++;
    }
  }
  return s;
}

}  // namespace ttpu::runtime::disk_cache
