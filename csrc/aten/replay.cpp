// Replay of compiled graphs. The first call of a compiled FX graph runs its
// ATen ops through the lowerings under DeferAndFuse (one fused executable);
// while it runs, the flushed graph is captured and related to the call's
// arguments and results: which graph argument is which argument tensor's
// storage, which results become new output storages, which replace an
// argument's storage (in-place updates such as optimizer state), and which
// outputs are the argument tensors themselves. Later calls with the same
// argument layout run that executable directly on the arguments' current
// buffers: no Python op dispatch, no recording, no structural hashing.
//
// Anything the capture cannot account for exactly (a second flush, an op that
// ran eagerly, a result owned by someone else such as the RNG state, an input
// buffer that is not an argument's and would be consumed) makes the graph
// non-replayable, and it keeps the recording path.
#include <torch/extension.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "aten/common.h"
#include "runtime/checks.h"
#include "runtime/deferred.h"
#include "runtime/trace.h"

namespace py = pybind11;

namespace ttpu::aten {

namespace {

struct Program {
  runtime::CompiledOpPtr compiled;
  int device = 0;
  struct Input {
    int arg = -1;             // argument whose storage's buffer this is, or -1
    BufferPtr constant;       // otherwise a buffer made during recording (offsets, literals)
    TensorType type;
  };
  std::vector<Input> inputs;
  std::vector<std::pair<int, int>> mutations;  // (argument, result): the argument's storage gets the result
  struct Output {
    enum Kind { None, Arg, Fresh, ArgView } kind = None;
    int arg = -1;    // Arg, ArgView
    int group = -1;  // Fresh: the new storage it lives in
    at::ScalarType dtype = at::kFloat;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
  };
  std::vector<Output> outputs;
  std::vector<std::pair<size_t, int>> groups;  // new storages: (nbytes, result)
  std::vector<bool> donated;                   // per input
  struct CheckOut {
    int result;
    ops::CheckSpec spec;
    std::string op;
  };
  std::vector<CheckOut> checks;  // results that are device-side check flags
};

struct CaptureState {
  std::vector<std::weak_ptr<pjrt::Buffer>> arg_buffers;  // each argument's storage buffer at the start
  uint64_t executions = 0;
  uint64_t rng_draws = 0;
  uint64_t downloads = 0;
};
CaptureState g_state;

bool is_tpu(const py::handle& o) {
  if (!THPVariable_Check(o.ptr())) return false;
  return THPVariable_Unpack(o.ptr()).is_privateuseone();
}

std::vector<at::Tensor> tensors_of(const py::list& args) {
  std::vector<at::Tensor> out;
  for (auto a : args) out.push_back(is_tpu(a) ? THPVariable_Unpack(a.ptr()) : at::Tensor());
  return out;
}

// Arms the capture of the graph the next flush runs.
void capture_begin(const py::list& args) {
  runtime::sync_thread("compiled graph inputs");
  g_state = CaptureState{};
  for (const at::Tensor& t : tensors_of(args))
    g_state.arg_buffers.push_back(t.defined() ? std::weak_ptr<pjrt::Buffer>(handle_of(t).buffer)
                                              : std::weak_ptr<pjrt::Buffer>());
  g_state.executions = runtime::stats().executions.load();
  g_state.rng_draws = rng_draws();
  g_state.downloads = runtime::stats().device_to_host.load();
  runtime::arm_capture();
}

// Returns (program or None, reason it is not replayable).
py::tuple capture_end(const py::list& args, const py::list& outputs) {
  auto graph = runtime::take_capture();
  auto refuse = [](const std::string& why) { return py::make_tuple(py::none(), why); };
  if (!graph) return refuse("the call ran no graph or more than one");
  if (runtime::stats().executions.load() - g_state.executions != 1)
    return refuse("an op ran outside the fused graph");
  if (runtime::stats().device_to_host.load() != g_state.downloads)
    return refuse("an op read device data on the host (host path or CPU fallback)");
  if (rng_draws() != g_state.rng_draws) return refuse("the graph draws random numbers (RNG state is advanced per call)");
  std::vector<at::Tensor> ts = tensors_of(args);
  auto prog = std::make_shared<Program>();
  prog->compiled = graph->compiled;
  prog->device = graph->results.empty() ? 0 : graph->results[0]->device();
  std::unordered_map<const pjrt::Buffer*, int> result_of;
  for (size_t r = 0; r < graph->results.size(); ++r) result_of[graph->results[r].get()] = static_cast<int>(r);
  std::vector<bool> result_used(graph->results.size(), false);
  const auto& donated = graph->compiled->donated_args;
  for (size_t a = 0; a < graph->args.size(); ++a) {
    Program::Input in;
    in.type = graph->args[a]->type();
    for (size_t i = 0; i < g_state.arg_buffers.size() && in.arg < 0; ++i)
      if (auto b = g_state.arg_buffers[i].lock(); b && b.get() == graph->args[a].get()) in.arg = static_cast<int>(i);
    bool is_donated = std::find(donated.begin(), donated.end(), static_cast<int>(a)) != donated.end();
    if (in.arg < 0) {
      if (is_donated) return refuse("the graph consumes a buffer that is not an argument's");
      in.constant = graph->args[a];
    }
    prog->inputs.push_back(in);
    prog->donated.push_back(is_donated);
  }
  // In-place updates: an argument whose storage now holds a graph result.
  std::unordered_map<const runtime::StorageHandle*, int> mutated;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].defined()) continue;
    runtime::StorageHandle& h = handle_of(ts[i]);
    auto before = g_state.arg_buffers[i].lock();
    if (h.buffer.get() == before.get() || mutated.count(&h)) continue;
    auto it = result_of.find(h.buffer.get());
    if (it == result_of.end()) return refuse("an argument's storage was replaced outside the graph");
    mutated[&h] = static_cast<int>(i);
    prog->mutations.push_back({static_cast<int>(i), it->second});
    result_used[it->second] = true;
  }
  // A consumed argument buffer must be one the graph replaces.
  for (size_t p = 0; p < prog->inputs.size(); ++p)
    if (prog->donated[p] && !mutated.count(&handle_of(ts[prog->inputs[p].arg])))
      return refuse("the graph consumes an argument buffer it does not replace");
  // Outputs.
  std::unordered_map<const runtime::StorageHandle*, int> group_of;
  for (auto o : outputs) {
    Program::Output out;
    if (o.is_none()) {
      prog->outputs.push_back(out);
      continue;
    }
    if (!is_tpu(o)) return refuse("an output is not a tpu tensor");
    at::Tensor t = THPVariable_Unpack(o.ptr());
    out.dtype = t.scalar_type();
    out.sizes = t.sizes().vec();
    out.strides = t.strides().vec();
    out.offset = t.storage_offset();
    for (size_t i = 0; i < ts.size() && out.kind == Program::Output::None; ++i) {
      if (!ts[i].defined()) continue;
      if (ts[i].unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
        out.kind = Program::Output::Arg;
        out.arg = static_cast<int>(i);
      } else if (&handle_of(ts[i]) == &handle_of(t)) {
        out.kind = Program::Output::ArgView;
        out.arg = static_cast<int>(i);
      }
    }
    if (out.kind == Program::Output::None) {
      runtime::StorageHandle& h = handle_of(t);
      auto g = group_of.find(&h);
      if (g == group_of.end()) {
        auto it = h.buffer ? result_of.find(h.buffer.get()) : result_of.end();
        if (it == result_of.end()) return refuse("an output's storage is not a graph result");
        g = group_of.emplace(&h, static_cast<int>(prog->groups.size())).first;
        prog->groups.push_back({h.nbytes, it->second});
        result_used[it->second] = true;
      }
      out.kind = Program::Output::Fresh;
      out.group = g->second;
    }
    prog->outputs.push_back(out);
  }
  for (size_t r = 0; r < result_used.size(); ++r) {
    if (result_used[r]) continue;
    Program::CheckOut check{static_cast<int>(r), {}, {}};
    if (!runtime::find_pending_check(graph->results[r].get(), &check.spec, &check.op))
      return refuse("a graph result is held outside the call (RNG state or a global)");
    prog->checks.push_back(std::move(check));
  }
  return py::make_tuple(py::cast(prog), "");
}

