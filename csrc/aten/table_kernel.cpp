// The table kernel (table_kernel.h): device checks, one marshalling pass,
// then run (Strict, Debug) or record (DeferAndFuse); result types from
// PyTorch's meta functions; results delivered or written through views.
#include "aten/table_kernel.h"

#include <map>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include "runtime/checks.h"
#include "runtime/trace.h"

namespace ttpu::aten {

namespace {

// The type a lowering computes a stored type in (complex32 and bcomplex32 in complex64).
ElemType widened(ElemType t) { return shlo::is_packed_complex(t) ? ElemType::C64 : t; }

bool packed_complex(at::ScalarType t) { return t == at::kComplexHalf || t == at::kBComplex32; }

// Runs the op on zero-filled CPU twins of the tpu tensors (same sizes and
// strides) so that CPU's own checks raise their error; the CPU result is
// discarded. For error paths only: it allocates the real sizes.
// `out_dtypes` (with `plan`), if given, replaces the dtypes of the out=
// tensors' twins, in order.
// `keep_aliasing`: tensors that share a storage get twins sharing one CPU
// storage (same offsets and strides), so CPU's overlap checks see what ours
// would write.
void run_on_cpu_twins(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                      const OpPlan* plan = nullptr, const std::vector<at::ScalarType>* out_dtypes = nullptr,
                      bool keep_aliasing = false) {
  std::map<const c10::StorageImpl*, at::Tensor> shared;  // keep_aliasing: a byte base per storage
  std::map<const c10::TensorImpl*, at::Tensor> same;     // keep_aliasing: one twin per tensor (out= an input)
  auto twin = [&](const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
    if (!t.defined() || !t.is_privateuseone()) return t;
    if (keep_aliasing && !dtype) {
      if (auto known = same.find(t.unsafeGetTensorImpl()); known != same.end()) return known->second;
      const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
      auto it = shared.find(key);
      if (it == shared.end())
        it = shared.emplace(key, at::zeros({static_cast<int64_t>(t.storage().nbytes())}, at::kByte)).first;
      at::Tensor twin = at::empty({0}, t.options().device(at::kCPU))
                            .set_(it->second.storage(), t.storage_offset(), t.sizes(), t.strides());
      same.emplace(t.unsafeGetTensorImpl(), twin);
      return twin;
    }
    int64_t extent = static_cast<int64_t>(
        at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.dtype().itemsize(), t.storage_offset()) /
        t.dtype().itemsize());
    return at::zeros({extent}, t.options().device(at::kCPU).dtype(dtype.value_or(t.scalar_type())))
        .as_strided(t.sizes(), t.strides(), t.storage_offset());
  };
  size_t next_out = 0;
  auto out_dtype = [&](size_t i) -> std::optional<at::ScalarType> {
    if (!out_dtypes || !plan || i >= plan->args.size() || !plan->args[i].is_out || next_out >= out_dtypes->size())
      return std::nullopt;
    return (*out_dtypes)[next_out++];
  };
  torch::jit::Stack cpu;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      cpu.emplace_back(twin(v.toTensor(), out_dtype(i)));
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorVector()) l.push_back(twin(t, out_dtype(i)));
      cpu.emplace_back(l);
    } else if (v.isList() && !v.isIntList() && !v.isDoubleList() && !v.isBoolList()) {
      c10::List<std::optional<at::Tensor>> l;
      for (const c10::IValue& e : v.toListRef()) {
        if (absent(e)) l.push_back(std::nullopt);
        else l.push_back(twin(e.toTensor()));
      }
      cpu.emplace_back(l);
    } else {
      cpu.push_back(v);
    }
  }
  op.callBoxed(cpu);  // throws CPU's error; the CPU result is discarded
}

// CPU's overlap refusals ("... refer to a single memory location. Please
// clone() the tensor ..."), told apart from the twins' other errors.
bool is_overlap_refusal(const std::exception& e) {
  return std::string(e.what()).find("single memory location") != std::string::npos;
}

// Whether CPU twins of the arguments are cheap enough to build on an error
// path (a shape error on a huge tensor must not allocate its CPU copy).
bool twins_are_small(const std::vector<c10::IValue>& args) {
  constexpr size_t kLimit = 16 << 20;
  size_t bytes = 0;
  auto add = [&](const at::Tensor& t) {
    if (t.defined() && t.is_privateuseone()) bytes += t.storage().nbytes();
  };
  for (const c10::IValue& v : args) {
    if (v.isTensor()) add(v.toTensor());
    else if (v.isTensorList()) for (const at::Tensor& t : v.toTensorVector()) add(t);
  }
  return bytes <= kLimit;
}

// Empty inputs are where meta functions and CPU kernels disagree most
// (max(dim) over a zero-size dim: meta gives an empty result, CPU an
// IndexError), so a new signature with an empty input tensor (not an
// out= or written one) runs once on CPU twins and raises CPU's IndexError.
// Other errors of the twins are not CPU's answer for the real values (the
// twins are zeros: integer division by them fails), so they are ignored;
// ops drawing from a generator keep their own checks.
void check_empty_inputs(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, const OpPlan& plan) {
  bool empty = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    if (v.isGenerator()) return;
    if (i < plan.args.size() && plan.args[i].is_mutated) continue;
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().numel() == 0) empty = true;
  }
  if (!empty || !twins_are_small(args)) return;
  try {
    run_on_cpu_twins(op, args);
  } catch (const c10::IndexError&) {
    throw;
  } catch (const std::exception&) {
  }
}

