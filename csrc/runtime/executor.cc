#include "runtime/executor.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/deferred.h"
#include "runtime/trace.h"

namespace ttpu::runtime {

namespace {

// Strict and Debug: one cached executable per signature, run now.
class EagerExecutor final : public Executor {
 public:
  const char* name() const override { return "eager"; }
  std::vector<BufferPtr> submit(const Submission& s) override {
    CompiledOpPtr op = get_or_compile(s.key, [&] {
      shlo::Builder b;
      std::vector<Value> ins;
      ins.reserve(s.inputs.size());
      for (const auto& in : s.inputs) ins.push_back(b.arg(in->type()));
      std::vector<Value> results = s.emit(b, ins);
      return BuiltModule{b.module(results), s.outputs, {}, {}};
    });
    std::vector<pjrt::Buffer*> raw;
    raw.reserve(s.inputs.size());
    for (const auto& in : s.inputs) raw.push_back(in.get());
    std::optional<trace::OpScope> traced;  // the profiler's device track names the execution
    if (s.label && trace::on()) traced.emplace(s.label);
    return execute(*op, raw, s.device);
  }
  void flush(const char*, bool) override {}  // nothing is held back
};

// DeferAndFuse: record into the calling thread's pending graph.
class DeferredExecutor final : public Executor {
 public:
  const char* name() const override { return "deferred"; }
  std::vector<BufferPtr> submit(const Submission& s) override {
    // The node key starts with the op's name: a graph's error messages and
    // the profiler's device track (trace.cc) list its ops by it.
    return record(s.device, s.label ? std::string(s.label) + "|" + s.key : s.key, s.inputs, s.outputs, s.emit);
  }
  void flush(const char* reason, bool all_threads) override {
    if (all_threads) flush_all(reason);
    else runtime::flush(reason);
  }
};

EagerExecutor g_eager;
DeferredExecutor g_deferred;
Executor* const g_all[] = {&g_eager, &g_deferred};

thread_local int t_fused_depth = 0;

}  // namespace

Executor& executor() {
  if (mode() == Mode::DeferAndFuse || t_fused_depth > 0) return g_deferred;
  return g_eager;
}

static bool fused_regions_on() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_TPU_FUSED_REGIONS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

FusedRegion::FusedRegion() : active_(mode() == Mode::Strict && fused_regions_on()) {
  if (active_) ++t_fused_depth;
}

void FusedRegion::close() {
  if (!active_) return;
  active_ = false;
  if (--t_fused_depth == 0) runtime::flush("fused region");
}

FusedRegion::~FusedRegion() {
  try {
    close();
  } catch (...) {
  }
}

void sync_thread(const char* reason) {
  for (Executor* e : g_all) e->flush(reason, false);
}

void sync_all(const char* reason) {
  for (Executor* e : g_all) e->flush(reason, true);
}

}  // namespace ttpu::runtime
