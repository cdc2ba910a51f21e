// Device integration: DeviceGuardImpl, PrivateUse1 hooks, the random generator, and the Python
// module torch_tpu._C.
#include <sys/mman.h>

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/GeneratorImpl.h>
#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "aten/common.h"
#include "runtime/checks.h"
#include "runtime/deferred.h"
#include "runtime/trace.h"

namespace ttpu::aten {

// ---------------------------------------------------------------------------
// Types

ElemType elem_of(at::ScalarType t) {
  switch (t) {
    case at::kBool: return ElemType::Pred;
    case at::kChar: return ElemType::S8;
    case at::kShort: return ElemType::S16;
    case at::kInt: return ElemType::S32;
    case at::kLong: return ElemType::S64;
    case at::kByte: return ElemType::U8;
    case at::kUInt16: return ElemType::U16;
    case at::kUInt32: return ElemType::U32;
    case at::kUInt64: return ElemType::U64;
    case at::kHalf: return ElemType::F16;
    case at::kBFloat16: return ElemType::BF16;
    case at::kFloat: return ElemType::F32;
    case at::kDouble: return ElemType::F64;
    case at::kComplexFloat: return ElemType::C64;
    case at::kComplexDouble: return ElemType::C128;
    case at::kComplexHalf: return ElemType::C32;
    case at::kBComplex32: return ElemType::BC32;
    case at::kFloat8_e4m3fn: return ElemType::F8E4M3FN;
    case at::kFloat8_e5m2: return ElemType::F8E5M2;
    case at::kFloat8_e4m3fnuz: return ElemType::F8E4M3FNUZ;
    case at::kFloat8_e5m2fnuz: return ElemType::F8E5M2FNUZ;
    case at::kFloat8_e8m0fnu: return ElemType::F8E8M0FNU;
    case at::kFloat4_e2m1fn_x2: return ElemType::F4E2M1FNX2;
    default: break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: dtype ", t, " is not supported on 'tpu'; supported: bool, int8/16/32/64, "
                   "uint8/16/32/64, float16, bfloat16, float32, float64, complex32/64/128, bcomplex32, float8_e4m3fn/e5m2/"
                   "e4m3fnuz/e5m2fnuz/e8m0fnu, float4_e2m1fn_x2");
}

at::ScalarType scalar_type_of(ElemType t) {
  switch (t) {
    case ElemType::Pred: return at::kBool;
    case ElemType::S8: return at::kChar;
    case ElemType::S16: return at::kShort;
    case ElemType::S32: return at::kInt;
    case ElemType::S64: return at::kLong;
    case ElemType::U8: return at::kByte;
    case ElemType::U16: return at::kUInt16;
    case ElemType::U32: return at::kUInt32;
    case ElemType::U64: return at::kUInt64;
    case ElemType::F16: return at::kHalf;
    case ElemType::BF16: return at::kBFloat16;
    case ElemType::F32: return at::kFloat;
    case ElemType::F64: return at::kDouble;
    case ElemType::C64: return at::kComplexFloat;
    case ElemType::C128: return at::kComplexDouble;
    case ElemType::C32: return at::kComplexHalf;
    case ElemType::BC32: return at::kBComplex32;
    case ElemType::F8E4M3FN: return at::kFloat8_e4m3fn;
    case ElemType::F8E5M2: return at::kFloat8_e5m2;
    case ElemType::F8E4M3FNUZ: return at::kFloat8_e4m3fnuz;
    case ElemType::F8E5M2FNUZ: return at::kFloat8_e5m2fnuz;
    case ElemType::F8E8M0FNU: return at::kFloat8_e8m0fnu;
    case ElemType::F4E2M1FNX2: return at::kFloat4_e2m1fn_x2;
  }
  return at::kFloat;
}

TensorType type_of(const at::Tensor& t) {
  return TensorType{elem_of(t.scalar_type()), t.sizes().vec()};
}

// ---------------------------------------------------------------------------
// Errors

void rethrow_as_torch_error(const std::string& what) {
  try {
    throw;
  } catch (c10::Error& e) {
    // PyTorch's own check (or CPU's, run on CPU twins): its type and words
    // stay, our context is added on a line of its own.
    if (std::string(e.what_without_backtrace()).find("torch_tpu") == std::string::npos)
      e.add_context("torch_tpu: raised in " + what);
    throw;
  } catch (pybind11::error_already_set& e) {
    // The same, raised through pybind11.
    {
      pybind11::gil_scoped_acquire gil;
      if (e.value() && PyExceptionInstance_Check(e.value().ptr())) {
        PyObject* r = PyObject_CallMethod(e.value().ptr(), "add_note", "s", ("torch_tpu: raised in " + what).c_str());
        Py_XDECREF(r);
        PyErr_Clear();
      }
    }
    throw;
  } catch (python_error& e) {
    // Raised by Python code under the op (PyTorch's Python meta functions):
    // keep its type and message (IndexError stays IndexError) and add our
    // context as a note.
    {
      pybind11::gil_scoped_acquire gil;
      e.persist();
      if (e.value && PyExceptionInstance_Check(e.value)) {
        PyObject* r = PyObject_CallMethod(e.value, "add_note", "s", ("torch_tpu: raised in " + what).c_str());
        Py_XDECREF(r);
        PyErr_Clear();
      }
    }
    throw;
  } catch (const runtime::DeviceAssertError& e) {
    // The exception CPU raises for the same input (IndexError or RuntimeError).
    if (e.index_error) TORCH_CHECK_INDEX(false, e.what());
    TORCH_CHECK(false, e.what());
  } catch (const ops::IndexError& e) {
    TORCH_CHECK_INDEX(false, e.what(), " (torch_tpu: raised in ", what, ")");
  } catch (const ops::Unsupported& e) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, e.what(), " (torch_tpu: raised in ", what, ")");
  } catch (const ops::ValueError& e) {
    TORCH_CHECK_VALUE(false, e.what(), " (torch_tpu: raised in ", what, ")");
  } catch (const pjrt::OutOfMemory& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torch_tpu: out of device memory in ", what, ": ", e.what());
  } catch (const pjrt::Error& e) {
    TORCH_CHECK(false, e.what(), " (in ", what, ")");
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "torch_tpu: ", what, " failed: ", e.what());
  }
}