// complex32 is half supported on CPU (add, mul and data movement, not exp
// or sum), bcomplex32 less (data movement, eq/ne): a new signature with such
// a tensor or result runs once on CPU twins
// and raises CPU's refusal, which names the dtype. Other errors of the zero
// twins are not CPU's answer for the real values and are ignored.
void check_complex32(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                     const std::vector<TensorType>& outs) {
  bool c32 = false;
  for (const TensorType& t : outs) c32 = c32 || shlo::is_packed_complex(t.elem);  // f16 / (1+2j)
  auto see = [&](const at::Tensor& t) { c32 = c32 || (t.defined() && packed_complex(t.scalar_type())); };
  for (const c10::IValue& v : args) {
    if (v.isTensor()) see(v.toTensor());
    else if (v.isTensorList()) for (const at::Tensor& t : v.toTensorVector()) see(t);
  }
  if (!c32 || !twins_are_small(args)) return;
  try {
    run_on_cpu_twins(op, args);
  } catch (const c10::NotImplementedError&) {
    throw;
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (what.find("ComplexHalf") != std::string::npos || what.find("BComplex32") != std::string::npos) throw;
  } catch (const std::exception&) {
  }
}

// The trailing results that are device-side check flags go to the runtime,
// which reads them at the next sync point (at once in Debug mode).
void take_checks(const c10::OperatorHandle& op, std::vector<BufferPtr>& outputs,
                 const std::vector<ops::CheckSpec>& checks) {
  if (checks.empty()) return;
  const size_t first = outputs.size() - checks.size();
  std::string name = op.schema().operator_name().name;
  const std::string& overload = op.schema().operator_name().overload_name;
  if (!overload.empty()) name += "." + overload;
  std::vector<BufferPtr> flags(outputs.begin() + first, outputs.end());
  outputs.resize(first);
  for (size_t k = 0; k < checks.size(); ++k) runtime::add_check(flags[k], checks[k], name);
}

// Debug mode: wait for this op, so a runtime failure is reported here, and
// optionally reject NaN/Inf results.
void debug_check(const c10::OperatorHandle& op, const std::vector<BufferPtr>& outputs,
                 const std::vector<bool>& present) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    runtime::client().await_ready(*outputs[k]);
    if (!runtime::debug_nans() || (k < present.size() && !present[k])) continue;
    ElemType e = outputs[k]->type().elem;
    if (!shlo::is_float(e) || outputs[k]->type().numel() == 0) continue;
    at::Tensor host = at::empty(outputs[k]->type().dims, at::TensorOptions().dtype(scalar_type_of(e)));
    runtime::download(*outputs[k], host.data_ptr());
    TORCH_CHECK(host.isfinite().all().item<bool>(), "torch_tpu (TORCH_TPU_DEBUG_NANS): result ", k, " of ",
                op.schema().operator_name(), " contains NaN or Inf");
  }
}

void store(const at::Tensor& target, const BufferPtr& value) {
  const TensorType& vt = value->type();
  if (!target.sizes().equals(vt.dims)) at::native::resize_output(target, vt.dims);
  if (target.numel() == 0) return;
  if (elem_of(target.scalar_type()) == vt.elem) {
    write(target, value);
  } else {
    write(target, runtime::convert_broadcast(value, type_of(target), value->device()));
  }
}

// CPU's TensorIterator error for a result written into a tensor of a dtype
// it cannot be cast to (out= and in-place; meta functions do not check).
void check_castable(at::ScalarType result, at::ScalarType into) {
  TORCH_CHECK(at::canCast(result, into), "result type ", result, " can't be cast to the desired output type ", into);
}

// CPU lays a result out as its inputs are: x.t() + 1 is transposed, a
// channels_last input gives a channels_last result from pointwise ops (a
// contiguous first input a contiguous one), convolutions, batch norm,
// pooling, cat... The meta function computes that layout, so when an input
// is not contiguous, the inputs' strides join the key and the cache miss
// records the layout the meta function gives each result; the module returns
// the result in that memory order and the tensor gets the meta strides.
// Graphs traced by torch.compile rely on those strides (a view of a result
// that is only viewable in CPU's layout). Cheap when every input is
// contiguous (one cached flag per tensor).
bool non_contiguous(const at::Tensor& t) {
  return t.defined() && t.dim() >= 2 && !t.is_contiguous();
}
bool layout_key(const std::vector<c10::IValue>& args, std::string& key) {
  bool any = false;
  for (const c10::IValue& v : args) {
    if (v.isTensor()) {
      any = any || non_contiguous(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) any = any || non_contiguous(t);
    }
  }
  if (!any) return false;
  std::string classes = "|lay:";
  auto add = [&](const at::Tensor& t) {
    if (!t.defined() || t.is_contiguous()) {
      classes += 'c';
    } else {
      classes += 's';
      for (int64_t st : t.strides()) classes += std::to_string(st) + ',';
    }
  };
  for (const c10::IValue& v : args) {
    if (v.isTensor()) {
      add(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) add(t);
    }
  }
  key += classes;
  return true;
}

