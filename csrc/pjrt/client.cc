#include "pjrt/client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pjrt/last_execution.h"
#include "pjrt/pjrt_abi.h"

namespace ttpu::pjrt {

using namespace ttpu::abi;

namespace {

// The global API pointer lets Buffer/Executable destructors run without a
// back-pointer; there is one plugin per process.
const PJRT_Api* g_api = nullptr;

template <typename T>
T zeroed(size_t struct_size) {
  T t;
  std::memset(&t, 0, sizeof(T));
  t.struct_size = struct_size;
  return t;
}

PJRT_Buffer_Type to_pjrt(ElemType t) {
  switch (t) {
    case ElemType::Pred: return PJRT_Buffer_Type_PRED;
    case ElemType::S8: return PJRT_Buffer_Type_S8;
    case ElemType::S16: return PJRT_Buffer_Type_S16;
    case ElemType::S32: return PJRT_Buffer_Type_S32;
    case ElemType::S64: return PJRT_Buffer_Type_S64;
    case ElemType::U8: return PJRT_Buffer_Type_U8;
    case ElemType::U16: return PJRT_Buffer_Type_U16;
    case ElemType::U32: return PJRT_Buffer_Type_U32;
    case ElemType::U64: return PJRT_Buffer_Type_U64;
    case ElemType::F16: return PJRT_Buffer_Type_F16;
    case ElemType::BF16: return PJRT_Buffer_Type_BF16;
    case ElemType::F32: return PJRT_Buffer_Type_F32;
    case ElemType::F64: return PJRT_Buffer_Type_F64;
    case ElemType::C64: return PJRT_Buffer_Type_C64;
    case ElemType::C128: return PJRT_Buffer_Type_C128;
    case ElemType::F8E4M3FN: return PJRT_Buffer_Type_F8E4M3FN;
    case ElemType::F8E5M2: return PJRT_Buffer_Type_F8E5M2;
    case ElemType::F8E4M3FNUZ: return PJRT_Buffer_Type_F8E4M3FNUZ;
    case ElemType::F8E5M2FNUZ: return PJRT_Buffer_Type_F8E5M2FNUZ;
    case ElemType::F8E8M0FNU: return PJRT_Buffer_Type_F8E8M0FNU;
    case ElemType::F4E2M1FNX2: return PJRT_Buffer_Type_U8;
    case ElemType::C32: case ElemType::BC32: return PJRT_Buffer_Type_U32;
  }
  return PJRT_Buffer_Type_INVALID;
}

// CompileOptionsProto, encoded by hand (no protobuf dependency):
//   executable_build_options (field 3) { num_replicas (4) = 1, num_partitions (5) = 1 }
//   compile_portable_executable (field 4) = true, so one executable runs on any device.
// Oldest plugin API we accept: the default CPU plugin's (0.81). Newer plugins
// work with our declarations because the ABI only grows by appending.
constexpr int kMinimumApiMinor = 81;

const char kCompileOptions[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

void destroy_error(const PJRT_Api* api, PJRT_Error* e) {
  if (!e) return;
  auto d = zeroed<PJRT_Error_Destroy_Args>(PJRT_Error_Destroy_Args_STRUCT_SIZE);
  d.error = e;
  api->PJRT_Error_Destroy(&d);
}

void destroy_buffer(const PJRT_Api* api, PJRT_Buffer* buffer) {
  auto a = zeroed<PJRT_Buffer_Destroy_Args>(PJRT_Buffer_Destroy_Args_STRUCT_SIZE);
  a.buffer = buffer;
  destroy_error(api, api->PJRT_Buffer_Destroy(&a));
}

// Blocks until `event` is ready; returns its error (owned by the caller), if any.
PJRT_Error* await_event(const PJRT_Api* api, PJRT_Event* event) {
  auto w = zeroed<PJRT_Event_Await_Args>(PJRT_Event_Await_Args_STRUCT_SIZE);
  w.event = event;
  return api->PJRT_Event_Await(&w);
}

}  // namespace

void disable_after_fork() { g_api = nullptr; }

void Buffer::discard() {
  if (raw_ && g_api) destroy_buffer(g_api, raw_);
  raw_ = nullptr;
}

Buffer::~Buffer() {
  discard();
  live.fetch_sub(1, std::memory_order_relaxed);
}

Executable::~Executable() {
  if (raw_ && g_api) {
    auto a = zeroed<PJRT_LoadedExecutable_Destroy_Args>(PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE);
    a.executable = raw_;
    destroy_error(g_api, g_api->PJRT_LoadedExecutable_Destroy(&a));
  }
}

void Client::check(PJRT_Error* err, const char* what) const {
  if (!err) return;
  auto m = zeroed<PJRT_Error_Message_Args>(PJRT_Error_Message_Args_STRUCT_SIZE);
  m.error = err;
  api_->PJRT_Error_Message(&m);
  std::string msg(m.message, m.message_size);
  auto c = zeroed<PJRT_Error_GetCode_Args>(PJRT_Error_GetCode_Args_STRUCT_SIZE);
  c.error = err;
  int code = api_->PJRT_Error_GetCode(&c) ? 0 : static_cast<int>(c.code);
  destroy_error(api_, err);
  std::string full = std::string("torch_tpu: PJRT ") + what + " failed: " + msg;
  if (code == PJRT_Error_Code_RESOURCE_EXHAUSTED) throw OutOfMemory(full, code);
  throw Error(full, code);
}

Client::Client(const PluginConfig& config) : config_(config) {
  const std::string fix =
      " Install the plugin package (the default CPU plugin comes with torch_tpu's dependencies), "
      "or point TORCH_TPU_PJRT_PLUGIN at a PJRT plugin .so, or choose another TORCH_TPU_PLATFORM.";
  if (config_.path.empty())
    throw Error("torch_tpu: no PJRT plugin found for platform '" + config_.platform + "'." + fix, 0);
  // XLA logs every client option at INFO level; keep stderr quiet unless asked.
  setenv("TF_CPP_MIN_LOG_LEVEL", "1", /*overwrite=*/0);
  // XLA reads XLA_FLAGS when the plugin builds its default options, so our
  // defaults are set before loading; a user's own setting of a flag wins.
  auto default_flag = [](const std::string& name, const std::string& value) {
    const char* flags = std::getenv("XLA_FLAGS");
    std::string f = flags ? flags : "";
    if (f.find(name) != std::string::npos) return;
    f += (f.empty() ? "" : " ") + ("--" + name + "=" + value);
    setenv("XLA_FLAGS", f.c_str(), /*overwrite=*/1);
  };
  // PyTorch rounds every op's result to its dtype; XLA by default may keep
  // bf16/f16 intermediates in f32 ("excess precision") and drop the
  // round-trips our lowerings put in. Seen on the CUDA plugin: remainder of
  // int16 by bf16 and f16 out= overflow differed from CPU.
  default_flag("xla_allow_excess_precision", "false");
  // XLA:CPU's XNNPACK dot kernels sometimes return a product computed from an
  // earlier execution's operand: 1 in 30 to 1 in 100 matmuls of a fresh
  // [512,512] x [512,128] pair gave exactly the previous iteration's result
  // (issue #13 item 0: the "nondeterministic gradient" of the small GPT, in
  // Strict, Debug and under load). XLA's own Eigen dot has no such fault and
  // measured the same speed on our benchmarks, so XNNPACK stays off.
  if (config_.platform == "cpu") default_flag("xla_cpu_use_xnnpack", "false");
  handle_ = dlopen(config_.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    throw Error("torch_tpu: cannot load PJRT plugin '" + config_.path + "': " + (why ? why : "unknown error") +
                    "." + fix,
                0);
  }
  using GetApi = const PJRT_Api* (*)();
  auto get = reinterpret_cast<GetApi>(dlsym(handle_, "GetPjrtApi"));
  if (!get) throw Error("torch_tpu: '" + config_.path + "' is not a PJRT plugin (no GetPjrtApi symbol)." + fix, 0);
  api_ = get();
  if (!api_) throw Error("torch_tpu: GetPjrtApi() in '" + config_.path + "' returned null." + fix, 0);
  if (api_->pjrt_api_version.major_version != kTargetApiMajor)
    throw Error("torch_tpu: plugin '" + config_.path + "' has PJRT API major version " +
                    std::to_string(api_->pjrt_api_version.major_version) + ", expected " +
                    std::to_string(kTargetApiMajor),
                0);
  if (api_->pjrt_api_version.minor_version < kMinimumApiMinor)
    throw Error("torch_tpu: plugin '" + config_.path + "' is too old (PJRT API 0." +
                    std::to_string(api_->pjrt_api_version.minor_version) + ", need 0." +
                    std::to_string(kMinimumApiMinor) + " or newer)",
                0);
  g_api = api_;
  auto init = zeroed<PJRT_Plugin_Initialize_Args>(PJRT_Plugin_Initialize_Args_STRUCT_SIZE);
  check(api_->PJRT_Plugin_Initialize(&init), "Plugin_Initialize");

  // Client options, as name -> text, typed when passed: the CPU plugin's
  // device count; on CUDA, no preallocation (XLA's default takes 75% of the
  // GPU at start; PyTorch's allocators grow on demand, and a process that
  // mixes torch.cuda with 'tpu' needs the rest). TORCH_TPU_PJRT_OPTIONS=
  // "name=value,..." adds or overrides options (true/false -> bool, integers
  // -> int64, decimals -> float, else string); "none" passes no options.
  std::vector<std::pair<std::string, std::string>> named;
  if (config_.platform == "cpu") named.emplace_back("cpu_device_count", std::to_string(config_.cpu_device_count));
  if (config_.platform == "cuda") named.emplace_back("preallocate", "false");
  if (const char* env = std::getenv("TORCH_TPU_PJRT_OPTIONS")) {
    std::string spec(env);
    if (spec == "none") named.clear();
    else {
      std::stringstream items(spec);
      std::string item;
      while (std::getline(items, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
          throw Error("torch_tpu: TORCH_TPU_PJRT_OPTIONS entry '" + item + "' is not name=value", 0);
        std::string name = item.substr(0, eq), value = item.substr(eq + 1);
        auto same = std::find_if(named.begin(), named.end(), [&](const auto& kv) { return kv.first == name; });
        if (same != named.end()) same->second = value;
        else named.emplace_back(name, value);
      }
    }
  }
  std::vector<PJRT_NamedValue> options;
  for (const auto& [name, value] : named) {
    auto nv = zeroed<PJRT_NamedValue>(PJRT_NamedValue_STRUCT_SIZE);
    nv.name = name.c_str();
    nv.name_size = name.size();
    char* end = nullptr;
    long long as_int = std::strtoll(value.c_str(), &end, 10);
    bool is_int = !value.empty() && end && *end == '\0';
    double as_float = std::strtod(value.c_str(), &end);
    bool is_float = !value.empty() && end && *end == '\0';
    if (value == "true" || value == "false") {
      nv.type = PJRT_NamedValue_kBool;
      nv.bool_value = value == "true";
      nv.value_size = 1;
    } else if (is_int) {
      nv.type = PJRT_NamedValue_kInt64;
      nv.int64_value = as_int;
      nv.value_size = 1;
    } else if (is_float) {
      nv.type = PJRT_NamedValue_kFloat;
      nv.float_value = static_cast<float>(as_float);
      nv.value_size = 1;
    } else {
      nv.type = PJRT_NamedValue_kString;
      nv.string_value = value.c_str();
      nv.value_size = value.size();
    }
    options.push_back(nv);
  }
  auto create = zeroed<PJRT_Client_Create_Args>(PJRT_Client_Create_Args_STRUCT_SIZE);
  create.create_options = options.data();
  create.num_options = options.size();
  check(api_->PJRT_Client_Create(&create), "Client_Create");
  client_ = create.client;

  auto devs = zeroed<PJRT_Client_AddressableDevices_Args>(PJRT_Client_AddressableDevices_Args_STRUCT_SIZE);
  devs.client = client_;
  check(api_->PJRT_Client_AddressableDevices(&devs), "Client_AddressableDevices");
  devices_.assign(devs.addressable_devices, devs.addressable_devices + devs.num_addressable_devices);
  pending_.resize(devices_.size());
  issued_.resize(devices_.size(), 0);

  auto pn = zeroed<PJRT_Client_PlatformName_Args>(PJRT_Client_PlatformName_Args_STRUCT_SIZE);
  pn.client = client_;
  check(api_->PJRT_Client_PlatformName(&pn), "Client_PlatformName");
  platform_name_.assign(pn.platform_name, pn.platform_name_size);
}

Client::~Client() {
  // The process is exiting when the client dies; destroying it while other
  // static destructors may still hold buffers is unsafe, so we leak it.
}

int Client::api_major() const { return api_->pjrt_api_version.major_version; }
int Client::api_minor() const { return api_->pjrt_api_version.minor_version; }

std::string Client::device_kind(int device) const {
  auto gd = zeroed<PJRT_Device_GetDescription_Args>(PJRT_Device_GetDescription_Args_STRUCT_SIZE);
  gd.device = devices_.at(device);
  check(api_->PJRT_Device_GetDescription(&gd), "Device_GetDescription");
  auto k = zeroed<PJRT_DeviceDescription_Kind_Args>(PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE);
  k.device_description = gd.device_description;
  check(api_->PJRT_DeviceDescription_Kind(&k), "DeviceDescription_Kind");
  return std::string(k.device_kind, k.device_kind_size);
}

static void destroy_event(const PJRT_Api* api, PJRT_Event* ev) {
  if (!ev) return;
  auto d = zeroed<PJRT_Event_Destroy_Args>(PJRT_Event_Destroy_Args_STRUCT_SIZE);
  d.event = ev;
  api->PJRT_Event_Destroy(&d);
}

namespace {
// PJRT_Event_OnReady callback of an asynchronous upload: the plugin is done
// with the host memory.
void host_buffer_done(PJRT_Error* error, void* arg) {
  auto* done = static_cast<std::shared_ptr<Client::HostDone>*>(arg);
  (*done)->fire();
  delete done;
  if (error && g_api) destroy_error(g_api, error);
}
}  // namespace

BufferPtr Client::from_host(const void* data, const shlo::TensorType& type, int device,
                            std::function<void()> on_done) {
  auto host_done = on_done ? std::make_shared<HostDone>() : nullptr;
  if (host_done) host_done->fn = std::move(on_done);
  // Until an event owns it, the host memory is released on the way out: a
  // failed call, or one the plugin finished within, never reads it again.
  struct ReleaseOnExit {
    std::shared_ptr<HostDone> done;
    ~ReleaseOnExit() {
      if (done) done->fire();
    }
  } release_on_exit{host_done};
  auto a = zeroed<PJRT_Client_BufferFromHostBuffer_Args>(PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE);
  a.client = client_;
  a.data = data;
  a.type = to_pjrt(type.elem);
  a.dims = type.dims.data();
  a.num_dims = type.dims.size();
  a.host_buffer_semantics = host_done ? PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes
                                      : PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = devices_.at(device);
  check(api_->PJRT_Client_BufferFromHostBuffer(&a), "BufferFromHostBuffer");
  auto buffer = std::make_shared<Buffer>(a.buffer, type.elem, type.dims, device);
  if (!host_done || !a.done_with_host_buffer) {
    destroy_event(api_, a.done_with_host_buffer);
    return buffer;
  }
  release_on_exit.done = nullptr;
  auto on = zeroed<PJRT_Event_OnReady_Args>(PJRT_Event_OnReady_Args_STRUCT_SIZE);
  on.event = a.done_with_host_buffer;
  on.callback = &host_buffer_done;
  on.user_arg = new std::shared_ptr<HostDone>(host_done);
  PJRT_Error* e = api_->PJRT_Event_OnReady(&on);
  if (e) {  // no callback: the event's retirement below releases the memory, once it is complete
    delete static_cast<std::shared_ptr<HostDone>*>(on.user_arg);
    destroy_error(api_, e);
  }
  // The copy is device work like an execution: synchronize() and events
  // recorded after this call wait for it, and retiring it runs host_done.
  InFlight entry{a.done_with_host_buffer, {}};
  entry.host_done = host_done;
  track(device, std::move(entry));
  return buffer;
}

void Client::to_host(const Buffer& buffer, void* dst) {
  auto a = zeroed<PJRT_Buffer_ToHostBuffer_Args>(PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE);
  a.src = buffer.raw();
  a.dst = dst;
  a.dst_size = buffer.nbytes();
  check(api_->PJRT_Buffer_ToHostBuffer(&a), "Buffer_ToHostBuffer");
  if (a.event) {
    PJRT_Error* e = await_event(api_, a.event);
    destroy_event(api_, a.event);
    check(e, "device-to-host copy");
  }
}

void Client::await_ready(const Buffer& buffer) {
  auto r = zeroed<PJRT_Buffer_ReadyEvent_Args>(PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE);
  r.buffer = buffer.raw();
  check(api_->PJRT_Buffer_ReadyEvent(&r), "Buffer_ReadyEvent");
  PJRT_Error* e = await_event(api_, r.event);
  destroy_event(api_, r.event);
  check(e, "waiting for the device");
}

BufferPtr Client::copy_to_device(const Buffer& buffer, int device) {
  auto a = zeroed<PJRT_Buffer_CopyToDevice_Args>(PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE);
  a.buffer = buffer.raw();
  a.dst_device = devices_.at(device);
  check(api_->PJRT_Buffer_CopyToDevice(&a), "Buffer_CopyToDevice");
  return std::make_shared<Buffer>(a.dst_buffer, buffer.type().elem, buffer.type().dims, device);
}

ExecutablePtr Client::compile(const std::string& text, std::vector<shlo::TensorType> outputs) {
  static const char kFormat[] = "mlir";
  auto prog = zeroed<PJRT_Program>(PJRT_Program_STRUCT_SIZE);
  prog.code = const_cast<char*>(text.data());
  prog.code_size = text.size();
  prog.format = kFormat;
  prog.format_size = 4;
  auto a = zeroed<PJRT_Client_Compile_Args>(PJRT_Client_Compile_Args_STRUCT_SIZE);
  a.client = client_;
  a.program = &prog;
  a.compile_options = kCompileOptions;
  a.compile_options_size = sizeof(kCompileOptions);
  check(api_->PJRT_Client_Compile(&a), "Client_Compile");
  return std::make_shared<Executable>(a.executable, std::move(outputs));
}

std::string Client::compile_options() { return std::string(kCompileOptions, sizeof(kCompileOptions)); }

bool Client::has_serialization() const {
  return HasSlot(api_, offsetof(PJRT_Api, PJRT_LoadedExecutable_GetExecutable)) &&
         HasSlot(api_, offsetof(PJRT_Api, PJRT_Executable_Serialize)) &&
         HasSlot(api_, offsetof(PJRT_Api, PJRT_Executable_Destroy)) &&
         HasSlot(api_, offsetof(PJRT_Api, PJRT_Executable_DeserializeAndLoad)) &&
         api_->PJRT_LoadedExecutable_GetExecutable && api_->PJRT_Executable_Serialize &&
         api_->PJRT_Executable_Destroy && api_->PJRT_Executable_DeserializeAndLoad;
}

std::string Client::serialize(const Executable& exe) {
  if (!has_serialization()) throw Error("torch_tpu: this PJRT plugin cannot serialise executables", 0);
  // The serialisable (unloaded) executable behind the loaded one; ours to destroy.
  auto g = zeroed<PJRT_LoadedExecutable_GetExecutable_Args>(PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE);
  g.loaded_executable = exe.raw();
  check(api_->PJRT_LoadedExecutable_GetExecutable(&g), "LoadedExecutable_GetExecutable");
  auto destroy_exe = [&] {
    auto d = zeroed<PJRT_Executable_Destroy_Args>(PJRT_Executable_Destroy_Args_STRUCT_SIZE);
    d.executable = g.executable;
    destroy_error(api_, api_->PJRT_Executable_Destroy(&d));
  };
  auto a = zeroed<PJRT_Executable_Serialize_Args>(PJRT_Executable_Serialize_Args_STRUCT_SIZE);
  a.executable = g.executable;
  PJRT_Error* err = api_->PJRT_Executable_Serialize(&a);
  if (err) {
    destroy_exe();
    check(err, "Executable_Serialize");
  }
  std::string bytes(a.serialized_bytes ? a.serialized_bytes : "", a.serialized_bytes_size);
  if (a.serialized_executable_deleter) a.serialized_executable_deleter(a.serialized_executable);
  destroy_exe();
  return bytes;
}

ExecutablePtr Client::deserialize(const std::string& bytes, std::vector<shlo::TensorType> outputs) {
  if (!has_serialization()) throw Error("torch_tpu: this PJRT plugin cannot load serialised executables", 0);
  auto a = zeroed<PJRT_Executable_DeserializeAndLoad_Args>(PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE);
  a.client = client_;
  a.serialized_executable = bytes.data();
  a.serialized_executable_size = bytes.size();
  check(api_->PJRT_Executable_DeserializeAndLoad(&a), "Executable_DeserializeAndLoad");
  return std::make_shared<Executable>(a.loaded_executable, std::move(outputs));
}

std::string Client::platform_version() const {
  auto pv = zeroed<PJRT_Client_PlatformVersion_Args>(PJRT_Client_PlatformVersion_Args_STRUCT_SIZE);
  pv.client = client_;
  check(api_->PJRT_Client_PlatformVersion(&pv), "Client_PlatformVersion");
  return std::string(pv.platform_version, pv.platform_version_size);
}

std::string Client::plugin_attributes() const {
  auto a = zeroed<PJRT_Plugin_Attributes_Args>(PJRT_Plugin_Attributes_Args_STRUCT_SIZE);
  PJRT_Error* err = api_->PJRT_Plugin_Attributes(&a);
  if (err) {
    destroy_error(api_, err);
    return "";
  }
  std::string out;
  for (size_t i = 0; i < a.num_attributes; ++i) {
    const PJRT_NamedValue& v = a.attributes[i];
    out.append(v.name, v.name_size);
    out += '=';
    switch (v.type) {
      case PJRT_NamedValue_kString: out.append(v.string_value, v.value_size); break;
      case PJRT_NamedValue_kInt64: out += std::to_string(v.int64_value); break;
      case PJRT_NamedValue_kInt64List:
        for (size_t k = 0; k < v.value_size; ++k) out += (k ? "," : "") + std::to_string(v.int64_array_value[k]);
        break;
      case PJRT_NamedValue_kFloat: out += std::to_string(v.float_value); break;
      case PJRT_NamedValue_kBool: out += v.bool_value ? "true" : "false"; break;
    }
    out += ';';
  }
  return out;
}

namespace {
// See last_execution.h.
std::atomic<bool> g_keep_last{false};
thread_local std::shared_ptr<std::atomic<int64_t>> t_last_done;
}  // namespace

void keep_last_execution(bool on) { g_keep_last.store(on); }
std::shared_ptr<std::atomic<int64_t>> last_execution_done() { return t_last_done; }

std::vector<BufferPtr> Client::execute(const Executable& exe, const std::vector<Buffer*>& args, int device,
                                       const std::vector<int>& donated_args, bool aliasing) {
  std::vector<PJRT_Buffer*> raw(args.size());
  for (size_t i = 0; i < args.size(); ++i) raw[i] = args[i]->raw();
  const auto& out_types = exe.outputs();
  std::vector<PJRT_Buffer*> outs(out_types.size(), nullptr);
  PJRT_Buffer* const* arg_list[1] = {raw.data()};
  PJRT_Buffer** out_list[1] = {outs.data()};
  auto opts = zeroed<PJRT_ExecuteOptions>(PJRT_ExecuteOptions_STRUCT_SIZE);
  // Only arguments the module marks (tf.aliasing_output) can be donated, and
  // only those in `donated_args` are: every other argument is explicitly
  // protected (a marked one left out is copied by the plugin).
  std::vector<int64_t> keep;
  if (aliasing || !donated_args.empty()) {
    keep.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      bool donated = false;
      for (int d : donated_args) donated = donated || d == static_cast<int>(i);
      if (!donated) keep.push_back(static_cast<int64_t>(i));
    }
    opts.non_donatable_input_indices = keep.data();
    opts.num_non_donatable_input_indices = keep.size();
  }
  auto a = zeroed<PJRT_LoadedExecutable_Execute_Args>(PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE);
  a.executable = exe.raw();
  a.options = &opts;
  a.argument_lists = arg_list;
  a.num_devices = 1;
  a.num_args = args.size();
  a.output_lists = out_list;
  a.execute_device = devices_.at(device);
  PJRT_Event* done[1] = {nullptr};
  a.device_complete_events = done;
  check(api_->PJRT_LoadedExecutable_Execute(&a), "LoadedExecutable_Execute");
  // A donated argument's memory now belongs to a result: its handle is dead,
  // and is destroyed when this execution is complete (see InFlight).
  InFlight entry{done[0], {}, 0, nullptr};
  for (int d : donated_args) {
    entry.donated.push_back(raw[d]);
    args[d]->release();
  }
  if (g_keep_last.load(std::memory_order_relaxed)) t_last_done.reset();
  if (entry.done) {
    track(device, std::move(entry));
  } else {
    retire(entry);
  }
  std::vector<BufferPtr> result;
  result.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    result.push_back(std::make_shared<Buffer>(outs[i], out_types[i].elem, out_types[i].dims, device));
  return result;
}

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kCheckReadyAfter = 64;   // queue length at which ready events are dropped
constexpr size_t kMaxInFlight = 2048;     // queue length at which the host waits

bool event_ready(const PJRT_Api* api, PJRT_Event* ev) {
  auto r = zeroed<PJRT_Event_IsReady_Args>(PJRT_Event_IsReady_Args_STRUCT_SIZE);
  r.event = ev;
  PJRT_Error* e = api->PJRT_Event_IsReady(&r);
  if (e) {
    destroy_error(api, e);
    return true;
  }
  return r.is_ready;
}
}  // namespace

void Client::retire(InFlight& entry) {
  if (entry.done_ns) {
    int64_t expected = 0;
    entry.done_ns->compare_exchange_strong(expected, now_ns());
  }
  if (entry.host_done) entry.host_done->fire();
  for (PJRT_Buffer* b : entry.donated) destroy_buffer(api_, b);
  entry.donated.clear();
  destroy_event(api_, entry.done);
  entry.done = nullptr;
}

namespace {
// PJRT_Event_OnReady callback: stamps the execution's completion time.
void stamp_done(PJRT_Error* error, void* arg) {
  auto* slot = static_cast<std::shared_ptr<std::atomic<int64_t>>*>(arg);
  int64_t expected = 0;
  (*slot)->compare_exchange_strong(expected, now_ns());
  delete slot;
  if (error && g_api) destroy_error(g_api, error);
}
}  // namespace

void Client::track(int device, InFlight entry) {
  std::vector<InFlight> wait;
  std::vector<InFlight> ready;
  entry.done_ns = std::make_shared<std::atomic<int64_t>>(0);
  if (g_keep_last.load(std::memory_order_relaxed)) t_last_done = entry.done_ns;
  {
    auto on = zeroed<PJRT_Event_OnReady_Args>(PJRT_Event_OnReady_Args_STRUCT_SIZE);
    on.event = entry.done;
    on.callback = &stamp_done;
    on.user_arg = new std::shared_ptr<std::atomic<int64_t>>(entry.done_ns);
    PJRT_Error* e = api_->PJRT_Event_OnReady(&on);
    if (e) {  // no callback: the time is taken when the host sees it complete
      delete static_cast<std::shared_ptr<std::atomic<int64_t>>*>(on.user_arg);
      destroy_error(api_, e);
    }
  }
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto& q = pending_[device];
    entry.seq = ++issued_[device];
    q.push_back(std::move(entry));
    if (q.size() >= kCheckReadyAfter) {
      while (!q.empty() && event_ready(api_, q.front().done)) {
        ready.push_back(std::move(q.front()));
        q.pop_front();
      }
    }
    while (q.size() > kMaxInFlight) {
      wait.push_back(std::move(q.front()));
      q.pop_front();
    }
  }
  for (auto& r : ready) retire(r);
  for (auto& w : wait) {
    PJRT_Error* e = await_event(api_, w.done);
    retire(w);
    check(e, "waiting for earlier work");
  }
}