std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "None";
  std::ostringstream os;
  os << t.scalar_type() << t.sizes();
  if (!t.is_privateuseone()) os << "@" << t.device();
  return os.str();
}

std::string describe_args(const std::vector<c10::IValue>& stack, size_t n) {
  std::string s;
  for (size_t i = stack.size() - std::min(n, stack.size()); i < stack.size(); ++i) {
    const c10::IValue& iv = stack[i];
    if (iv.isTensor()) {
      if (!s.empty()) s += ", ";
      s += describe(iv.toTensor());
    } else if (iv.isTensorList()) {
      if (!s.empty()) s += ", ";
      s += "[" + std::to_string(iv.toTensorList().size()) + " tensors]";
    }
  }
  return s;
}

// ---------------------------------------------------------------------------
// The current device (per thread, as CUDA's).

namespace {
thread_local int t_current_device = 0;
}  // namespace

int current_device() { return t_current_device; }

// ---------------------------------------------------------------------------
// synchronize(): the client tracks completion events of every execution.

void synchronize_device(int device) {
  try {
    runtime::sync_all("synchronize");
    if (!runtime::client_created()) return;
    runtime::client().synchronize(device);
    runtime::raise_pending_checks();
  } catch (...) {
    rethrow_as_torch_error("synchronize");
  }
}

// ---------------------------------------------------------------------------
// DeviceGuardImpl

