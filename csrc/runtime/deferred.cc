#include "runtime/deferred.h"

#include <algorithm>
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
  std::vector<int> arg_index;       // graph argument of each concrete input (set at flush)
  std::vector<uint64_t> output_ids;
  std::vector<std::weak_ptr<PendingValue>> outputs;
  std::vector<TensorType> output_types;
};

// One graph per owner (see set_owner_function); one lock for all of them.
struct Graph {
  std::vector<Node> nodes;
  int device = -1;
  bool flushing = false;
};
std::recursive_mutex g_mu;
std::unordered_map<uint64_t, Graph> g_graphs;
uint64_t g_next_id = 1;

uint64_t thread_owner() {
  static std::atomic<uint64_t> next{1ull << 62};
  thread_local uint64_t id = next++;
  return id;
}
std::atomic<uint64_t (*)()> g_owner_fn{&thread_owner};
uint64_t current_owner() { return g_owner_fn.load(std::memory_order_relaxed)(); }
DeferStats g_stats;
std::map<std::string, uint64_t> g_reasons;
std::atomic<bool> g_inject_failure{false};
bool g_capture_armed = false;
uint64_t g_capture_owner = 0;
int g_captured_graphs = 0;
std::shared_ptr<CapturedGraph> g_capture;

CompiledOpPtr run_graph(std::vector<Node>& nodes, const std::string& key, const std::vector<BufferPtr>& args,
                        const std::vector<std::shared_ptr<PendingValue>>& live,
                        const std::vector<std::pair<size_t, size_t>>& live_pos,
                        const std::vector<int>& donated_for_result, const std::vector<int>& donated_args, int device);

void flush_owner(uint64_t owner, const char* reason);

}  // namespace

abi::PJRT_Buffer* PendingValue::raw() const {
  if (id_) flush_owner(owner_, "a pending value was needed");
  if (id_)
    throw pjrt::Error("torch_tpu: this tensor's value comes from a deferred graph that failed to run (see the error "
                      "raised at the sync point)", 0);
  return handle();
}

void set_owner_function(uint64_t (*owner)()) { g_owner_fn.store(owner ? owner : &thread_owner); }

std::vector<BufferPtr> record(int device, const std::string& key, const std::vector<BufferPtr>& inputs,
                              const std::vector<TensorType>& outputs, EmitFn emit) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  const uint64_t owner = current_owner();
  // A value pending in another owner's graph is materialised first: graphs
  // never reference each other's values.
  for (const auto& in : inputs)
    if (PendingValue* p = pending(in.get()); p && p->owner() != owner)
      flush_owner(p->owner(), "a value recorded by another thread");
  if (auto it = g_graphs.find(owner); it != g_graphs.end()) {
    if (it->second.device >= 0 && it->second.device != device) flush_owner(owner, "ops on another device");
    else if (it->second.nodes.size() >= kMaxRecordedOps) flush_owner(owner, "graph size threshold");
  }
  // Only now: a flush erases the owner's emptied graph, so a reference taken
  // before it would dangle (the op was then recorded into freed memory, and
  // the 2001st op of a chain failed at the sync with "unordered_map::at").
  Graph& g = g_graphs[owner];
  g.device = device;
  Node n;
  n.key = key;
  n.emit = std::move(emit);
  for (const auto& in : inputs) {
    if (PendingValue* p = pending(in.get())) {
      n.input_ids.push_back(p->id());
      n.concrete.push_back(nullptr);
    } else {
      n.input_ids.push_back(0);
      n.concrete.push_back(in);
    }
  }
  std::vector<BufferPtr> result;
  for (const auto& t : outputs) {
    uint64_t id = g_next_id++;
    auto b = std::make_shared<PendingValue>(id, owner, t, device);
    n.output_ids.push_back(id);
    n.outputs.push_back(b);
    n.output_types.push_back(t);
    result.push_back(b);
  }
  g.nodes.push_back(std::move(n));
  g_stats.ops_recorded++;
  return result;
}