void Client::await_all(std::vector<InFlight>& entries) {
  std::string first_error;
  for (auto& entry : entries) {
    PJRT_Error* e = await_event(api_, entry.done);
    retire(entry);
    if (e && first_error.empty()) {
      try {
        check(e, "device execution");
      } catch (const Error& err) {
        first_error = err.what();
      }
    } else {
      destroy_error(api_, e);
    }
  }
  if (!first_error.empty()) throw Error(first_error, 0);
}

void Client::synchronize(int device) {
  std::vector<InFlight> wait;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    for (size_t d = 0; d < pending_.size(); ++d) {
      if (device >= 0 && static_cast<int>(d) != device) continue;
      for (auto& p : pending_[d]) wait.push_back(std::move(p));
      pending_[d].clear();
    }
  }
  await_all(wait);
}

Client::Marker Client::mark(int device) {
  Marker m;
  m.device = device;
  m.marked_ns = now_ns();
  std::lock_guard<std::mutex> lock(events_mutex_);
  m.seq = issued_.at(device);
  for (const auto& e : pending_[device])
    if (e.done_ns) m.done_ns.push_back(e.done_ns);
  return m;
}

bool Client::ready(const Marker& m) {
  for (const auto& t : m.done_ns)
    if (t->load() == 0) return false;
  return true;
}