// Channels-last (2-d or 3-d) and not also contiguous (size-1 dims make both true).
bool strictly_channels_last(const at::Tensor& t) {
  return t.defined() && (t.dim() == 4 || t.dim() == 5) && !t.is_contiguous() &&
         t.is_contiguous(t.dim() == 4 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::ChannelsLast3d);
}
// Dimension order of a channels-last tensor in memory: N, spatial..., C.
std::vector<int64_t> channels_last_perm(int64_t rank) {
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < rank; ++d) perm.push_back(d);
  perm.push_back(1);
  return perm;
}

bool permutes(const ResultLayout& l, const TensorType& t) {
  return !l.perm.empty() && static_cast<int64_t>(l.perm.size()) == t.rank();
}
TensorType physical_type(TensorType t, const ResultLayout& l) {
  if (!permutes(l, t)) return t;
  std::vector<int64_t> dims;
  for (int64_t d : l.perm) dims.push_back(t.dims[d]);
  t.dims = dims;
  return t;
}

// A result buffer in memory order as a tensor of PyTorch's sizes with the
// meta function's strides (not a view: its own storage, like CPU's result).
at::Tensor wrap_result(const BufferPtr& value, at::ScalarType dtype, const ResultLayout* l) {
  at::Tensor t = wrap(value, dtype);
  if (!l || !permutes(*l, value->type())) return t;
  const std::vector<int64_t>& phys = value->type().dims;
  std::vector<int64_t> sizes(phys.size());
  for (size_t i = 0; i < phys.size(); ++i) sizes[l->perm[i]] = phys[i];
  std::vector<int64_t> strides = l->strides;
  if (strides.empty()) {  // known only in memory order (convolution): dense in it
    strides.assign(phys.size(), 1);
    int64_t next = 1;
    for (size_t i = phys.size(); i-- > 0;) strides[l->perm[i]] = next, next *= std::max<int64_t>(phys[i], 1);
  }
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return t;
}

}  // namespace

void TableKernel::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  std::call_once(planned_, [&] {
    plan_ = make_plan(op.schema());
    cpu_check_ = cpu_kernel_check(op.schema().name().substr(op.schema().name().find("::") + 2));
    if (plan_.variant == Variant::Out) {
      functional_ = functional_sibling(op.schema(), plan_);
      if (functional_) functional_plan_ = make_plan(functional_->schema());
    } else if (plan_.variant == Variant::Inplace) {
      inplace_functional_ = inplace_sibling(op.schema());
      if (inplace_functional_) inplace_functional_plan_ = make_plan(inplace_functional_->schema());
    }
  });
  try {
    run(op, stack);
  } catch (...) {
    const c10::OperatorName& name = op.schema().operator_name();
    rethrow_as_torch_error(name.name + (name.overload_name.empty() ? "" : "." + name.overload_name) + " (" + describe_args(*stack, plan_.args.size()) + ")");
  }
}

void TableKernel::run(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n = plan_.args.size();
  std::vector<c10::IValue> args(stack->end() - n, stack->end());
  // CPU's kernel checks, before its shape checks (bool - float of
  // mismatched shapes raises the bool error) and on every call (they may
  // read Scalar values, which are not part of the executable's key).
  if (cpu_check_) cpu_check_(args);

  // The device: the first tpu tensor, and every other tpu tensor must agree.
  int dev = -1;
  auto see = [&](const at::Tensor& t) {
    if (!t.defined() || !t.is_privateuseone()) return;
    int d = device_index(t);
    if (dev < 0) dev = d;
    TORCH_CHECK(d == dev, "Expected all tensors to be on the same device, but found at least two devices, tpu:", dev,
                " and tpu:", d, "!");
  };
  for (const auto& v : args) {
    if (v.isTensor()) see(v.toTensor());
    else if (v.isTensorList()) for (const at::Tensor& t : v.toTensorVector()) see(t);
  }
  if (dev < 0) dev = current_device();
  // An out= tensor on the host: the error CUDA gives (the meta function
  // would otherwise fail on a meta -> cpu copy).
  for (size_t i = 0; i < n; ++i) {
    if (!plan_.args[i].is_out || !args[i].isTensor()) continue;
    const at::Tensor& o = args[i].toTensor();
    TORCH_CHECK(!o.defined() || o.is_privateuseone(),
                "Expected all tensors to be on the same device, but found at least two devices, tpu:", dev, " and ",
                o.device(), "!");
  }
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(dev)));

  const bool out_beside_input = plan_.variant != Variant::Functional && check_overlapping_writes(op, args);

  // One Marshalled per thread is reused, so the hot path allocates no
  // argument vectors; an op dispatched while it is in use gets its own.
  thread_local Marshalled reused;
  thread_local bool reused_busy = false;
  std::optional<Marshalled> own;
  Marshalled& m = reused_busy ? own.emplace() : reused;
  struct Release {
    Marshalled& m;
    bool reused;
    ~Release() {
      m.inputs.clear();  // holds buffers alive otherwise
      if (reused) reused_busy = false;
    }
  } release{m, !reused_busy};
  reused_busy = true;
  marshal(plan_, *lowering_, op.schema().operator_name(), args, dev, m);
  m.layout = plan_.variant == Variant::Functional && layout_key(args, m.key);

  submit(op, args, m, dev, stack, out_beside_input);
}