namespace {

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kType, static_cast<c10::DeviceIndex>(t_current_device));
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "torch_tpu: expected a tpu device, got ", d);
    int n = runtime::device_count_noexcept();
    if (n == 0) {
      // Surface the plugin's own error (which file, how to fix) rather than "no devices".
      try {
        runtime::client();
      } catch (...) {
        rethrow_as_torch_error("device initialisation");
      }
    }
    TORCH_CHECK(d.index() < n, "torch_tpu: The device index is out of range: ", static_cast<int>(d.index()), " (", n,
                " 'tpu' device(s) available; set TORCH_TPU_CPU_DEVICES=N for more CPU devices)");
    if (d.index() >= 0) t_current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) t_current_device = d.index();
  }
  // Streams and events: streams.cpp.
  c10::Stream getStream(c10::Device d) const override { return current_stream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, d.index() < 0 ? t_current_device : d.index()));
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override { return new_stream(d.index(), priority); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high) const override { return pool_stream(d.index(), high); }
  c10::Stream exchangeStream(c10::Stream s) const override { return exchange_stream(s); }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(runtime::device_count_noexcept());
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device,
              const c10::EventFlag flag) const override {
    event_record(event, stream, device, flag);
  }
  // Buffer order already makes dependent work wait (streams.cpp).
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void* event) const override { return event_query(event); }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override { event_destroy(event); }
  bool queryStream(const c10::Stream& s) const override { return stream_query(s); }
  void synchronizeStream(const c10::Stream& s) const override { synchronize_device(s.device_index()); }
  void synchronizeEvent(void* event) const override { event_synchronize(event); }
  void synchronizeDevice(const c10::DeviceIndex d) const override { synchronize_device(d); }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    return event_elapsed_ms(start, end);
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  // torch.accelerator.get_device_capability: the dtypes a 'tpu' tensor can hold.
  c10::DeviceCapability getDeviceCapability(c10::Device) const override {
    c10::DeviceCapability cap;
    auto supported = [](at::ScalarType t) {
      try {
        elem_of(t);
        return true;
      } catch (...) {
        return false;
      }
    };
#define TTPU_CLEAR_UNSUPPORTED(_1, n) \
  if (!supported(at::ScalarType::n)) cap.capability_data.supported_scalar_types.has_##n = 0;
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(TTPU_CLEAR_UNSUPPORTED)
#undef TTPU_CLEAR_UNSUPPORTED
    return cap;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

// ---------------------------------------------------------------------------
// Generator: a seed and a counter; each random op consumes a disjoint
// counter range. The state tensor is 16 bytes: seed, offset (uint64 each).

struct TpuGenerator final : public c10::GeneratorImpl {
  explicit TpuGenerator(c10::DeviceIndex device)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}
  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    uint64_t s = c10::detail::getNonDeterministicRandom();
    set_current_seed(s);
    return s;
  }
  void set_state(const c10::TensorImpl& state) override {
    TORCH_CHECK(state.numel() == 16 && state.dtype() == at::kByte,
                "torch_tpu: RNG state must be a uint8 tensor of 16 bytes, got ", state.numel(), " elements");
    const auto* p = static_cast<const uint8_t*>(state.data());
    std::memcpy(&seed_, p, 8);
    std::memcpy(&offset_, p + 8, 8);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto t = at::empty({16}, at::TensorOptions().dtype(at::kByte));
    auto* p = t.data_ptr<uint8_t>();
    std::memcpy(p, &seed_, 8);
    std::memcpy(p + 8, &offset_, 8);
    return t.getIntrusivePtr();
  }
  TpuGenerator* clone_impl() const override {
    auto* g = new TpuGenerator(device().index());
    g->seed_ = seed_;
    g->offset_ = offset_;
    return g;
  }
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  uint64_t seed_ = 67280421310721ull;
  uint64_t offset_ = 0;
};

std::mutex g_gen_mutex;
std::map<int, at::Generator>& default_generators() {
  static auto* m = new std::map<int, at::Generator>();
  return *m;
}

}  // namespace

const at::Generator& default_generator(int device) {
  std::lock_guard<std::mutex> lock(g_gen_mutex);
  if (device < 0) device = t_current_device;
  auto& m = default_generators();
  auto it = m.find(device);
  if (it == m.end()) {
    it = m.emplace(device, at::make_generator<TpuGenerator>(static_cast<c10::DeviceIndex>(device))).first;
  }
  return it->second;
}

namespace {
std::atomic<uint64_t> g_rng_draws{0};
}
uint64_t rng_draws() { return g_rng_draws.load(); }

std::pair<uint64_t, uint64_t> next_rng_state(const std::optional<at::Generator>& gen, int device, uint64_t numel) {
  g_rng_draws++;
  at::Generator g = gen.has_value() && gen->defined() ? *gen : default_generator(device);
  // As CUDA: a generator of another device (a CPU torch.Generator) is refused.
  TORCH_CHECK(g.device().type() == c10::DeviceType::PrivateUse1, "Expected a 'tpu' device type for generator but found '",
              c10::DeviceTypeName(g.device().type(), /*lower_case=*/true), "'");
  std::lock_guard<std::mutex> lock(g.mutex());
  auto* impl = g.get<TpuGenerator>();
  TORCH_CHECK(impl != nullptr, "torch_tpu: generator is not a tpu generator");
  uint64_t offset = impl->offset_;
  impl->offset_ += 2 * numel + 2;  // disjoint counter ranges per call
  return {impl->seed_, offset};
}

// ---------------------------------------------------------------------------
// Hooks

namespace {

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return runtime::device_count_noexcept() > 0; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return at::make_generator<TpuGenerator>(device < 0 ? static_cast<c10::DeviceIndex>(t_current_device) : device);
  }
  at::Device getDeviceFromPtr(void*) const override {
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(t_current_device));
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return runtime::client_created(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage, newsize);
  }
};