void Client::wait(const Marker& m) {
  if (ready(m)) return;
  std::vector<InFlight> wait;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto& q = pending_.at(m.device);
    while (!q.empty() && q.front().seq <= m.seq) {
      wait.push_back(std::move(q.front()));
      q.pop_front();
    }
  }
  await_all(wait);
  // Entries another thread took off the queue are retired (and stamped) by it.
  while (!ready(m)) std::this_thread::yield();
}

int64_t Client::completion_ns(const Marker& m) {
  int64_t t = m.marked_ns;
  for (const auto& d : m.done_ns) t = std::max(t, d->load());
  return t;
}

int64_t Client::elapsed_ns(const Marker& a, const Marker& b) {
  wait(a);
  wait(b);
  return completion_ns(b) - completion_ns(a);
}

size_t Client::donated_in_flight() {
  std::lock_guard<std::mutex> lock(events_mutex_);
  size_t n = 0;
  for (const auto& q : pending_)
    for (const auto& e : q) n += e.donated.size();
  return n;
}

Client::DeviceMemory Client::device_memory(int device) const {
  auto a = zeroed<PJRT_Device_MemoryStats_Args>(PJRT_Device_MemoryStats_Args_STRUCT_SIZE);
  a.device = devices_.at(device);
  PJRT_Error* e = api_->PJRT_Device_MemoryStats(&a);
  if (e) {
    destroy_error(api_, e);
    return {};
  }
  return {a.bytes_in_use, a.bytes_limit_is_set ? a.bytes_limit : -1};
}

}  // namespace ttpu::pjrt