// The op's signature for this key (result types, layouts, check flags),
// derived once per key by building the module on the first call.
const TableKernel::Signature* TableKernel::signature(const c10::OperatorHandle& op,
                                                     const std::vector<c10::IValue>& args, Marshalled& m) {
  {
    std::lock_guard<std::mutex> lock(signatures_mutex_);
    auto it = signatures_.find(m.key);
    if (it != signatures_.end()) return it->second.get();
  }
  std::shared_ptr<const Signature> sig = learn(op, args, m);
  std::lock_guard<std::mutex> lock(signatures_mutex_);
  return signatures_.emplace(m.key, sig).first->second.get();
}

// Hands the op to the executor of the current mode (runtime/executor.h): it
// runs now (Strict, Debug) or joins the pending graph (DeferAndFuse), from
// the same emitter; the results come back as buffers either way.
void TableKernel::submit(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, Marshalled& m, int dev,
                         torch::jit::Stack* stack, bool out_beside_input) {
  const Signature* sig = signature(op, args, m);
  if (out_beside_input) check_resized_out_overlap(op, args, *sig);
  // two pointers: std::function keeps them inline (no allocation per call)
  runtime::EmitFn fn = [this, sig](shlo::Builder& b, const std::vector<shlo::Value>& ins) {
    return emit(b, ins, *sig, /*known=*/true).results;
  };
  std::vector<BufferPtr> outputs =
      runtime::submit({dev, op.schema().name().c_str(), m.key, m.inputs, sig->submitted, fn});
  take_checks(op, outputs, sig->checks);
  if (runtime::mode() == runtime::Mode::Debug) debug_check(op, outputs, sig->present);
  torch::jit::drop(*stack, plan_.args.size());
  deliver(args, outputs, *sig, stack);
}

// How CPU lays out each result (Signature::layouts), from the meta function
// alone. CPU's convolution gives a channels_last result
// when its input or its weight is channels_last; its meta function says
// contiguous.
std::vector<ResultLayout> TableKernel::result_layouts(const c10::OperatorHandle& op,
                                                      const std::vector<c10::IValue>& args) const {
  std::vector<ResultLayout> layouts;
  std::vector<bool> present;
  try {
    meta_outputs(op, args, plan_, present, &layouts);
  } catch (...) {
    layouts.clear();  // the lowering reports what is wrong
  }
  if (op.schema().name() == "aten::convolution_overrideable" && args.size() > 1 && args[0].isTensor() &&
      args[1].isTensor()) {
    // CPU's convolution gives a channels_last result when its input or its
    // weight is channels_last; the meta function says contiguous.
    const at::Tensor& x = args[0].toTensor();
    layouts.assign(1, {});
    // The result's sizes are known only after the lowering; strides are
    // filled from them when the result is wrapped (empty here).
    if (strictly_channels_last(x) || strictly_channels_last(args[1].toTensor())) layouts[0].perm = channels_last_perm(x.dim());
  }
  return layouts;
}

// What the lowering needs beyond the marshalled arguments, on a cache miss:
// result types from PyTorch's meta function (unless the lowering infers
// them), the common dtype, and the write-back targets' types.
TableKernel::Signature TableKernel::derive(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                           Marshalled& m) {
  Signature sig;
  sig.args = std::move(m.args);
  sig.names = &plan_.names;
  sig.takes = std::move(m.takes);
  sig.views = m.views;
  sig.rng = m.rng;
  sig.precision = m.precision;
  if (!lowering_->infer) {
    try {
      sig.outs = meta_outputs(op, args, plan_, sig.present, m.layout ? &sig.layouts : nullptr, &sig.int_returns);
    } catch (...) {  // c10::Error, or a Python meta function's exception
      // CPU's error (type and words) where the out= dtype is the problem
      if (plan_.variant == Variant::Out) check_out_dtypes(op, args, /*meta_refused=*/true);
      check_out_casts(args);
      // Where meta and CPU word a refusal differently (amax over a
      // zero-size dim: meta's RuntimeError, CPU's IndexError), CPU's error
      // wins: the op runs once on zero-filled CPU twins when they are small.
      if (twins_are_small(args)) run_on_cpu_twins(op, args);
      // A meta function stricter than CPU's kernel about out= dtypes (the
      // Python reference of abs.out wants Float for a complex input; CPU
      // casts the magnitude into a complex out): CPU accepted on the twins
      // above, so the results take the functional sibling's types and
      // store() casts them into out, as CPU does.
      if (plan_.variant != Variant::Out || !twins_are_small(args) || !out_from_functional(args, sig)) throw;
    }
    if (plan_.variant == Variant::Out) check_out_dtypes(op, args);
    check_empty_inputs(op, args, plan_);
    compute_in_result_dtype(args, sig.outs);
    check_inplace_cast(args);
  } else if (plan_.variant == Variant::Out) {
    check_out_dtypes(op, args);  // lowerings that infer their result types (sort, cumsum)
  } else if (m.layout) {
    sig.layouts = result_layouts(op, args);  // a lowering that infers its result types (convolution, cat)
  }
  check_complex32(op, args, sig.outs);
  sig.common = (lowering_->flags & ops::kNoPromotion) ? ElemType::F32 : common_dtype(args, plan_);
  for (int j : lowering_->writeback_args) {
    const c10::IValue& target = args.at(j);
    sig.writeback_types.push_back(target.isTensor() && target.toTensor().defined()
                                      ? std::optional<TensorType>(type_of(target.toTensor()))
                                      : std::nullopt);
  }
  return sig;
}