void flush(const char* reason) { flush_owner(current_owner(), reason); }

void flush_all(const char* reason) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  std::vector<uint64_t> owners;
  for (const auto& [owner, g] : g_graphs)
    if (!g.nodes.empty()) owners.push_back(owner);
  for (uint64_t owner : owners) flush_owner(owner, reason);
}

namespace {
void flush_owner(uint64_t owner, const char* reason) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  auto found = g_graphs.find(owner);
  if (found == g_graphs.end() || found->second.nodes.empty() || found->second.flushing) return;
  Graph& g = found->second;
  g.flushing = true;
  std::vector<Node> nodes;
  nodes.swap(g.nodes);
  int device = g.device;
  g.device = -1;
  struct Reset {
    uint64_t owner;
    ~Reset() {
      // A thread that stopped recording leaves no graph behind.
      auto it = g_graphs.find(owner);
      if (it == g_graphs.end()) return;
      it->second.flushing = false;
      if (it->second.nodes.empty()) g_graphs.erase(it);
    }
  } reset{owner};
  const bool capturing = g_capture_armed && owner == g_capture_owner;

  // Pass 1: structure key, graph arguments (each buffer once) and live
  // results (no text).
  std::unordered_map<uint64_t, size_t> local;  // pending id -> position in the graph
  std::unordered_map<const pjrt::Buffer*, int> arg_of;
  std::unordered_map<const pjrt::Buffer*, long> graph_refs;  // references held by the recorded nodes
  std::vector<BufferPtr> args;
  std::vector<std::shared_ptr<PendingValue>> live;
  std::vector<std::pair<size_t, size_t>> live_pos;  // (node, output)
  std::string key = "graph|";
  size_t position = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t k = 0; k < nodes[i].output_ids.size(); ++k) local[nodes[i].output_ids[k]] = position++;
    for (const auto& c : nodes[i].concrete)
      if (c) graph_refs[c.get()]++;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    key += n.key;
    key += '(';
    n.arg_index.assign(n.input_ids.size(), -1);
    for (size_t k = 0; k < n.input_ids.size(); ++k) {
      if (n.input_ids[k]) {
        key += 'v';
        key += std::to_string(local.at(n.input_ids[k]));
      } else {
        auto [it, fresh] = arg_of.emplace(n.concrete[k].get(), static_cast<int>(args.size()));
        if (fresh) args.push_back(n.concrete[k]);
        n.arg_index[k] = it->second;
        key += 'a';
        key += std::to_string(it->second);
        key += ':';
        append_type(key, n.concrete[k]->type());
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
  // Donation: an argument only the recorded nodes (and `args`) still hold is
  // dead after the graph, so its memory may become a result of the same type
  // (a parameter or optimizer state updated in place reuses its buffer).
  // An argument is first paired with the result that replaces it in its
  // storage: any other same-typed result would overwrite it while later ops
  // still read it, and XLA would copy it first.
  std::vector<int> donated_for_result(live.size(), -1);
  std::vector<int> donated_args;
  std::vector<bool> dead(args.size());
  for (size_t a = 0; a < args.size(); ++a)
    dead[a] = !pending(args[a].get()) && args[a].use_count() == graph_refs[args[a].get()] + 1;
  auto donate = [&](size_t a, size_t r) {
    donated_for_result[r] = static_cast<int>(a);
    donated_args.push_back(static_cast<int>(a));
    dead[a] = false;
    key += 'D' + std::to_string(a) + '>' + std::to_string(r) + ';';
  };
  auto fits = [&](size_t a, size_t r) {
    return donated_for_result[r] < 0 && live[r]->type() == args[a]->type();
  };
  std::unordered_map<const pjrt::Buffer*, size_t> replacing;  // old buffer -> live result
  for (size_t r = 0; r < live.size(); ++r)
    if (live[r]->replaces()) replacing.emplace(live[r]->replaces(), r);
  for (size_t a = 0; a < args.size(); ++a) {
    auto it = replacing.find(args[a].get());
    if (dead[a] && it != replacing.end() && fits(a, it->second)) donate(a, it->second);
  }
  for (size_t a = 0; a < args.size(); ++a)
    for (size_t r = 0; r < live.size() && dead[a]; ++r)
      if (fits(a, r)) donate(a, r);
  std::sort(donated_args.begin(), donated_args.end());
  g_stats.graphs_executed++;
  g_stats.values_materialised += live.size();
  g_stats.values_dropped += position - live.size();
  g_stats.args_donated += donated_args.size();
  g_reasons[reason]++;
  if (capturing) ++g_captured_graphs;
  if (live.empty()) return;

  try {
    CompiledOpPtr compiled = run_graph(nodes, key, args, live, live_pos, donated_for_result, donated_args, device);
    if (capturing) g_capture = std::make_shared<CapturedGraph>(CapturedGraph{compiled, args, std::vector<BufferPtr>(live.begin(), live.end())});
  } catch (const pjrt::Error& e) {
    std::string ops;
    for (size_t i = 0; i < nodes.size() && i < 8; ++i) ops += (i ? ", " : "") + nodes[i].key.substr(0, nodes[i].key.find('|'));
    if (nodes.size() > 8) ops += ", ...";
    throw pjrt::Error(std::string(e.what()) + " [in a DeferAndFuse graph (or a Strict fused region: foreach ops, fused optimizers) of " + std::to_string(nodes.size()) +
                          " ops: " + ops + "; run in EagerMode.DEBUG to find the failing op]",
                      e.code);
  }
}

CompiledOpPtr run_graph(std::vector<Node>& nodes, const std::string& key, const std::vector<BufferPtr>& args,
                        const std::vector<std::shared_ptr<PendingValue>>& live,
                        const std::vector<std::pair<size_t, size_t>>& live_pos,
                        const std::vector<int>& donated_for_result, const std::vector<int>& donated_args, int device) {
  if (g_inject_failure.load()) throw pjrt::Error("torch_tpu: injected graph failure (test hook)", 0);
  // Pass 2 (cache miss only): one module from every recorded lowering.
  auto compiled = get_or_compile(key, [&] {
    shlo::Builder b;
    std::vector<Value> arg_values;
    for (const auto& a : args) arg_values.push_back(b.arg(a->type()));
    std::vector<std::vector<Value>> results(nodes.size());
    std::unordered_map<uint64_t, Value> values;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      std::vector<Value> ins;
      for (size_t k = 0; k < n.input_ids.size(); ++k)
        ins.push_back(n.input_ids[k] ? values.at(n.input_ids[k]) : arg_values.at(n.arg_index[k]));
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
    return BuiltModule{b.module(module_results, donated_for_result), types, donated_args, {}};
  });
  std::vector<pjrt::Buffer*> raw;
  for (auto& a : args) raw.push_back(a.get());
  std::vector<BufferPtr> produced = execute(*compiled, raw, device);
  for (size_t j = 0; j < live.size(); ++j) {
    live[j]->fulfill(produced[j]->raw());
    produced[j]->release();
  }
  return compiled;
}
}  // namespace

void arm_capture() {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  g_capture_armed = true;
  g_capture_owner = current_owner();
  g_captured_graphs = 0;
  g_capture.reset();
}

std::shared_ptr<CapturedGraph> take_capture() {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  g_capture_armed = false;
  auto c = std::move(g_capture);
  g_capture.reset();
  return g_captured_graphs == 1 ? c : nullptr;
}

void inject_graph_failure(bool on) { g_inject_failure.store(on); }

DeferStats defer_stats() {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  DeferStats s = g_stats;
  for (auto& [r, n] : g_reasons) s.flush_reasons.push_back({r, n});
  return s;
}

}  // namespace ttpu::runtime
