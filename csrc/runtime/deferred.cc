#include "runtime/deferred.h"

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>

namespace ttpu::runtime {

namespace {

constexpr size_t kMaxRecordedOps = 2000;  // flush threshold

struct Node {
  std::string key;
  EmitFn emit;
  // Each input is either an earlier node's result (by pending id) or a
  // concrete buffer (held until the graph runs).
  std::vector<uint64_t> input_ids;  // 0 = concrete
  std::vector<BufferPtr> concrete;  // parallel to input_ids
  std::vector<uint64_t> output_ids;
  std::vector<std::weak_ptr<pjrt::Buffer>> outputs;
  std::vector<TensorType> output_types;
};

std::recursive_mutex g_mu;
std::vector<Node> g_nodes;
int g_device = -1;
uint64_t g_next_id = 1;
DeferStats g_stats;
std::map<std::string, uint64_t> g_reasons;
bool g_flushing = false;
std::atomic<bool> g_inject_failure{false};

void run_graph(std::vector<Node>& nodes, const std::string& key, const std::vector<BufferPtr>& args,
               const std::vector<std::shared_ptr<pjrt::Buffer>>& live,
               const std::vector<std::pair<size_t, size_t>>& live_pos, int device);

void hook() { flush("a pending value was needed"); }

struct HookInstaller {
  HookInstaller() { pjrt::Buffer::materialize_hook = &hook; }
} g_hook_installer;

}  // namespace

std::vector<BufferPtr> record(int device, const std::string& key, const std::vector<BufferPtr>& inputs,
                              const std::vector<TensorType>& outputs, EmitFn emit) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  if (g_device >= 0 && g_device != device) flush("ops on another device");
  if (g_nodes.size() >= kMaxRecordedOps) flush("graph size threshold");
  g_device = device;
  Node n;
  n.key = key;
  n.emit = std::move(emit);
  for (const auto& in : inputs) {
    if (in->pending()) {
      n.input_ids.push_back(in->pending_id());
      n.concrete.push_back(nullptr);
    } else {
      n.input_ids.push_back(0);
      n.concrete.push_back(in);
    }
  }
  std::vector<BufferPtr> result;
  for (const auto& t : outputs) {
    uint64_t id = g_next_id++;
    auto b = std::make_shared<pjrt::Buffer>(id, t, device);
    n.output_ids.push_back(id);
    n.outputs.push_back(b);
    n.output_types.push_back(t);
    result.push_back(b);
  }
  g_nodes.push_back(std::move(n));
  g_stats.ops_recorded++;
  return result;
}

void flush(const char* reason) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  if (g_nodes.empty() || g_flushing) return;
  g_flushing = true;
  std::vector<Node> nodes;
  nodes.swap(g_nodes);
  int device = g_device;
  g_device = -1;
  struct Reset {
    ~Reset() { g_flushing = false; }
  } reset;

  // Pass 1: structure key, graph arguments and live results (no text).
  std::unordered_map<uint64_t, size_t> local;  // pending id -> position in the graph
  std::vector<BufferPtr> args;
  std::vector<std::shared_ptr<pjrt::Buffer>> live;
  std::vector<std::pair<size_t, size_t>> live_pos;  // (node, output)
  std::string key = "graph|";
  size_t position = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t k = 0; k < nodes[i].output_ids.size(); ++k) local[nodes[i].output_ids[k]] = position++;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    key += n.key;
    key += '(';
    for (size_t k = 0; k < n.input_ids.size(); ++k) {
      if (n.input_ids[k]) {
        key += 'v';
        key += std::to_string(local.at(n.input_ids[k]));
      } else {
        key += 'a';
        append_type(key, n.concrete[k]->type());
        args.push_back(n.concrete[k]);
      }
      key += ',';
    }
    key += ')';
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (auto b = n.outputs[k].lock()) {
        live.push_back(b);
        live_pos.push_back({i, k});
        key += 'L';
        key += std::to_string(k);
      }
    }
    key += '\n';
  }
  g_stats.graphs_executed++;
  g_stats.values_materialised += live.size();
  g_stats.values_dropped += position - live.size();
  g_reasons[reason]++;
  if (live.empty()) return;

  try {
    run_graph(nodes, key, args, live, live_pos, device);
  } catch (const pjrt::Error& e) {
    std::string ops;
    for (size_t i = 0; i < nodes.size() && i < 8; ++i) ops += (i ? ", " : "") + nodes[i].key.substr(0, nodes[i].key.find('|'));
    if (nodes.size() > 8) ops += ", ...";
    throw pjrt::Error(std::string(e.what()) + " [in a DeferAndFuse graph of " + std::to_string(nodes.size()) +
                          " ops: " + ops + "; run in EagerMode.DEBUG to find the failing op]",
                      e.code);
  }
}

namespace {
void run_graph(std::vector<Node>& nodes, const std::string& key, const std::vector<BufferPtr>& args,
               const std::vector<std::shared_ptr<pjrt::Buffer>>& live,
               const std::vector<std::pair<size_t, size_t>>& live_pos, int device) {
  if (g_inject_failure.load()) throw pjrt::Error("torch_tpu: injected graph failure (test hook)", 0);
  // Pass 2 (cache miss only): one module from every recorded lowering.
  auto compiled = get_or_compile(key, [&] {
    shlo::Builder b;
    std::vector<std::vector<Value>> results(nodes.size());
    std::unordered_map<uint64_t, Value> values;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      std::vector<Value> ins;
      for (size_t k = 0; k < n.input_ids.size(); ++k)
        ins.push_back(n.input_ids[k] ? values.at(n.input_ids[k]) : b.arg(n.concrete[k]->type()));
      std::vector<Value> outs = n.emit(b, ins);
      for (size_t k = 0; k < outs.size(); ++k) values.emplace(n.output_ids[k], outs[k]);
      results[i] = std::move(outs);
    }
    std::vector<Value> module_results;
    std::vector<TensorType> types;
    for (auto [i, k] : live_pos) {
      module_results.push_back(results[i][k]);
      types.push_back(nodes[i].output_types[k]);
    }
    return BuiltModule{b.module(module_results), types, {}, {}};
  });
  std::vector<pjrt::Buffer*> raw;
  for (auto& a : args) raw.push_back(a.get());
  std::vector<BufferPtr> produced = execute(*compiled, raw, device);
  for (size_t j = 0; j < live.size(); ++j) {
    live[j]->fulfill(produced[j]->raw());
    produced[j]->release();
  }
}
}  // namespace

void inject_graph_failure(bool on) { g_inject_failure.store(on); }

DeferStats defer_stats() {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  DeferStats s = g_stats;
  for (auto& [r, n] : g_reasons) s.flush_reasons.push_back({r, n});
  return s;
}

}  // namespace ttpu::runtime
