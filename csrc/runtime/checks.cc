#include "runtime/checks.h"

#include <mutex>
#include <vector>

namespace ttpu::runtime {

namespace {

struct Pending {
  BufferPtr flag;
  ops::CheckSpec spec;
  std::string op;
};

std::mutex g_mutex;
std::vector<Pending> g_pending;

// A long run of async work between sync points keeps only this many flags:
// then they are read (which waits for the ops that produced them).
constexpr size_t kMaxPending = 256;

std::string format(const Pending& p, int64_t value) {
  std::string msg = p.spec.message;
  auto at = p.spec.with_value ? msg.find("{}") : std::string::npos;
  if (at != std::string::npos) msg.replace(at, 2, std::to_string(value));
  const char* when = mode() == Mode::Debug ? "at the op (Debug mode)"
                                           : "at the first sync point after it (TORCH_TPU_LAUNCH_BLOCKING=1 raises "
                                             "at the op itself)";
  return msg + " [torch_tpu: device-side check of " + p.op + ", reported " + when + "]";
}

}  // namespace

void add_check(BufferPtr flag, const ops::CheckSpec& spec, const std::string& op) {
  bool full;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_pending.push_back({std::move(flag), spec, op});
    full = g_pending.size() >= kMaxPending;
  }
  if (full || mode() == Mode::Debug) raise_pending_checks();
}

void raise_pending_checks() {
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_pending.empty()) return;
    pending.swap(g_pending);
  }
  for (const Pending& p : pending) {
    int64_t value = 0;
    client().to_host(*p.flag, &value);
    if (value != ops::kCheckPassed) throw DeviceAssertError(format(p, value), p.spec.index_error);
  }
}

size_t pending_checks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_pending.size();
}

bool find_pending_check(const pjrt::Buffer* flag, ops::CheckSpec* spec, std::string* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Pending& p : g_pending) {
    if (p.flag.get() != flag) continue;
    *spec = p.spec;
    *op = p.op;
    return true;
  }
  return false;
}

}  // namespace ttpu::runtime