std::shared_ptr<const TableKernel::Signature> TableKernel::learn(const c10::OperatorHandle& op,
                                                                 const std::vector<c10::IValue>& args, Marshalled& m) {
  std::vector<TensorType> in_types;
  for (const auto& in : m.inputs) in_types.push_back(in->type());
  Signature sig = derive(op, args, m);
  shlo::Builder b;
  std::vector<shlo::Value> ins;
  for (const auto& t : in_types) ins.push_back(b.arg(t));
  Emitted e;
  try {
    e = emit(b, ins, sig, /*known=*/false);
  } catch (const shlo::ElementTypeError& why) {
    // The lowering met a dtype its StableHLO ops do not take. CPU either
    // refuses it too (abs of bool: NotImplementedError) and we raise CPU's
    // error, or computes it and we say the lowering is missing. Only on
    // this error path, once per signature.
    run_on_cpu_twins(op, args);
    TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: no lowering of ", op.schema().operator_name().name,
                                " for these dtypes (", why.what(), "); TORCH_TPU_CPU_FALLBACK=1 runs such ops on CPU");
  }
  const size_t declared = e.outs.size() - e.checks.size();
  sig.outs = e.logical;
  sig.present.assign(e.present.begin(), e.present.begin() + declared);
  sig.checks = e.checks;
  sig.writeback_types.clear();
  sig.submitted = sig.outs;
  for (size_t k = 0; k + lowering_->writeback_args.size() < sig.submitted.size(); ++k)
    if (k < sig.layouts.size() && (k >= sig.present.size() || sig.present[k]))
      sig.submitted[k] = physical_type(sig.submitted[k], sig.layouts[k]);
  sig.submitted.resize(sig.submitted.size() + sig.checks.size(), TensorType{ElemType::S64, {}});
  return std::make_shared<const Signature>(std::move(sig));
}

// Runs the lowering on `in_values` (one per runtime input, in marshalling
// order). `known`: the signature's result types are complete (a replay of a
// recorded op); otherwise they come from derive() or the lowering's own
// inference, and write-backs and checks are appended here.
TableKernel::Emitted TableKernel::emit(shlo::Builder& b, const std::vector<shlo::Value>& in_values,
                                       const Signature& sig, bool known) const {
  std::vector<ops::Arg> largs = sig.args;
  // complex32 and bcomplex32 are storage types only: lowerings see complex64
  // values and result types, and the results are rounded back below (CPU
  // computes ComplexHalf ops in complex<float> and rounds each result too).
  std::vector<shlo::Value> values = sig.views.empty() ? in_values : gather_views(b, in_values, sig.views);
  std::optional<at::ScalarType> promoted;  // of the inputs' dtypes, when one is packed complex
  for (shlo::Value& v : values)
    if (shlo::is_packed_complex(v.type.elem)) promoted = scalar_type_of(v.type.elem);
  if (promoted)
    for (shlo::Value& v : values) {
      promoted = at::promoteTypes(*promoted, scalar_type_of(v.type.elem));
      v = b.convert(v, widened(v.type.elem));
    }
  std::optional<shlo::Value> rng = aten::bind(largs, sig.takes, sig.rng, values);
  const size_t writebacks = lowering_->writeback_args.size();
  std::vector<TensorType> outs = sig.outs;
  std::vector<bool> present = sig.present;
  if (known) {
    outs.resize(outs.size() - writebacks);
    present.resize(present.size() - writebacks);
  }
  std::vector<TensorType> computed = outs;
  for (TensorType& t : computed) t.elem = widened(t.elem);
  ops::LowerCtx ctx{b, largs, computed, present, widened(sig.common), sig.precision, {}};
  ctx.names = sig.names;
  if (rng) ctx.rng.push_back(*rng);
  if (lowering_->infer && !known) {
    outs = lowering_->infer(ctx);
    present = ctx.present;
    ctx.outs = outs;
    // An inferred complex64 result of complex32 inputs is complex32 (cat); bcomplex32 alike.
    if (promoted && packed_complex(*promoted))
      for (TensorType& t : outs)
        if (t.elem == ElemType::C64) t.elem = elem_of(*promoted);
  }
  std::vector<shlo::Value> results = lowering_->fn(ctx);
  TORCH_CHECK(results.size() == outs.size() + writebacks, "torch_tpu internal error: lowering '", lowering_->name,
              "' returned ", results.size(), " results, expected ", outs.size() + writebacks);
  const size_t declared = outs.size();
  for (size_t j = 0; j < writebacks; ++j) {
    if (known) {
      outs.push_back(sig.outs[declared + j]);
    } else {
      const std::optional<TensorType>& wt = sig.writeback_types[j];
      outs.push_back(wt ? *wt : results[declared + j].type);
    }
    present.push_back(true);
  }
  if (present.size() < outs.size()) present.resize(outs.size(), true);
  for (size_t k = 0; k < results.size(); ++k) {
    if (k < present.size() && !present[k]) {
      results[k] = b.constant(0, outs[k].elem, outs[k].dims);
      continue;
    }
    results[k] = b.convert(results[k], outs[k].elem);
    if (results[k].type.dims != outs[k].dims) {
      TORCH_CHECK(results[k].type.numel() == outs[k].numel(), "torch_tpu internal error: lowering '",
                  lowering_->name, "' produced ", results[k].type.str(), ", expected ", outs[k].str());
      results[k] = b.reshape(results[k], outs[k].dims);
    }
  }
  // A permuted result leaves the module in its memory order (declared results only).
  std::vector<TensorType> logical = outs;
  for (size_t k = 0; k < declared && k < sig.layouts.size(); ++k) {
    const ResultLayout& l = sig.layouts[k];
    if (!permutes(l, outs[k]) || (k < present.size() && !present[k])) continue;
    results[k] = b.transpose(results[k], l.perm);
    outs[k] = physical_type(outs[k], l);
  }
  std::vector<ops::CheckSpec> specs;
  for (const ops::Check& ch : ctx.checks) {
    results.push_back(ch.bad);
    outs.push_back(ch.bad.type);
    present.push_back(true);
    specs.push_back(ch.spec);
  }
  return Emitted{results, outs, present, specs, logical};
}

