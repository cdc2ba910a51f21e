// PyTorch's profiler on 'tpu', two ways:
//
// 1. A Kineto activity profiler (torch.profiler.profile(activities=[CPU,
//    PrivateUse1]), autograd.profiler.profile(use_device="tpu",
//    use_kineto=True)): a device
//    track. Every PJRT execution issued while the trace is on (an eager op's
//    executable, a DeferAndFuse graph, a compiled graph's replay) becomes a
//    kernel activity on device row "TPU <n>", named by the ATen op(s) it runs
//    ("tpu op: aten::mm", "tpu graph (9 ops): aten::addmm, aten::mm x3, ...",
//    "tpu compiled graph (5 ops): ..."),
//    linked to the ATen op that issued it, so key_averages() shows device time
//    per op (and per graph) and export_chrome_trace() shows the executions,
//    each with its host-side launch (PJRT_LoadedExecutable_Execute on the
//    issuing thread, like CUDA's cudaLaunchKernel) and a flow arrow between.
//    Registered through PyTorch's PrivateUse1ProfilerRegistry (torch >= 2.14
//    ships it and Kineto's headers; older torch builds without it keep 2.).
//    Timing: an execution ends at its PJRT completion callback (the stamps
//    torch.tpu.Event uses); PJRT reports no start time, so it starts when the
//    host issued it or when the device's previous execution completed,
//    whichever is later. The device is read as running its executions one at
//    a time, in issue order (as TPU and GPU streams do): a completion stamped
//    after that of later work on the device (seen on the CPU plugin with two
//    devices, whose callbacks can arrive late) is bounded by it. So the track
//    never overlaps itself and its total is at most the event time around it.
//    DeferAndFuse work still pending when the trace stops is issued then, so
//    what the profiled region recorded is on the track.
//
// 2. The PrivateUse1 profiler stubs (autograd.profiler.profile(
//    use_device="tpu"), whose use_kineto defaults to False: the KINETO_PRIVATEUSE1_FALLBACK
//    state): device time per op as the time between the completion of the
//    work issued before the op began and the completion of the work issued by
//    its end, measured with the same completion stamps, read in issue order
//    as the track is.
#include <torch/csrc/profiler/stubs/base.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "aten/common.h"
#include "runtime/executor.h"
#include "runtime/trace.h"

#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>) && __has_include(<IActivityProfiler.h>)
#define TTPU_KINETO_PROFILER 1
#ifndef USE_KINETO
#define USE_KINETO 1  // the wheel's Kineto is built in; its registry header is guarded by this
#endif
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#endif

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
    pjrt::Client& client = runtime::client();
    client.wait(x->marker);
    client.wait(y->marker);
    // The device read as completing its work in issue order (see 1. above):
    // the work before the op is complete no later than anything the op
    // issued (on the CPU plugin an execution's completion callback can come
    // after that of work chained behind it, which gave ops no device time),
    // and the op's work completes with its newest execution.
    const auto& before = x->marker.done_ns;
    const auto& after = y->marker.done_ns;
    int64_t end_a = pjrt::Client::completion_ns(x->marker);
    int64_t newest = 0;
    bool issued = false;
    for (const auto& t : after)
      if (std::find(before.begin(), before.end(), t) == before.end()) {
        end_a = std::min(end_a, t->load());
        newest = t->load();  // issue order: the last one is the newest
        issued = true;
      }
    int64_t end_b = end_a;
    if (issued)
      end_b = std::max(end_a, newest);
    else if (y->marker.seq > x->marker.seq)
      end_b = std::max(end_a, y->marker.marked_ns);  // issued and already complete when the op ended
    return static_cast<float>(std::max<int64_t>(end_b - end_a, 0)) / 1000.f;
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


#ifdef TTPU_KINETO_PROFILER
// ---------------------------------------------------------------------------
// The Kineto activity profiler (1. above).

