// DeferAndFuse: ops are recorded instead of run; at a sync point the pending
// graph becomes one StableHLO module (cached by its structure, so a training
// loop compiles its step once), is compiled and executed. Values that nothing
// references any more when the graph runs are never materialised.
//
// Sync points: anything that needs a pending buffer's data (Buffer::raw():
// device-to-host copies, .item(), ops that still run eagerly such as view
// gathers), synchronize(), leaving the mode, and a graph-size threshold.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/runtime.h"

namespace ttpu::runtime {

// A recorded op's result: a device buffer whose handle exists once the
// graph that produces it has run. Asking for the handle (raw()) runs that
// graph first, so every use that needs real data is a sync point by
// construction.
class PendingValue final : public pjrt::Buffer {
 public:
  PendingValue(uint64_t id, uint64_t owner, TensorType type, int device)
      : pjrt::Buffer(std::move(type), device), id_(id), owner_(owner) {}
  abi::PJRT_Buffer* raw() const override;
  bool pending() const { return id_ != 0; }
  uint64_t id() const { return id_; }
  uint64_t owner() const { return owner_; }  // whose recorded graph produces it
  // The concrete buffer this value will replace in its storage (the
  // parameter an optimizer updates in place): donation pairs them, so the
  // graph writes the new value over the old one without copying it first.
  // Only compared, never dereferenced.
  const pjrt::Buffer* replaces() const { return replaces_; }
  void set_replaces(const pjrt::Buffer* old) { replaces_ = old; }
  // The graph ran: this value now owns `raw`.
  void fulfill(abi::PJRT_Buffer* raw) {
    adopt(raw);
    id_ = 0;
  }

 private:
  uint64_t id_;
  uint64_t owner_;
  const pjrt::Buffer* replaces_ = nullptr;
};

// The value `b` is while its graph has not run; null for a concrete buffer.
inline PendingValue* pending(const pjrt::Buffer* b) {
  if (!b || !b->lazy()) return nullptr;
  auto* p = dynamic_cast<PendingValue*>(const_cast<pjrt::Buffer*>(b));
  return p && p->pending() ? p : nullptr;
}

// Records one op (the DeferAndFuse executor, executor.h, calls this). `key` identifies the op's signature (as in the eager
// cache); returns pending buffers of `outputs` types on `device`.
std::vector<BufferPtr> record(int device, const std::string& key, const std::vector<BufferPtr>& inputs,
                              const std::vector<TensorType>& outputs, EmitFn emit);

// Every logical thread records into its own graph, so threads that use the
// device at once never mix their ops (each keeps its own cached structure).
// The owner of the calling thread's graph comes from this function; the aten
// layer sets it to an id that follows PyTorch's thread-local state, so the
// autograd engine's device thread records a backward pass into the graph of
// the thread that called backward(). Default: one owner per OS thread.
void set_owner_function(uint64_t (*owner)());

// Runs what the calling thread's owner recorded so far (no-op when nothing is pending).
void flush(const char* reason);
// Runs every owner's graph (synchronize, leaving the mode).
void flush_all(const char* reason);

struct DeferStats {
  uint64_t graphs_executed = 0;
  uint64_t ops_recorded = 0;
  uint64_t values_materialised = 0;
  uint64_t values_dropped = 0;  // recorded results nobody referenced at the sync
  uint64_t args_donated = 0;    // dead input buffers whose memory became a result
  std::vector<std::pair<std::string, uint64_t>> flush_reasons;
};
DeferStats defer_stats();

// Capture for replay (compiled graphs): while armed, the graph that a flush
// runs is kept (its executable, arguments and results) so that a caller can
// run the same executable again on new argument buffers without recording.
// More than one flush while armed makes the capture invalid.
struct CapturedGraph {
  CompiledOpPtr compiled;
  std::vector<BufferPtr> args;                       // graph arguments, in order
  std::vector<std::shared_ptr<pjrt::Buffer>> results;  // its results, in order
};
void arm_capture();
// Disarms; the graph flushed while armed, or null (none, or more than one).
std::shared_ptr<CapturedGraph> take_capture();

// Test hook: the next graphs fail to run, to exercise error attribution.
void inject_graph_failure(bool on);

}  // namespace ttpu::runtime