// Meta results of the functional sibling of an out= overload for the call's
// non-out arguments; false when there is none or its meta function refuses.
bool TableKernel::functional_meta(const std::vector<c10::IValue>& args, std::vector<TensorType>& outs,
                                  std::vector<bool>& present) {
  if (!functional_) return false;
  std::vector<c10::IValue> fargs;
  for (size_t i = 0; i < args.size(); ++i)
    if (!plan_.args[i].is_out) fargs.push_back(args[i]);
  try {
    outs = meta_outputs(*functional_, fargs, functional_plan_, present);
  } catch (...) {
    return false;
  }
  return true;
}

// Result dtypes of the functional sibling of an out= overload; empty when
// there is none or its meta function refuses the arguments.
std::vector<at::ScalarType> TableKernel::functional_dtypes(const std::vector<c10::IValue>& args) {
  std::vector<at::ScalarType> dtypes;
  std::vector<bool> present;
  std::vector<TensorType> fouts;
  if (!functional_meta(args, fouts, present)) return dtypes;
  for (const TensorType& t : fouts) dtypes.push_back(scalar_type_of(t.elem));
  return dtypes;
}

// Result types of an out= call from its functional sibling's meta function,
// the out tensors' count and order; false when there is none or it refuses.
bool TableKernel::out_from_functional(const std::vector<c10::IValue>& args, Signature& sig) {
  size_t n_out = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (plan_.args[i].is_out && args[i].isTensor()) ++n_out;
  std::vector<bool> present;
  std::vector<TensorType> fouts;
  if (n_out == 0 || !functional_meta(args, fouts, present) || fouts.size() != n_out) return false;
  sig.outs = std::move(fouts);
  sig.present = std::move(present);
  sig.layouts.clear();
  return true;
}

// An in-place op whose functional result cannot be cast back into self
// (int32.mul_(1.1): Float into Int).
void TableKernel::check_inplace_cast(const std::vector<c10::IValue>& args) {
  if (!inplace_functional_ || args.empty() || !args[0].isTensor()) return;
  std::vector<bool> present;
  std::vector<TensorType> fouts;
  try {
    fouts = meta_outputs(*inplace_functional_, args, inplace_functional_plan_, present);
  } catch (...) {
    return;  // the in-place meta function already accepted the arguments
  }
  if (!fouts.empty()) check_castable(scalar_type_of(fouts[0].elem), args[0].toTensor().scalar_type());
}

// out= of a dtype the result cannot be cast to.
void TableKernel::check_out_casts(const std::vector<c10::IValue>& args) {
  std::vector<at::ScalarType> dtypes = functional_dtypes(args);
  std::vector<at::Tensor> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!plan_.args[i].is_out) continue;
    if (args[i].isTensor()) outs.push_back(args[i].toTensor());
    else if (args[i].isTensorList()) for (const at::Tensor& t : args[i].toTensorVector()) outs.push_back(t);
  }
  for (size_t k = 0; k < dtypes.size() && k < outs.size(); ++k)
    if (outs[k].defined()) check_castable(dtypes[k], outs[k].scalar_type());
}

