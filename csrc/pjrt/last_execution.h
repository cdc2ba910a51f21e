// The completion stamp of the calling thread's latest execution (a slot
// PJRT's on-ready callback fills with the steady-clock time), kept only while
// the profiler asks for it (runtime/trace.h), so the device track times each
// execution with the same stamps torch.tpu.Event uses.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ttpu::pjrt {

void keep_last_execution(bool on);
// Null when not kept, or when the plugin gave no completion event (the
// execution was complete when Execute returned).
std::shared_ptr<std::atomic<int64_t>> last_execution_done();

}  // namespace ttpu::pjrt
