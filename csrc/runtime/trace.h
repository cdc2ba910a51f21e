// The device track of PyTorch's profiler (aten/profiler.cpp reads it): while
// a trace is on, every execution runtime::execute issues is noted with what
// it runs (the ATen op of an eager executable, the ATen ops of a fused or
// compiled graph), when the host issued it, the profiler's id of the op that
// was running on the issuing thread, and the slot PJRT's completion callback
// stamps (pjrt/last_execution.h). Off, it costs one relaxed load per
// execution. Torch-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ttpu::runtime {
struct CompiledOp;
}

namespace ttpu::runtime::trace {

struct Execution {
  int device = 0;
  uint64_t correlation = 0;  // the profiler's id of the op that issued it (0: none)
  uint64_t thread = 0;       // issuing thread (pthread id)
  int64_t issued_ns = 0;     // steady clock, when Execute was called ...
  int64_t returned_ns = 0;   // ... and when it returned
  std::shared_ptr<std::atomic<int64_t>> done_ns;  // completion stamp (0 until complete; null: complete on return)
  std::shared_ptr<const std::string> label;  // "aten::mm", or the ops of a graph
  // "op" (eager executable), "graph" (DeferAndFuse), "compiled graph" (replay),
  // "copy" (a host -> device or device -> host transfer, label "HtoD"/"DtoH")
  const char* kind = "op";
  int ops = 1;              // ATen ops it runs
  int64_t bytes = 0;        // a copy's size
};

// The profiler's current op id on the calling thread.
using CorrelationFn = uint64_t (*)();

void start(CorrelationFn correlation);
// Stops noting; returns what was noted, in issue order.
std::vector<Execution> stop();
inline std::atomic<bool>& on_flag() {
  static std::atomic<bool> on{false};
  return on;
}
inline bool on() { return on_flag().load(std::memory_order_relaxed); }

// Called by runtime::execute around the PJRT call while on().
void note(const CompiledOp& op, int device, int64_t issued_ns, int64_t returned_ns);
// Called by runtime::upload/download around the transfer while on().
void note_copy(bool to_device, int64_t bytes, int device, int64_t issued_ns, int64_t returned_ns);
int64_t now_ns();  // the steady clock the track uses
// Called on every compile (a miss): remembers what the executable runs, from its cache key.
void name_executable(const CompiledOp* op, const std::string& key);
void forget_executable(const CompiledOp* op);  // when it is destroyed

// The ATen op an eager kernel is running on this thread (names its executions).
struct OpScope {
  explicit OpScope(const char* aten_name);
  ~OpScope();
  const char* saved;
};
// Executions issued in this scope run a compiled graph (torch.compile replay).
struct CompiledScope {
  CompiledScope();
  ~CompiledScope();
  bool saved;
};

}  // namespace ttpu::runtime::trace