// out= of another dtype than the result's. Whether CPU casts into it or
// refuses it is each kernel's choice, and meta functions accept it either
// way: TensorIterator ops that promote cast (add, exp, maximum, sum); those
// that do not refuse (clamp, neg, floor, gelu: "Found dtype Double but
// expected Float"); structured kernels without TensorIterator refuse (mm,
// softmax, gather, tril: "Expected out tensor to have dtype float, but got
// double instead"); others have their own words (where, index_select, amax,
// nan_to_num, take). So, once per signature (the out dtypes are part of the
// executable's key; a hit never comes here), the op runs on zero-filled CPU
// twins, and CPU's error is raised when the same call with out= of the
// result dtypes passes (zeros can fail a value check, integer division say,
// which is no fault of the out dtype and is left to the device's own check).
//
// When the meta function already refused the call (`meta_refused`), the error
// is certain and only its words are in question: CPU's kernel is asked on
// twins and its error, if any, is raised instead of the meta function's
// (nansum(f32, out=int64): CPU's NotImplementedError, not the meta's
// RuntimeError). A kernel checks shapes and dtypes before it computes, so a
// twin that fails on its zero values has passed those checks.
void TableKernel::check_out_dtypes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                   bool meta_refused) {
  if (meta_refused) {
    run_on_cpu_twins(op, args);
    return;
  }
  std::vector<at::ScalarType> dtypes = functional_dtypes(args);
  if (dtypes.empty()) return;
  bool differs = false;
  size_t k = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!plan_.args[i].is_out) continue;
    std::vector<at::Tensor> outs;
    if (args[i].isTensor()) outs.push_back(args[i].toTensor());
    else if (args[i].isTensorList()) outs = args[i].toTensorVector();
    for (const at::Tensor& o : outs) {
      if (k < dtypes.size() && o.defined() && o.scalar_type() != dtypes[k]) differs = true;
      ++k;
    }
  }
  if (!differs || k != dtypes.size()) return;
  std::exception_ptr refused;
  try {
    run_on_cpu_twins(op, args);
  } catch (...) {
    refused = std::current_exception();
  }
  if (!refused) return;
  try {
    run_on_cpu_twins(op, args, &plan_, &dtypes);
  } catch (...) {
    return;  // not the out dtype's doing
  }
  std::rethrow_exception(refused);
}

// out= of another dtype than the op's result (add(f16, f16, out=f64)): CPU
// computes in the result dtype (33000 + 33000 overflows to inf in f16) and
// then casts into out, so the lowering produces the functional result type
// and store() converts.
void TableKernel::compute_in_result_dtype(const std::vector<c10::IValue>& args, std::vector<TensorType>& outs) {
  if (!functional_) return;
  std::vector<at::ScalarType> dtypes = functional_dtypes(args);
  if (dtypes.size() != outs.size()) return;
  for (size_t k = 0; k < outs.size(); ++k) outs[k].elem = elem_of(dtypes[k]);
}

// A write into a tensor whose elements share memory (an expanded view):
// CPU refuses it in some ops (add_ on `arange(3).expand(4, 3)`) and not in
// others (index_put_), and meta functions do not check. So the op runs once
// on zero-filled CPU twins with the same sizes and strides, and raises
// where CPU raises. Only reached for such tensors, never on the hot path.
//
// The same for a written tensor that partly overlaps another argument
// (`torch.cat([x[:2], x[1:]], out=x[:4])`, `x[1:].add_(x[:-1])`): CPU refuses
// ("some elements of the input tensor and the written-to tensor refer to a
// single memory location") where its kernel would read what it already
// wrote. Twins sharing one CPU storage where the arguments share one let
// CPU decide. An argument that is the written tensor itself (`x.mul_(x)`)
// is a full overlap, which CPU's elementwise kernels allow: no twins then.
bool TableKernel::check_overlapping_writes(const c10::OperatorHandle& op,
                                           const std::vector<c10::IValue>& args) const {
  bool overlapping = false;
  std::vector<at::Tensor> written, read;
  for (size_t i = 0; i < args.size(); ++i) {
    auto add = [&](const at::Tensor& t) {
      if (!t.defined() || !t.is_privateuseone()) return;
      (plan_.args[i].is_mutated ? written : read).push_back(t);
    };
    if (args[i].isTensor()) add(args[i].toTensor());
    else if (args[i].isTensorList()) for (const at::Tensor& t : args[i].toTensorVector()) add(t);
  }
  for (const at::Tensor& t : written)
    overlapping = overlapping ||
                  (!t.is_non_overlapping_and_dense() && at::has_internal_overlap(t) == at::MemOverlap::Yes);
  bool aliased = false, full = false, disjoint = false;
  for (const at::Tensor& w : written) {
    for (const at::Tensor& r : read) {
      if (!w.storage().is_alias_of(r.storage())) continue;
      at::MemOverlapStatus st = at::get_overlap_status(w, r);
      aliased = aliased || st == at::MemOverlapStatus::Partial || st == at::MemOverlapStatus::TooHard;
      full = full || st == at::MemOverlapStatus::Full;
      disjoint = disjoint || st == at::MemOverlapStatus::No;
    }
  }
  if (aliased) {
    run_on_cpu_twins(op, args, nullptr, nullptr, /*keep_aliasing=*/true);
    return false;
  }
  // out= that is an input (take(x, i, out=x)): whether CPU refuses depends on
  // the op alone (kernels that assert no overlap refuse, elementwise ones
  // accept), so CPU twins answer once per op; later calls cost a load.
  if (full && plan_.variant == Variant::Out) {
    static const char* kMessage =
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
        "memory location. Please clone() the tensor before performing the operation.";
    int known = full_out_overlap_.load(std::memory_order_relaxed);
    if (known == 1) TORCH_CHECK(false, kMessage);
    if (known == 0 && twins_are_small(args)) {
      try {
        run_on_cpu_twins(op, args, nullptr, nullptr, /*keep_aliasing=*/true);
        full_out_overlap_.store(2, std::memory_order_relaxed);
      } catch (const c10::Error& e) {
        // another refusal (CPU has no kernel for this dtype, a shape error)
        // says nothing about overlap: asked again next time
        if (!is_overlap_refusal(e)) return false;
        full_out_overlap_.store(1, std::memory_order_relaxed);
        throw;
      }
    }
  }
  if (overlapping) run_on_cpu_twins(op, args);
  return disjoint && plan_.variant == Variant::Out;
}

