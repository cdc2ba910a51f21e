// Persistent on-disk cache of compiled executables, shared by every process
// that uses the same plugin build on the same kind of host.
//
// Every executable the runtime compiles (eager ops, fused DeferAndFuse graphs)
// passes through runtime::get_or_compile. On an in-memory miss the module text
// is built anyway, so the disk key covers it: an entry is found by
//
//   sha256( environment fingerprint, in-memory key, StableHLO text )
//
// where the environment fingerprint (computed once per process) is a sha256
// over the cache format, the plugin file (path, size, mtime), its PJRT API
// version, platform name/version, device kind and plugin attributes, our own
// _C build (size and mtime of the loaded shared object), the host CPU's
// instruction-set features, XLA_FLAGS and the compile-options bytes. Anything
// that could change the binary changes the key, so an entry written under
// another plugin or on another CPU is simply never looked up.
//
// One file per entry, `<dir>/<64 hex digits>.xc`:
//   magic "TTPUXEC1" | u32 format | u32 header bytes | 32-byte key |
//   u64 payload bytes | 32-byte sha256 of the payload | payload
// written to a temporary file and renamed into place (never half-visible).
// A file whose header, length or checksum does not match is counted as
// corrupt, deleted and rebuilt; one the plugin refuses to load is counted as
// an error, deleted and rebuilt. Nothing here throws into the caller.
//
// Environment (read once, at first use):
//   TORCH_TPU_CACHE_DIR        directory; default ~/.cache/torch_tpu/xla;
//                              empty or "0" disables the cache
//   TORCH_TPU_CACHE_MAX_BYTES  size bound (default 2 GiB); when a write takes
//                              the directory over it, least recently used
//                              entries (by mtime; a hit touches its file) are
//                              deleted until it is back under 90% of it
//   TORCH_TPU_CACHE_TEST_CPU_FEATURES  test hook: replaces the CPU-feature
//                              part of the fingerprint
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "pjrt/client.h"

namespace ttpu::runtime::disk_cache {

// ---- SHA-256 (FIPS 180-4), our own implementation --------------------------
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(const std::string& s) { update(s.data(), s.size()); }
  // Length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
  void field(const std::string& s);
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};
std::array<uint8_t, 32> sha256(const void* data, size_t size);
std::string to_hex(const std::array<uint8_t, 32>& digest);

// ---- The cache ------------------------------------------------------------

using Key = std::array<uint8_t, 32>;

// Whether the cache is on (environment; the plugin's support is learnt at the
// first lookup). Cheap after the first call.
bool enabled();

// Disk key of a module; `client` supplies the plugin part of the fingerprint.
Key entry_key(pjrt::Client& client, const std::string& memory_key, const std::string& text);

// The executable stored under `key`, or null (miss, disabled, unsupported,
// corrupt or refused entries: counted, and bad files deleted).
pjrt::ExecutablePtr load(pjrt::Client& client, const Key& key, std::vector<shlo::TensorType> outputs);

// Serialises `exe` and writes it under `key`; evicts old entries when the
// directory grows past the bound. Failures are counted, never raised.
void store(pjrt::Client& client, const Key& key, const pjrt::Executable& exe);

struct Stats {
  bool enabled = false;
  int supported = -1;  // plugin can serialise: 1 yes, 0 no, -1 not known yet
  std::string unsupported_reason;
  std::string dir;
  uint64_t max_bytes = 0;
  uint64_t hits = 0;        // executables loaded from disk
  uint64_t misses = 0;      // lookups that found no usable entry
  uint64_t writes = 0;      // entries written
  uint64_t corrupt = 0;     // entries with a bad header/length/checksum (deleted)
  uint64_t errors = 0;      // I/O, serialise or deserialise failures
  uint64_t evictions = 0;   // entries deleted by the size bound
  uint64_t bytes = 0;       // bytes of entries in the directory now
  uint64_t entries = 0;     // entries in the directory now
  double load_seconds = 0;  // reading + deserialising hits
  double write_seconds = 0; // serialising + writing
  std::string fingerprint;  // hex of the environment fingerprint ("" before first use)
};
// Counters of this process; bytes/entries are a fresh scan of the directory.
Stats stats();

}  // namespace ttpu::runtime::disk_cache
