// Device time per op in PyTorch's profiler (autograd.profiler.profile(
// use_device="tpu", use_kineto=False), the KINETO_PRIVATEUSE1_FALLBACK state):
// the profiler stubs PyTorch calls around every op. An op's device time is
// the time between the completion of the work issued before it began and the
// completion of the work issued by its end, measured with the same markers as
// torch.tpu.Event (PJRT's on-ready callbacks stamp each execution's end).
// A native Kineto IActivityProfiler (device tracks in Chrome traces,
// ProfilerActivity.PrivateUse1) is not built yet.
#include <torch/csrc/profiler/stubs/base.h>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

struct Mark {
  bool valid = false;
  pjrt::Client::Marker marker;
};

struct TpuProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    int d = current_device();
    if (device) *device = static_cast<c10::DeviceIndex>(d);
    auto m = std::make_shared<Mark>();
    // Unlike an event, no flush of DeferAndFuse's pending graph: running it
    // at every op would profile a different program. There, the device time
    // of the recorded ops lands on the op whose sync runs the graph.
    if (runtime::client_created()) {
      m->marker = runtime::client().mark(d);
      m->valid = true;
    }
    if (cpu_ns) *cpu_ns = c10::getTime();
    *event = std::static_pointer_cast<void>(m);
  }
  // Microseconds, as PyTorch's CUDA stubs return.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* a,
                const torch::profiler::impl::ProfilerVoidEventStub* b) const override {
    auto* x = static_cast<Mark*>(a->get());
    auto* y = static_cast<Mark*>(b->get());
    if (!x || !y || !x->valid || !y->valid) return 0.f;
    int64_t ns = runtime::client().elapsed_ns(x->marker, y->marker);
    return static_cast<float>(std::max<int64_t>(ns, 0)) / 1000.f;
  }
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    int n = runtime::device_count_noexcept();
    for (int i = 0; i < n; ++i) op(i);
  }
  void synchronize() const override { synchronize_device(-1); }
};

TpuProfilerStubs g_stubs;

struct RegisterStubs {
  RegisterStubs() { torch::profiler::impl::registerPrivateUse1Methods(&g_stubs); }
} g_register_stubs;

}  // namespace

}  // namespace ttpu::aten