struct HooksRegistrar {
  HooksRegistrar() { at::RegisterPrivateUse1HooksInterface(new TpuHooks()); }
} g_hooks_registrar;

}  // namespace

}  // namespace ttpu::aten

// ---------------------------------------------------------------------------
// Python module

namespace py = pybind11;
using namespace ttpu;

static void check_device_index(int device) {
  int n = runtime::device_count_noexcept();
  TORCH_CHECK_INDEX(device >= 0 && device < n, "torch_tpu: The device index is out of range: ", device, " (", n,
                    " device(s) available)");
}

namespace ttpu::aten {
void register_replay(py::module& m);
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_tpu native core";
  aten::register_replay(m);
  m.def("_set_plugin", [](const std::string& path, const std::string& platform, int cpu_devices) {
    runtime::set_plugin_config(pjrt::PluginConfig{path, platform, cpu_devices});
  });
  m.def("_set_shallow_copy_fix", [](bool on) { aten::set_shallow_copy_fix(on); });
  m.def("_shallow_copy_fix", [] { return aten::shallow_copy_fix(); });
  m.def("_plugin_path", [] { return runtime::plugin_config().path; });
  m.def("_platform", [] { return runtime::plugin_config().platform; });
  m.def("_is_initialized", [] { return runtime::client_created(); });
  m.def("_init", [] {
    try {
      runtime::client();
    } catch (...) {
      aten::rethrow_as_torch_error("device initialisation");
    }
  });
  m.def("device_count", [] { return runtime::device_count_noexcept(); });
  m.def("_plugin_info", [] {
    py::dict d;
    try {
      auto& c = runtime::client();
      d["platform_name"] = c.platform_name();
      d["pjrt_api_version"] = std::to_string(c.api_major()) + "." + std::to_string(c.api_minor());
      d["plugin_path"] = c.plugin_path();
      d["device_count"] = c.device_count();
    } catch (...) {
      aten::rethrow_as_torch_error("device initialisation");
    }
    return d;
  });
  m.def("get_device_name", [](int device) {
    check_device_index(device);
    try {
      return runtime::client().device_kind(device);
    } catch (...) {
      aten::rethrow_as_torch_error("get_device_name");
    }
  });
  m.def("current_device", [] { return aten::current_device(); });
  m.def("set_device", [](int device) {
    check_device_index(device);
    // As torch.cuda.set_device: choosing a device initialises the backend, so
    // is_initialized() is true afterwards (DeviceMesh would otherwise pick a
    // device itself from LOCAL_RANK, overriding the user's choice).
    try {
      runtime::client();
    } catch (...) {
      aten::rethrow_as_torch_error("device initialisation");
    }
    c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)
        ->setDevice(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
  });
  m.def("synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    if (!runtime::client_created()) return;
    try {
      aten::synchronize_device(device);
    } catch (...) {
      aten::rethrow_as_torch_error("synchronize");
    }
  });
  m.def("memory_allocated", [](int device) { return aten::memory_stats(device).allocated; });
  m.def("max_memory_allocated", [](int device) { return aten::memory_stats(device).peak; });
  m.def("num_allocations", [](int device) { return aten::memory_stats(device).num_allocs; });
  m.def("reset_peak_memory_stats", [](int device) { aten::reset_peak(device); });
  m.def("mem_get_info", [](int device) { return aten::memory_info(device); });
  m.def("host_memory_stats", [] { return aten::pinned_stats(); });
  m.def("_unresolved_lowerings", [] { return aten::unresolved_lowerings(); });
  m.def("_registered_lowerings", [] { return aten::registered_lowerings(); });
  // Which platform-specific lowerings are chosen ("portable", "cpu", "cuda", "tpu"); tests switch it.
  m.def("_lowering_target", [] {
    const char* names[] = {"portable", "cpu", "cuda", "tpu"};
    return std::string(names[static_cast<int>(ops::target())]);
  });
  m.def("_set_lowering_target", [](const std::string& t) {
    ops::set_target(t == "portable" ? ops::Target::Portable : ops::target_from_platform(t));
    runtime::clear_cache();  // executables built for the other target must not be reused
  });
  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(aten::default_generator(device)));
  });
  m.def("compile_stats", [] {
    auto& s = runtime::stats();
    py::dict d;
    d["compiles"] = s.compiles.load();
    d["cache_hits"] = s.cache_hits.load();
    d["cache_misses"] = s.cache_misses.load();
    d["executions"] = s.executions.load();
    d["compile_seconds"] = s.compile_nanoseconds.load() / 1e9;
    d["host_to_device"] = s.host_to_device.load();
    d["host_to_device_async"] = s.host_to_device_async.load();
    d["device_to_host"] = s.device_to_host.load();
    d["cached_executables"] = runtime::cache_size();
    d["cache_capacity"] = runtime::cache_capacity();
    d["cache_evictions"] = s.cache_evictions.load();
    d["disk_loads"] = s.disk_loads.load();
    d["donated_in_flight"] = runtime::client_created() ? runtime::client().donated_in_flight() : 0;
    d["live_buffers"] = pjrt::Buffer::live.load();
    d["cached_scalars"] = runtime::scalar_cache_size();
    return d;
  });
  m.def("set_executable_cache_capacity", [](size_t n) { runtime::set_cache_capacity(n); });
  m.def("compile_cache_stats", [] {
    auto s = runtime::disk_cache::stats();
    py::dict d;
    d["enabled"] = s.enabled;
    d["supported"] = s.supported < 0 ? py::object(py::none()) : py::object(py::bool_(s.supported == 1));
    d["unsupported_reason"] = s.unsupported_reason;
    d["dir"] = s.dir;
    d["max_bytes"] = s.max_bytes;
    d["disk_hits"] = s.hits;
    d["disk_misses"] = s.misses;
    d["disk_writes"] = s.writes;
    d["disk_corrupt"] = s.corrupt;
    d["disk_errors"] = s.errors;
    d["disk_evictions"] = s.evictions;
    d["bytes_on_disk"] = s.bytes;
    d["entries_on_disk"] = s.entries;
    d["load_seconds"] = s.load_seconds;
    d["write_seconds"] = s.write_seconds;
    d["fingerprint"] = s.fingerprint;
    return d;
  });
  m.def("_clear_executable_cache", [] { runtime::clear_cache(); });
  m.def("_set_mode", [](int mode) { runtime::set_mode(static_cast<runtime::Mode>(mode)); });
  m.def("_get_mode", [] { return static_cast<int>(runtime::mode()); });
  m.def("_set_debug_nans", [](bool on) { runtime::set_debug_nans(on); });
  m.def(
      "_flush",
      [](const std::string& reason) {
        try {
          runtime::sync_thread(reason.c_str());
        } catch (...) {
          aten::rethrow_as_torch_error("sync");
        }
      },
      py::arg("reason") = "explicit torch_tpu.sync()");
  // `with _C._FusedRegion():` runs the block's ops as one graph in Strict
  // mode (runtime::FusedRegion; the fused optimizers' steps).
  struct PyFusedRegion {
    std::optional<runtime::FusedRegion> region;
  };
  py::class_<PyFusedRegion>(m, "_FusedRegion")
      .def(py::init<>())
      .def("__enter__", [](PyFusedRegion& r) { r.region.emplace(); })
      .def("__exit__", [](PyFusedRegion& r, py::object type, py::object, py::object) {
        if (!r.region) return;
        if (!type.is_none()) {  // the block's exception propagates; the graph still runs
          r.region.reset();
          return;
        }
        try {
          r.region->close();
        } catch (...) {
          r.region.reset();
          aten::rethrow_as_torch_error("fused region");
        }
        r.region.reset();
      });
  m.def("_inject_graph_failure", [](bool on) { runtime::inject_graph_failure(on); });
  // Whether the profiler's device track is noting executions (runtime/trace.h).
  m.def("_device_trace_on", [] { return runtime::trace::on(); });
  m.def("defer_stats", [] {
    auto s = runtime::defer_stats();
    py::dict d;
    d["graphs_executed"] = s.graphs_executed;
    d["ops_recorded"] = s.ops_recorded;
    d["values_materialised"] = s.values_materialised;
    d["values_dropped"] = s.values_dropped;
    d["args_donated"] = s.args_donated;
    py::dict reasons;
    for (auto& [r, n] : s.flush_reasons) reasons[py::str(r)] = n;
    d["materialisations_by_reason"] = reasons;
    return d;
  });
  m.def("host_op_stats", [] {
    py::dict d;
    for (auto& [name, n] : aten::host_op_counts()) d[py::str(name)] = n;
    return d;
  });
  m.def("_storage_has_buffer", [](const at::Tensor& t) { return aten::handle_of(t).buffer != nullptr; });
}