// An out= that shares a storage with an input without overlapping it (or is
// an empty input) overlaps it once resized to the result's shape when it
// grows into the input (`gather(i.clone(), 0, i[1:], out=i[:1])`, `cat([e, y],
// out=e)` with e empty): then CPU's twins, resized the same way, decide about
// the overlap (their other errors say nothing: they hold zeros). Only when
// some out= is resized, and never for ops drawing random numbers (the twins
// would draw from CPU's generator).
void TableKernel::check_resized_out_overlap(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                            const Signature& sig) const {
  bool resized = false;
  size_t k = 0;
  for (size_t i = 0; i < args.size() && i < plan_.args.size(); ++i) {
    if (!plan_.args[i].is_out || !args[i].isTensor()) continue;
    const at::Tensor& out = args[i].toTensor();
    if (k < sig.outs.size() && out.defined() && !out.sizes().equals(sig.outs[k].dims)) resized = true;
    ++k;
  }
  if (!resized || !twins_are_small(args)) return;
  for (const auto& a : op.schema().arguments())
    if (a.type()->str().find("Generator") != std::string::npos) return;
  try {
    run_on_cpu_twins(op, args, nullptr, nullptr, /*keep_aliasing=*/true);
  } catch (const std::exception& e) {
    if (is_overlap_refusal(e)) throw;
  }
}

void TableKernel::deliver(const std::vector<c10::IValue>& args, std::vector<BufferPtr> outputs,
                          const Signature& sig, torch::jit::Stack* stack) const {
  const std::vector<bool>& present = sig.present;
  const std::vector<ResultLayout>& layouts = sig.layouts;
  // Undeclared updates (running stats) come last.
  for (size_t j = lowering_->writeback_args.size(); j > 0; --j) {
    const c10::IValue& target = args.at(lowering_->writeback_args[j - 1]);
    if (target.isTensor() && target.toTensor().defined()) store(target.toTensor(), outputs.back());
    outputs.pop_back();
  }
  if (plan_.variant == Variant::Functional) {
    std::vector<at::Tensor> ts;
    for (size_t k = 0; k < outputs.size(); ++k) {
      bool real = k >= present.size() || present[k];
      const ResultLayout* layout = k < layouts.size() ? &layouts[k] : nullptr;
      ts.push_back(real ? wrap_result(outputs[k], scalar_type_of(outputs[k]->type().elem), layout) : at::Tensor());
    }
    if (plan_.returns_list) {
      stack->emplace_back(ts);
    } else if (plan_.any_int_return) {  // tensors and ints in the schema's order
      size_t t = 0, i = 0;
      for (bool is_int : plan_.int_returns) {
        if (!is_int) stack->emplace_back(std::move(ts.at(t++)));
        else {
          TORCH_CHECK(i < sig.int_returns.size(), "torch_tpu internal error: the meta function of ",
                      lowering_->name, " gave no value for int result ", i);
          stack->push_back(sig.int_returns[i++]);
        }
      }
    } else {
      for (auto& t : ts) stack->emplace_back(std::move(t));
    }
    return;
  }
  size_t k = 0;
  std::vector<c10::IValue> written;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!plan_.args[i].is_mutated) continue;
    const c10::IValue& v = args[i];
    std::vector<at::Tensor> targets = v.isTensor() ? std::vector<at::Tensor>{v.toTensor()} : v.toTensorVector();
    for (const at::Tensor& t : targets) store(t, outputs.at(k++));
    written.push_back(v);
  }
  if (plan_.num_returns == 0) return;
  for (auto& w : written) stack->push_back(w);
}

}  // namespace ttpu::aten