// The ids of the ATen ops running on this thread, innermost last: Kineto
// pushes and pops them around every op while a session of ours is on.
thread_local std::vector<uint64_t> t_correlation;
uint64_t current_correlation() { return t_correlation.empty() ? 0 : t_correlation.back(); }

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t epoch_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class TpuSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    t_correlation.clear();
    epoch_minus_steady_ = epoch_now_ns() - steady_now_ns();  // Kineto's times are Unix-epoch ns
    start_ns_ = epoch_now_ns();
    runtime::trace::start(&current_correlation);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    // Issue what DeferAndFuse recorded in the profiled region, and wait, so
    // every execution noted has its completion stamp.
    try {
      runtime::sync_all("profiler stop");
      if (runtime::client_created()) runtime::client().synchronize(-1);
    } catch (const std::exception& e) {
      errors_.push_back(std::string("torch_tpu: waiting for the device at profiler stop: ") + e.what());
    }
    executions_ = runtime::trace::stop();
    end_ns_ = epoch_now_ns();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  explicit TpuSession(bool runtime_events) : runtime_events_(runtime_events) {}

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override { build(logger, nullptr); }
  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked, int64_t,
                    int64_t) override {
    build(logger, linked);
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    int d = devices_.empty() ? 0 : *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{d, d, "TPU " + std::to_string(d), "TPU " + std::to_string(d) + " (PJRT)"});
  }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> rows;
    for (int d : devices_) rows.push_back(libkineto::ResourceInfo{0, 0, d, "PJRT executions"});
    return rows;
  }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { t_correlation.push_back(id); }
  void popCorrelationId() override {
    if (!t_correlation.empty()) t_correlation.pop_back();
  }

 private:
  void build(libkineto::ActivityLogger& logger, const libkineto::getLinkedActivityCallback& linked) {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(start_ns_, end_ns_, "tpu");
    buffer_->gpuOpCount = static_cast<int>(executions_.size());
    // Ends: PJRT's completion stamps, read as a device that completes its
    // work in issue order (TPU/GPU streams do): a stamp later than that of
    // later work on the device (a callback delivered late) is bounded by it.
    std::vector<int64_t> ends(executions_.size());
    std::map<int, int64_t> later_end;  // per device, walking backwards
    for (size_t i = executions_.size(); i-- > 0;) {
      const auto& e = executions_[i];
      int64_t done = e.done_ns ? e.done_ns->load() : 0;
      if (done <= 0) done = e.returned_ns;  // no completion event: complete when Execute returned
      auto it = later_end.find(e.device);
      ends[i] = it == later_end.end() ? done : std::min(done, it->second);
      later_end[e.device] = ends[i];
    }
    // Starts: when issued, or when the device's previous execution ended.
    std::map<int, int64_t> busy_until;
    int32_t next_id = 1;
    for (size_t i = 0; i < executions_.size(); ++i) {
      const auto& e = executions_[i];
      int64_t done = ends[i];
      int64_t& busy = busy_until[e.device];
      int64_t begin = std::min(std::max(e.issued_ns, busy), done);
      busy = done;
      devices_.insert(e.device);

      // Named apart from the ATen ops themselves (as CUDA's kernels are), so
      // key_averages() keeps the op row and its device executions apart.
      // Copies are named as CUDA's are ("Memcpy HtoD (Host -> Device)").
      bool copy = std::string(e.kind) == "copy";
      std::string name = copy ? "Memcpy " + *e.label + (*e.label == "HtoD" ? " (Host -> Tpu)" : " (Tpu -> Host)")
                         : std::string(e.kind) == "op"
                             ? "tpu op: " + *e.label
                             : "tpu " + std::string(e.kind) + " (" + std::to_string(e.ops) + " ops): " + *e.label;
      buffer_->emplace_activity(buffer_->span,
                                copy ? libkineto::ActivityType::GPU_MEMCPY : libkineto::ActivityType::CONCURRENT_KERNEL,
                                name);
      auto& a = *buffer_->activities.back();
      a.device = e.device;
      a.resource = 0;
      a.id = next_id++;
      a.startTime = begin + epoch_minus_steady_;
      a.endTime = done + epoch_minus_steady_;
      const libkineto::ITraceActivity* op = linked && e.correlation ? linked(static_cast<int32_t>(e.correlation)) : nullptr;
      a.linked = op;
      // Typed values: addMetadata formats with fmt, which libtorch does not export.
      a.addTypedMetadata("device", libkineto::TypedValue{int64_t{e.device}});
      a.addMetadataQuoted("kind", e.kind);
      if (copy) a.addTypedMetadata("bytes", libkineto::TypedValue{e.bytes});
      else a.addTypedMetadata("ATen ops", libkineto::TypedValue{int64_t{e.ops}});
      a.addTypedMetadata("host issue us", libkineto::TypedValue{static_cast<double>(e.returned_ns - e.issued_ns) / 1e3});
      if (e.correlation) a.addTypedMetadata("External id", libkineto::TypedValue{static_cast<int64_t>(e.correlation)});
      if (runtime_events_) {
        // The host side of the launch, as CUDA traces show cudaLaunchKernel:
        // on the issuing thread, under the op, with a flow arrow to the execution.
        const char* call = !copy ? "PJRT_LoadedExecutable_Execute"
                           : *e.label == "HtoD" ? "PJRT_Client_BufferFromHostBuffer" : "PJRT_Buffer_ToHostBuffer";
        buffer_->emplace_activity(buffer_->span, libkineto::ActivityType::PRIVATEUSE1_RUNTIME, call);
        auto& r = *buffer_->activities.back();
        r.device = libkineto::processId();
        r.resource = static_cast<int64_t>(e.thread);
        r.threadId = static_cast<int32_t>(e.thread);
        r.id = a.id;
        r.startTime = e.issued_ns + epoch_minus_steady_;
        r.endTime = e.returned_ns + epoch_minus_steady_;
        r.linked = op;
        r.flow.id = static_cast<uint32_t>(a.id);
        r.flow.type = libkineto::kLinkAsyncCpuGpu;
        r.flow.start = 1;
        a.flow.id = r.flow.id;
        a.flow.type = libkineto::kLinkAsyncCpuGpu;
        a.flow.start = 0;
        r.log(logger);
      }
      a.log(logger);
    }
    executions_.clear();
  }

  bool runtime_events_ = false;
  int64_t epoch_minus_steady_ = 0, start_ns_ = 0, end_ns_ = 0;
  std::vector<runtime::trace::Execution> executions_;
  std::set<int> devices_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::vector<std::string> errors_;
};

class TpuActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config&) override {
    // A CPU-only trace asks for no device activity: no session, nothing noted.
    if (!types.count(libkineto::ActivityType::CONCURRENT_KERNEL)) return nullptr;
    return std::make_unique<TpuSession>(types.count(libkineto::ActivityType::PRIVATEUSE1_RUNTIME) > 0);
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "torch_tpu";
  std::set<libkineto::ActivityType> activities_{libkineto::ActivityType::CONCURRENT_KERNEL,
                                                libkineto::ActivityType::PRIVATEUSE1_RUNTIME};
};

struct RegisterActivityProfiler {
  RegisterActivityProfiler() {
    torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
        [] { return std::unique_ptr<libkineto::IActivityProfiler>(new TpuActivityProfiler()); });
  }
} g_register_activity_profiler;
#endif  // TTPU_KINETO_PROFILER

}  // namespace

}  // namespace ttpu::aten