// Runs the program on `args`; None when this call's buffers do not fit it
// (the caller then takes the recording path).
py::object replay(const std::shared_ptr<Program>& prog, const py::list& args) {
  std::vector<at::Tensor> ts = tensors_of(args);
  runtime::sync_thread("compiled graph inputs");
  std::vector<BufferPtr> inputs;
  inputs.reserve(prog->inputs.size());
  for (const auto& in : prog->inputs) {
    if (in.arg < 0) {
      inputs.push_back(in.constant);
      continue;
    }
    if (in.arg >= static_cast<int>(ts.size()) || !ts[in.arg].defined()) return py::none();
    const at::Tensor& t = ts[in.arg];
    if (t.device().index() != prog->device) return py::none();
    BufferPtr b = handle_of(t).buffer;
    if (!b || runtime::pending(b.get()) || !(b->type() == in.type)) return py::none();
    inputs.push_back(std::move(b));
  }
  // A buffer is consumed only when its storage and this list are its sole
  // owners. One that is shared (a clone sharing it, a strict op still holding
  // it) is passed without donation and the plugin copies it.
  std::vector<int> donate_now;
  for (size_t p = 0; p < inputs.size(); ++p) {
    if (!prog->donated[p]) continue;
    long uses = 0;
    for (const auto& b : inputs) uses += b.get() == inputs[p].get();
    if (uses == 1 && inputs[p].use_count() == 2) donate_now.push_back(static_cast<int>(p));
  }
  std::vector<pjrt::Buffer*> raw;
  for (const auto& b : inputs) raw.push_back(b.get());
  // The allocator places new storages on the current device.
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(prog->device)));
  std::vector<BufferPtr> produced;
  try {
    runtime::trace::CompiledScope traced;  // the profiler's device track calls it a compiled graph
    produced = runtime::execute(*prog->compiled, raw, prog->device, donate_now);
  } catch (const std::exception& e) {
    rethrow_as_torch_error(std::string("compiled graph: ") + e.what());
  }
  inputs.clear();
  try {
    for (const auto& check : prog->checks) runtime::add_check(produced[check.result], check.spec, check.op);
  } catch (...) {
    rethrow_as_torch_error("compiled graph");
  }
  for (auto [arg, r] : prog->mutations) {
    handle_of(ts[arg]).buffer = produced[r];
    ts[arg].unsafeGetTensorImpl()->bump_version();
  }
  std::vector<c10::Storage> storages;
  for (auto [nbytes, r] : prog->groups) {
    c10::Storage s(c10::Storage::use_byte_size_t(), nbytes, tpu_allocator(), /*resizable=*/true);
    static_cast<runtime::StorageHandle*>(s.data_ptr().get_context())->buffer = produced[r];
    storages.push_back(std::move(s));
  }
  py::list out;
  for (const auto& o : prog->outputs) {
    switch (o.kind) {
      case Program::Output::None:
        out.append(py::none());
        break;
      case Program::Output::Arg:
        out.append(args[o.arg]);
        break;
      case Program::Output::ArgView:
      case Program::Output::Fresh: {
        c10::Storage s = o.kind == Program::Output::Fresh ? storages[o.group] : ts[o.arg].storage();
        auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(s),
                                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                           caffe2::TypeMeta::fromScalarType(o.dtype));
        t.unsafeGetTensorImpl()->set_sizes_and_strides(o.sizes, o.strides, o.offset);
        out.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(t))));
        break;
      }
    }
  }
  return out;
}

