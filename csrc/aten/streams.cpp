// Streams and events for 'tpu' (torch.tpu.Stream/Event, torch.Stream("tpu"),
// torch.Event("tpu"), torch.accelerator's stream API), behind c10's
// DeviceGuardImplInterface (device.cpp forwards to these functions).
//
// What a stream means here. PJRT runs a device's executions in the order
// their buffers require: an execution starts when the executions producing
// its inputs are done, whatever was issued in between. That is exactly the
// ordering CUDA streams exist to express by hand, and it holds for work
// issued on any of our streams, so values never depend on which stream an op
// was issued on. Streams are therefore names (a per-thread current stream per
// device, new ones and a pool as CUDA has) and ordering points:
//  - an event records a marker of every execution issued on its device so far
//    (after running DeferAndFuse's pending graph, so recorded work is issued);
//    query/synchronize look at those executions; elapsed_time is the time
//    between the completion of the last execution each event covers, as the
//    device's completion callbacks stamped it;
//  - Stream.wait_event / wait_stream have nothing to enforce beyond buffer
//    order (no-ops, as for work that already depends on its inputs);
//  - stream.synchronize / query cover the device's executions.
#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <array>
#include <atomic>

#include "aten/common.h"
#include "runtime/checks.h"
#include "runtime/executor.h"

namespace ttpu::aten {

namespace {

constexpr int kMaxDevices = 64;
constexpr c10::StreamId kPoolSize = 32;  // as CUDA's per-priority pool

thread_local std::array<c10::StreamId, kMaxDevices> t_current{};  // 0: the default stream
std::atomic<c10::StreamId> g_next_new{kPoolSize + 1};               // ids above the pool
std::array<std::atomic<uint32_t>, kMaxDevices> g_pool_next{};

c10::Device tpu(c10::DeviceIndex d) {
  return c10::Device(c10::DeviceType::PrivateUse1, d < 0 ? static_cast<c10::DeviceIndex>(current_device()) : d);
}

struct TpuEvent {
  c10::DeviceIndex device = -1;
  bool recorded = false;
  bool timing = false;
  pjrt::Client::Marker marker;
};

// Issues what DeferAndFuse holds, then marks the device's executions.
pjrt::Client::Marker mark(c10::DeviceIndex device) {
  try {
    runtime::sync_all("event record");
    if (!runtime::client_created()) return pjrt::Client::Marker{device, 0, {}, 0};
    return runtime::client().mark(device);
  } catch (...) {
    rethrow_as_torch_error("event record");
  }
}

}  // namespace

c10::Stream current_stream(c10::DeviceIndex d) {
  c10::Device dev = tpu(d);
  return c10::Stream(c10::Stream::UNSAFE, dev, t_current.at(dev.index()));
}

c10::Stream exchange_stream(c10::Stream s) {
  c10::Stream old = current_stream(s.device_index());
  t_current.at(s.device_index()) = s.id();
  return old;
}

c10::Stream new_stream(c10::DeviceIndex d, int /*priority*/) {
  return c10::Stream(c10::Stream::UNSAFE, tpu(d), g_next_new.fetch_add(1));
}

c10::Stream pool_stream(c10::DeviceIndex d, bool /*high_priority*/) {
  c10::Device dev = tpu(d);
  c10::StreamId id = 1 + static_cast<c10::StreamId>(g_pool_next.at(dev.index()).fetch_add(1) % kPoolSize);
  return c10::Stream(c10::Stream::UNSAFE, dev, id);
}

void event_record(void** event, const c10::Stream& stream, c10::DeviceIndex device, c10::EventFlag flag) {
  TORCH_CHECK(device == -1 || device == stream.device_index(), "Event device index ", static_cast<int>(device),
              " does not match recording stream's device index ", static_cast<int>(stream.device_index()), ".");
  auto* e = static_cast<TpuEvent*>(*event);
  if (!e) {
    e = new TpuEvent();
    e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;  // torch.Event(enable_timing=True)
    *event = e;
  }
  e->device = stream.device_index();
  e->marker = mark(e->device);
  e->recorded = true;
}

bool event_query(void* event) {
  auto* e = static_cast<TpuEvent*>(event);
  return !e || !e->recorded || pjrt::Client::ready(e->marker);
}

void event_synchronize(void* event) {
  auto* e = static_cast<TpuEvent*>(event);
  if (!e || !e->recorded) return;
  try {
    if (runtime::client_created()) runtime::client().wait(e->marker);
    runtime::raise_pending_checks();
  } catch (...) {
    rethrow_as_torch_error("event synchronize");
  }
}

void event_destroy(void* event) { delete static_cast<TpuEvent*>(event); }

double event_elapsed_ms(void* start, void* end) {
  auto* a = static_cast<TpuEvent*>(start);
  auto* b = static_cast<TpuEvent*>(end);
  TORCH_CHECK(a && b && a->recorded && b->recorded,
              "Both events must be recorded before calculating elapsed time.");
  TORCH_CHECK(a->timing && b->timing, "Both events must be created with argument 'enable_timing=True'.");
  event_synchronize(a);  // raises what the device reported, as a synchronize does
  event_synchronize(b);
  if (!runtime::client_created()) return 0.0;  // recorded before any device work: nothing between them
  return static_cast<double>(runtime::client().elapsed_ns(a->marker, b->marker)) / 1e6;
}

// Like an event recorded now: work DeferAndFuse still holds is issued first,
// so a stream with recorded, unrun work never reports itself idle.
bool stream_query(const c10::Stream& s) { return pjrt::Client::ready(mark(s.device_index())); }

}  // namespace ttpu::aten

#include <torch/library.h>

namespace ttpu::aten {
namespace {
// Tensor.record_stream(s): a buffer is freed by PJRT only after the last
// execution reading it, whatever stream issued that execution, so there is
// nothing to record (CUDA's caching allocator needs it; ours does not).
void record_stream(at::Tensor& self, c10::Stream s) {
  TORCH_CHECK(s.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected a 'tpu' stream, got ",
              s.device());
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", &record_stream); }

}  // namespace ttpu::aten
