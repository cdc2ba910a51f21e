// How device work runs: the one seam between the layers that lower ops
// (aten kernels, storage reads and writes) and the strategies that run them.
//
// Every op is submitted the same way: a signature key, its input buffers, its
// result types and an emitter (the op's lowering into a StableHLO builder).
// The executor of the current mode decides what happens to it:
//   - eager (Strict, Debug): the emitter becomes one executable, cached by
//     the key (in memory and on disk), which runs now, asynchronously;
//   - deferred (DeferAndFuse): the op joins the calling thread's pending
//     graph and its results are PendingValues (deferred.h), produced when the
//     graph runs at the next sync point.
// Callers never branch on the mode; a new strategy (a stream-ordered or a
// multi-device executor) is one more implementation of this interface.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace ttpu::runtime {

// Emits one op into `b` given its input values; returns its results.
using EmitFn = std::function<std::vector<Value>(shlo::Builder& b, const std::vector<Value>& inputs)>;

struct Submission {
  int device;
  const char* label;                  // the op's name for errors and the profiler's device track (null: the key starts with it)
  const std::string& key;             // its signature: types, attributes (the executable cache key)
  const std::vector<BufferPtr>& inputs;
  const std::vector<TensorType>& outputs;  // result types, as the emitter returns them
  const EmitFn& emit;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  // Returns the op's results, one per `outputs` entry.
  virtual std::vector<BufferPtr> submit(const Submission& s) = 0;
  // Makes held-back work run: the calling thread's, or every thread's.
  virtual void flush(const char* reason, bool all_threads) = 0;
};

// The executor of the current mode: the only place that chooses.
Executor& executor();

inline std::vector<BufferPtr> submit(const Submission& s) { return executor().submit(s); }

// A region of ops that runs as one graph even in Strict mode: while it is
// open the calling thread records (as DeferAndFuse does), and closing it runs
// the graph. A foreach op (an optimizer's update of every parameter) becomes
// one executable instead of one per tensor, with the same lowerings. Under
// Debug (op by op by design) and DeferAndFuse (already recording) it changes
// nothing. Regions nest; the outermost one runs the graph. Closing runs it
// and raises its errors; a region left by an exception runs it and drops
// that run's own error (the first error propagates). As in DeferAndFuse, a
// graph that fails to run (a device OOM) leaves the tensors it was to update
// unreadable, with an error that says so; per-tensor Strict left them
// readable. The depth belongs to the calling OS thread: a region is closed
// on the thread that opened it.
class FusedRegion {
 public:
  FusedRegion();
  ~FusedRegion();
  FusedRegion(const FusedRegion&) = delete;
  FusedRegion& operator=(const FusedRegion&) = delete;
  void close();

 private:
  bool active_;
};

// Sync points, whatever the mode (work held back under an earlier mode runs
// too): the calling thread's work (before a compiled graph reads its
// inputs), or every thread's (synchronize, an event, the profiler's stop).
void sync_thread(const char* reason);
void sync_all(const char* reason);

}  // namespace ttpu::runtime