// The argument layout a captured program is valid for, as bytes: per tensor
// its sizes, strides, storage offset, dtype, device and which earlier
// argument (if any) shares its storage; per Python scalar its type and value
// (the recorded graph holds them as constants). None when the call cannot be
// replayed: a tensor not on 'tpu' (its value is uploaded while recording) or
// an argument of another kind.
py::object replay_key(const py::list& args) {
  std::string key;
  key.reserve(args.size() * 48);
  std::vector<const c10::StorageImpl*> storages;
  auto put = [&key](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const py::handle& a : args) {
    if (THPVariable_Check(a.ptr())) {
      const at::Tensor& t = THPVariable_Unpack(a.ptr());
      if (!t.is_privateuseone()) return py::none();
      key += 'T';
      put(t.dim());
      for (int64_t d : t.sizes()) put(d);
      for (int64_t d : t.strides()) put(d);
      put(t.storage_offset());
      put(static_cast<int64_t>(t.scalar_type()) << 16 | t.device().index());
      const c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
      auto it = std::find(storages.begin(), storages.end(), s);
      put(it - storages.begin());
      if (it == storages.end()) storages.push_back(s);
    } else if (a.is_none()) {
      key += 'N';
    } else if (PyBool_Check(a.ptr())) {
      key += a.ptr() == Py_True ? 'B' : 'b';
    } else if (PyLong_Check(a.ptr())) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(a.ptr(), &overflow);
      if (overflow) return py::none();
      key += 'I';
      put(v);
    } else if (PyFloat_Check(a.ptr())) {
      double v = PyFloat_AS_DOUBLE(a.ptr());
      int64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      key += 'F';
      put(bits);
    } else {
      return py::none();
    }
  }
  return py::bytes(key);
}

}  // namespace

void register_replay(py::module& m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "_GraphProgram")
      .def_property_readonly("num_inputs", [](const Program& p) { return p.inputs.size(); })
      .def_property_readonly("num_mutations", [](const Program& p) { return p.mutations.size(); });
  m.def("_capture_begin", &capture_begin);
  m.def("_capture_end", &capture_end);
  m.def("_replay", &replay);
  m.def("_replay_key", &replay_key);
}

}  // namespace ttpu::aten
