// See trace.h. What an executable runs is read from its cache key once, when
// it is compiled: a fused graph's key lists its ops one per line, each line
// starting with the op's name (the ATen name for table kernels, see
// aten/table_kernel.cpp; the runtime's own gathers/scatters/copies otherwise).
#include "runtime/trace.h"

#include <chrono>

#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <unordered_map>

#include "pjrt/last_execution.h"

namespace ttpu::runtime::trace {

namespace {

struct Info {
  std::shared_ptr<const std::string> body;  // op name, or "aten::mm x2, aten::relu, ..."
  int ops = 1;
  bool graph = false;
};

// Leaked on purpose: executables (which forget their names here when they
// die) may be destroyed during static destruction at exit.
std::mutex& g_mu = *new std::mutex;
std::unordered_map<const CompiledOp*, Info>& g_info =
    *new std::unordered_map<const CompiledOp*, Info>;  // every executable alive
std::map<std::string, std::shared_ptr<const std::string>> g_names;  // interned eager op names
std::vector<Execution> g_log;
CorrelationFn g_correlation = nullptr;

thread_local const char* t_op = nullptr;
thread_local bool t_compiled = false;

std::string op_name(const std::string& head) {
  return head.find("::") == std::string::npos ? "tpu::" + head : head;
}

Info info_from_key(const std::string& key) {
  Info info;
  const std::string graph = "graph|";
  if (key.compare(0, graph.size(), graph) != 0) {
    info.body = std::make_shared<const std::string>(op_name(key.substr(0, key.find('|'))));
    return info;
  }
  // One line per node: "<name>|<signature>(<inputs>)..."; the last line holds donations.
  std::vector<std::pair<std::string, int>> counts;  // first-seen order
  int ops = 0;
  size_t pos = graph.size();
  while (pos < key.size()) {
    size_t end = key.find('\n', pos);
    if (end == std::string::npos) end = key.size();
    size_t bar = key.find('|', pos);
    if (bar != std::string::npos && bar < end) {
      std::string name = op_name(key.substr(pos, bar - pos));
      ++ops;
      bool seen = false;
      for (auto& [n, c] : counts)
        if (n == name) seen = ++c;
      if (!seen) counts.emplace_back(name, 1);
    }
    pos = end + 1;
  }
  std::string body;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i == 12) {
      body += ", ...";
      break;
    }
    body += (i ? ", " : "") + counts[i].first;
    if (counts[i].second > 1) body += " x" + std::to_string(counts[i].second);
  }
  info.body = std::make_shared<const std::string>(body);
  info.ops = ops;
  info.graph = true;
  return info;
}

uint64_t thread_id() {
  thread_local uint64_t tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  return tid;
}

}  // namespace

void start(CorrelationFn correlation) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_log.clear();
  g_correlation = correlation;
  pjrt::keep_last_execution(true);
  on_flag().store(true);
}

std::vector<Execution> stop() {
  on_flag().store(false);
  pjrt::keep_last_execution(false);
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Execution> out;
  out.swap(g_log);
  return out;
}

void name_executable(const CompiledOp* op, const std::string& key) {
  Info info = info_from_key(key);
  std::lock_guard<std::mutex> lock(g_mu);
  g_info[op] = std::move(info);
}

void forget_executable(const CompiledOp* op) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_info.erase(op);
}

void note(const CompiledOp& op, int device, int64_t issued_ns, int64_t returned_ns) {
  Execution e;
  e.device = device;
  e.issued_ns = issued_ns;
  e.returned_ns = returned_ns;
  e.done_ns = pjrt::last_execution_done();
  e.thread = thread_id();
  std::lock_guard<std::mutex> lock(g_mu);
  if (!on()) return;
  e.correlation = g_correlation ? g_correlation() : 0;
  auto it = g_info.find(&op);
  Info info = it != g_info.end() ? it->second : Info{};
  e.kind = t_compiled ? "compiled graph" : (info.graph ? "graph" : "op");
  e.ops = info.ops;
  if (!info.graph && t_op) {
    auto& name = g_names[t_op];
    if (!name) name = std::make_shared<const std::string>(t_op);
    e.label = name;
  } else {
    e.label = info.body ? info.body : std::make_shared<const std::string>("tpu::executable");
  }
  g_log.push_back(std::move(e));
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void note_copy(bool to_device, int64_t bytes, int device, int64_t issued_ns, int64_t returned_ns) {
  static const auto htod = std::make_shared<const std::string>("HtoD");
  static const auto dtoh = std::make_shared<const std::string>("DtoH");
  Execution e;
  e.device = device;
  e.issued_ns = issued_ns;
  e.returned_ns = returned_ns;  // a transfer is complete when the call returns
  e.thread = thread_id();
  e.kind = "copy";
  e.ops = 0;
  e.bytes = bytes;
  e.label = to_device ? htod : dtoh;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!on()) return;
  e.correlation = g_correlation ? g_correlation() : 0;
  g_log.push_back(std::move(e));
}

OpScope::OpScope(const char* aten_name) : saved(t_op) { t_op = aten_name; }
OpScope::~OpScope() { t_op = saved; }
CompiledScope::CompiledScope() : saved(t_compiled) { t_compiled = true; }
CompiledScope::~CompiledScope() { t_compiled = saved; }

}  // namespace ttpu::runtime::trace
