// ATen kernels for PrivateUse1 ('tpu'): storage and view primitives, copies,
// the table kernel that runs every lowering, and the fallback for the rest.
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/InferSize.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <map>
#include <unordered_set>

#include "aten/common.h"
#include "runtime/checks.h"
#include "runtime/deferred.h"

namespace ttpu::aten {

// ---------------------------------------------------------------------------
// Tensor <-> runtime

ops::ViewSpec view_of(const at::Tensor& t) {
  return ops::ViewSpec{elem_of(t.scalar_type()), t.sizes().vec(), t.strides().vec(), t.storage_offset()};
}

BufferPtr read(const at::Tensor& t) {
  runtime::StorageHandle& h = handle_of(t);
  // Hot path: the tensor is exactly its storage's buffer (no view metadata to build).
  if (h.buffer && t.storage_offset() == 0 && t.is_contiguous() && h.buffer->type().dims == t.sizes() &&
      h.buffer->type().elem == elem_of(t.scalar_type()))
    return h.buffer;
  return runtime::read_view(h, view_of(t));
}

void write(const at::Tensor& dst, const BufferPtr& value) { runtime::write_view(handle_of(dst), view_of(dst), value); }

at::Tensor wrap(const BufferPtr& value, at::ScalarType dtype) {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(value->device())));
  at::Tensor t = at::detail::empty_generic(value->type().dims, tpu_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype, std::nullopt);
  handle_of(t).buffer = value;
  return t;
}

namespace {

std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "None";
  std::ostringstream os;
  os << t.scalar_type() << t.sizes();
  if (!t.is_privateuseone()) os << "@" << t.device();
  return os.str();
}

std::string describe_args(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t n) {
  std::string s;
  auto args = torch::jit::last(stack, n);
  for (const auto& iv : args) {
    if (iv.isTensor()) {
      if (!s.empty()) s += ", ";
      s += describe(iv.toTensor());
    } else if (iv.isTensorList()) {
      if (!s.empty()) s += ", ";
      s += "[" + std::to_string(iv.toTensorList().size()) + " tensors]";
    }
  }
  (void)op;
  return s;
}

int device_index(const at::Tensor& t) { return t.device().index() < 0 ? 0 : t.device().index(); }

}  // namespace

// ---------------------------------------------------------------------------
// Storage and view primitives

namespace {

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!layout.has_value() || *layout == at::kStrided, "torch_tpu: only strided tensors are supported, got ",
              *layout);
  c10::DeviceGuard guard(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
  auto st = dtype.value_or(at::get_default_dtype_as_scalartype());
  elem_of(st);  // reject unsupported dtypes early with a clear message
  return at::detail::empty_generic(size, tpu_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st,
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
  auto st = dtype.value_or(at::get_default_dtype_as_scalartype());
  elem_of(st);
  return at::detail::empty_strided_generic(size, stride, tpu_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st);
}

void ensure_storage_bytes(const at::Tensor& self, int64_t needed) {
  if (needed > static_cast<int64_t>(self.storage().nbytes())) resize_storage_bytes(self.storage(), needed);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memory_format.has_value()) return self;
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value() && *memory_format != at::MemoryFormat::Preserve)
    impl->empty_tensor_restride(*memory_format);
  int64_t needed = static_cast<int64_t>(
      at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(), self.storage_offset()));
  ensure_storage_bytes(self, needed);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  std::optional<c10::IntArrayRef> st = stride.data() ? std::optional<c10::IntArrayRef>(stride) : std::nullopt;
  if (st) {
    self.unsafeGetTensorImpl()->set_sizes_and_strides(size, *st);
  } else {
    self.unsafeGetTensorImpl()->set_sizes_contiguous(size);
  }
  int64_t needed = static_cast<int64_t>(
      at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(), offset));
  ensure_storage_bytes(self, needed);
  return self;
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                                      c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return set_storage(self, std::move(source), offset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                     C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {n}, {1});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  if (self.is_same(src)) return self;
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), true);
  return set_storage(self, storage, 0, {0}, {});
}

// ---------------------------------------------------------------------------
// Copies

void copy_into(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  // Lazy conj/neg bits (fft results, x.conj()): copy the stored values, then
  // apply the pending conjugation/negation to the destination. (resolve_conj
  // itself copies, so calling it here would recurse.)
  if (src.is_conj()) {
    copy_into(dst, src.conj());
    if (dst.is_complex()) dst.conj_physical_();
    return;
  }
  if (src.is_neg()) {
    copy_into(dst, src._neg_view());
    dst.neg_();
    return;
  }
  if (dst.is_privateuseone()) {
    c10::DeviceGuard guard(dst.device());
    int dev = device_index(dst);
    TensorType to{elem_of(dst.scalar_type()), dst.sizes().vec()};
    BufferPtr value;
    if (src.is_privateuseone()) {
      value = read(src);
      if (device_index(src) != dev) value = runtime::client().copy_to_device(*value, dev);
      value = runtime::convert_broadcast(value, to, dev);
    } else {
      at::Tensor host = src.to(at::kCPU).to(dst.scalar_type()).expand(dst.sizes()).contiguous();
      value = runtime::upload(host.data_ptr(), to, dev);
    }
    write(dst, value);
    return;
  }
  // device -> host
  BufferPtr value = read(src);
  at::Tensor host = at::empty(src.sizes(), at::TensorOptions().dtype(src.scalar_type()));
  if (src.numel() > 0) runtime::download(*value, host.data_ptr());
  dst.copy_(host);
}

at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  TORCH_CHECK(self.defined() && src.defined(), "copy_: tensors must be defined");
  try {
    copy_into(self, src);
  } catch (...) {
    rethrow_as_torch_error("copy_ (" + describe(src) + " -> " + describe(self) + ")");
  }
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor d = dst;
  copy_(d, self, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_output(dst, self.sizes());
  at::Tensor d = dst;
  copy_(d, self, false);
  return dst;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  at::Tensor host = at::empty({}, at::TensorOptions().dtype(self.scalar_type()));
  try {
    BufferPtr v = read(self);
    runtime::download(*v, host.data_ptr());
  } catch (...) {
    rethrow_as_torch_error("item() of " + describe(self));
  }
  return host.item();
}

}  // namespace

// ---------------------------------------------------------------------------
// The table kernel: one boxed kernel serves every lowering and its
// functional, in-place and out= variants.

namespace {

enum class AK { Tensor, TensorList, OptTensorList, Scalar, ScalarList, Int, IntList, Double, Bool, Str, DType, Generator, Ignore };

struct ArgInfo {
  AK kind = AK::Ignore;
  bool optional = false;
  bool is_out = false;         // kwarg-only written tensor (out=)
  bool is_mutated = false;     // written tensor (self of an in-place op, or out)
  bool is_index = false;       // positions (index, indices): no part of value type promotion
};

enum class Variant { Functional, Inplace, Out };


struct OpPlan {
  std::vector<ArgInfo> args;
  Variant variant = Variant::Functional;
  size_t num_returns = 0;
  bool returns_list = false;
};

ArgInfo classify(const c10::Argument& a) {
  ArgInfo info;
  c10::TypePtr t = a.real_type();  // ScalarType/Layout/MemoryFormat are ints in type()
  if (auto o = t->castRaw<c10::OptionalType>()) {
    t = o->getElementType();
    info.optional = true;
  }
  switch (t->kind()) {
    case c10::TypeKind::TensorType: info.kind = AK::Tensor; break;
    case c10::TypeKind::NumberType: info.kind = AK::Scalar; break;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: info.kind = AK::Int; break;
    case c10::TypeKind::FloatType: info.kind = AK::Double; break;
    case c10::TypeKind::BoolType: info.kind = AK::Bool; break;
    case c10::TypeKind::StringType: info.kind = AK::Str; break;
    case c10::TypeKind::ScalarTypeType: info.kind = AK::DType; break;
    case c10::TypeKind::GeneratorType: info.kind = AK::Generator; break;
    case c10::TypeKind::ListType: {
      c10::TypePtr e = t->castRaw<c10::ListType>()->getElementType();
      if (e->kind() == c10::TypeKind::TensorType) info.kind = AK::TensorList;
      else if (e->kind() == c10::TypeKind::OptionalType) info.kind = AK::OptTensorList;
      else if (e->kind() == c10::TypeKind::NumberType) info.kind = AK::ScalarList;
      else info.kind = AK::IntList;  // int[], SymInt[], bool[]
      break;
    }
    default: info.kind = AK::Ignore; break;
  }
  info.is_mutated = a.alias_info() && a.alias_info()->isWrite();
  info.is_out = info.is_mutated && a.kwarg_only();
  info.is_index = a.name() == "index" || a.name() == "indices";
  return info;
}

OpPlan make_plan(const c10::FunctionSchema& schema) {
  OpPlan p;
  for (const auto& a : schema.arguments()) p.args.push_back(classify(a));
  for (const auto& a : p.args) {
    if (a.is_out) p.variant = Variant::Out;
    else if (a.is_mutated && p.variant != Variant::Out) p.variant = Variant::Inplace;
  }
  p.num_returns = schema.returns().size();
  p.returns_list = p.num_returns == 1 && schema.returns()[0].type()->kind() == c10::TypeKind::ListType;
  return p;
}

ops::MatmulPrecision current_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return ops::MatmulPrecision::Highest;
    case at::Float32MatmulPrecision::HIGH: return ops::MatmulPrecision::High;
    case at::Float32MatmulPrecision::MEDIUM: return ops::MatmulPrecision::Medium;
  }
  return ops::MatmulPrecision::Highest;
}

void append_int(std::string& key, int64_t v) {
  key += std::to_string(v);
  key += ',';
}

void append_tensor_key(std::string& key, char tag, const at::Tensor& t) {
  key += tag;
  key += static_cast<char>('A' + static_cast<int>(t.scalar_type()));
  for (auto d : t.sizes()) append_int(key, d);
  key += ';';
}

// An entry of a Tensor?[] list that holds no tensor (None or undefined).
bool absent(const c10::IValue& e) { return e.isNone() || (e.isTensor() && !e.toTensor().defined()); }

// Meta twins of tpu tensors and of 0-dim CPU tensors (which ATen accepts as
// operands of device ops: they promote like any 0-dim tensor).
at::Tensor to_meta(const at::Tensor& t) {
  // A Python number (2.5 in `x + 2.5`, a CPU "wrapped number") stays as it is:
  // meta functions take it, and it promotes as a scalar, not as a 0-dim tensor.
  if (!t.defined() || !(t.is_privateuseone() || (t.is_cpu() && t.dim() == 0)) ||
      t.unsafeGetTensorImpl()->is_wrapped_number())
    return t;
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// Undefined results (not requested through an output_mask) become an empty
// placeholder; `present` records which results are real.
TensorType meta_type(const at::Tensor& t) {
  if (!t.defined()) return TensorType{ElemType::F32, {0}};
  return TensorType{elem_of(t.scalar_type()), t.sizes().vec()};
}

// Output types from PyTorch's own meta functions: type promotion, broadcasting
// and shape errors match CPU exactly.
std::vector<TensorType> meta_outputs(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                     const OpPlan& plan, std::vector<bool>& present) {
  torch::jit::Stack ms;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      ms.emplace_back(to_meta(v.toTensor()));
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorVector()) l.push_back(to_meta(t));
      ms.emplace_back(l);
    } else if (v.isList() && plan.args[i].kind == AK::OptTensorList) {
      c10::List<std::optional<at::Tensor>> l;
      for (const c10::IValue& e : v.toListRef()) {
        if (absent(e)) {
          l.push_back(std::nullopt);
          continue;
        }
        const at::Tensor& t = e.toTensor();
        l.push_back(t.is_cpu() && t.dim() > 0 ? at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta))
                                              : to_meta(t));
      }
      ms.emplace_back(l);
    } else if (plan.args[i].kind == AK::Generator) {
      ms.emplace_back(c10::IValue());
    } else if (v.isDevice()) {
      // A factory op (triu_indices(..., device='tpu')) dispatches on its
      // device argument: on 'tpu' the meta call would come back here.
      ms.emplace_back(c10::Device(c10::kMeta));
    } else {
      ms.push_back(v);
    }
  }
  op.callBoxed(ms);
  std::vector<TensorType> outs;
  if (plan.variant == Variant::Inplace) {
    for (size_t i = 0; i < plan.args.size(); ++i) {
      if (!plan.args[i].is_mutated) continue;
      const c10::IValue& v = args[i];
      if (v.isTensor()) outs.push_back(meta_type(v.toTensor()));
      else for (const at::Tensor& t : v.toTensorVector()) outs.push_back(meta_type(t));
    }
    return outs;
  }
  for (const c10::IValue& r : ms) {
    if (r.isTensor()) {
      outs.push_back(meta_type(r.toTensor()));
      present.push_back(r.toTensor().defined());
    } else if (r.isTensorList()) {
      for (const at::Tensor& t : r.toTensorVector()) outs.push_back(meta_type(t)), present.push_back(true);
    } else if (r.isNone()) {
      outs.push_back(meta_type(at::Tensor()));
      present.push_back(false);
    }
  }
  return outs;
}

// PyTorch's result type over the value operands. Index operands do not take
// part (index_select on a float8 tensor has no float8/int64 promotion to
// refuse, as on CPU).
ElemType common_dtype(c10::ArrayRef<c10::IValue> args, const OpPlan& plan) {
  at::native::ResultTypeState state;
  bool any = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (plan.args[i].is_out || plan.args[i].is_index) continue;
    const c10::IValue& v = args[i];
    if (v.isTensor() && v.toTensor().defined()) {
      state = at::native::update_result_type_state(v.toTensor(), state);
      any = true;
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) state = at::native::update_result_type_state(t, state), any = true;
    } else if (v.isScalar() && plan.args[i].kind == AK::Scalar) {
      state = at::native::update_result_type_state(v.toScalar(), state);
      any = true;
    }
  }
  if (!any) return ElemType::F32;
  return elem_of(at::native::result_type(state));
}

std::vector<int64_t> int_list(const c10::IValue& v) {
  std::vector<int64_t> out;
  if (v.isIntList()) return v.toIntVector();
  if (v.isBoolList()) {
    for (bool b : v.toBoolList()) out.push_back(b);
    return out;
  }
  for (const c10::IValue& e : v.toListRef()) out.push_back(e.isSymInt() ? e.toSymInt().expect_int() : e.toInt());
  return out;
}

// The functional overload taking the same arguments as an out= overload
// (add.out -> add.Tensor), whose result dtype is the dtype CPU computes in.
std::optional<c10::OperatorHandle> functional_sibling(const c10::FunctionSchema& out_schema, const OpPlan& plan) {
  std::vector<const c10::Argument*> ins;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    if (plan.args[i].kind == AK::DType) return std::nullopt;  // sum(dtype=None, out=) computes in out's dtype
    if (!plan.args[i].is_out) ins.push_back(&out_schema.arguments()[i]);
  }
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name != out_schema.name()) continue;
    auto handle = dispatcher.findOp(name);
    if (!handle || !handle->hasSchema()) continue;
    const c10::FunctionSchema& s = handle->schema();
    if (s.is_mutable() || s.arguments().size() != ins.size()) continue;
    bool same = true;
    for (size_t i = 0; i < ins.size() && same; ++i)
      same = s.arguments()[i].name() == ins[i]->name() && *s.arguments()[i].type() == *ins[i]->type();
    if (same) return handle;
  }
  return std::nullopt;
}

// The functional op of an in-place one (mul_.Tensor -> mul.Tensor): same
// overload name and arguments, no trailing underscore, nothing mutated.
std::optional<c10::OperatorHandle> inplace_sibling(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  if (name.empty() || name.back() != '_') return std::nullopt;
  auto handle = c10::Dispatcher::singleton().findOp(
      c10::OperatorName(name.substr(0, name.size() - 1), schema.overload_name()));
  if (!handle || !handle->hasSchema()) return std::nullopt;
  const c10::FunctionSchema& f = handle->schema();
  if (f.is_mutable() || f.arguments().size() != schema.arguments().size()) return std::nullopt;
  for (size_t i = 0; i < f.arguments().size(); ++i)
    if (f.arguments()[i].name() != schema.arguments()[i].name()) return std::nullopt;
  return handle;
}

class TableKernel final : public c10::OperatorKernel {
 public:
  explicit TableKernel(const ops::Lowering* lowering) : lowering_(lowering) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
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
      rethrow_as_torch_error(op.schema().operator_name().name + "." + op.schema().operator_name().overload_name +
                             " (" + describe_args(op, *stack, plan_.args.size()) + ")");
    }
  }

 private:
  void run(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
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
      TORCH_CHECK(d == dev, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
                  dev, " and tpu:", d, "!");
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

    if (plan_.variant != Variant::Functional) check_overlapping_writes(op, args);

    std::string key;
    key.reserve(96);
    key += lowering_->name;
    key += '|';
    key += op.schema().operator_name().overload_name;
    // mul.Tensor and mul_.Tensor share overload name and lowering, but not
    // result types (the in-place one keeps self's dtype, the functional one
    // promotes): sharing an executable gave a f16 result for f16 + f32 after a
    // f16.add_(f32), and let int64.mul_(1.1) run the float one.
    key += plan_.variant == Variant::Inplace ? 'I' : (plan_.variant == Variant::Out ? 'O' : 'F');
    key += '|';
    // Promotion of Python floats and of integers to float (uint8 + 5.5) uses
    // torch.get_default_dtype(): the meta result types, and with them the
    // executable, depend on it.
    key += static_cast<char>('A' + static_cast<int>(c10::typeMetaToScalarType(c10::get_default_dtype())));
    std::vector<BufferPtr> inputs;
    int64_t first_numel = -1;
    bool skip_self = (lowering_->flags & ops::kNoReadSelf) && plan_.variant == Variant::Inplace;

    auto add_tensor = [&](const at::Tensor& operand, bool is_self, bool host_ok = false) {
      // Lazy conj/neg bits: mm/bmm/addmm (and views) are conj-aware in
      // PyTorch, so the Conjugate fallback hands `m.mH` over unresolved; the
      // lowering sees stored values, so operands are resolved first.
      at::Tensor resolved;
      if (operand.is_conj() || operand.is_neg()) resolved = operand.resolve_conj().resolve_neg();
      const at::Tensor& t = resolved.defined() ? resolved : operand;
      if (first_numel < 0) first_numel = t.numel();
      if (t.is_privateuseone()) {
        if (is_self && skip_self) {
          append_tensor_key(key, 'S', t);
          return;
        }
        append_tensor_key(key, 'T', t);
        inputs.push_back(read(t));
        return;
      }
      if (host_ok && t.dim() > 0) {  // index tensors may live on the host, as with CUDA
        append_tensor_key(key, 'h', t);
        at::Tensor host = t.contiguous();
        inputs.push_back(runtime::upload(host.const_data_ptr(), TensorType{elem_of(t.scalar_type()), t.sizes().vec()}, dev));
        return;
      }
      TORCH_CHECK(t.dim() == 0,
                  "Expected all tensors to be on the same device, but found at least two devices, tpu:", dev, " and ",
                  t.device(), "! (only 0-dim CPU tensors can be mixed with tpu tensors)");
      append_tensor_key(key, 'c', t);
      ElemType et = elem_of(t.scalar_type());
      if (shlo::byte_size(et) <= 8) {
        inputs.push_back(runtime::upload_scalar(t.const_data_ptr(), et, dev));
      } else {
        inputs.push_back(runtime::upload(t.const_data_ptr(), TensorType{et, {}}, dev));
      }
    };

    for (size_t i = 0; i < n; ++i) {
      const ArgInfo& info = plan_.args[i];
      const c10::IValue& v = args[i];
      if (info.is_out) {
        key += 'o';
        if (v.isTensor()) key += static_cast<char>('A' + static_cast<int>(v.toTensor().scalar_type()));
        continue;
      }
      if (v.isNone() && info.kind != AK::Generator) {
        key += 'n';
        continue;
      }
      switch (info.kind) {
        case AK::Tensor: {
          const at::Tensor& t = v.toTensor();
          if (!t.defined()) {
            key += 'n';
            break;
          }
          add_tensor(t, i == 0);
          break;
        }
        case AK::TensorList: {
          auto list = v.toTensorVector();
          key += 'L';
          append_int(key, static_cast<int64_t>(list.size()));
          for (const at::Tensor& t : list) add_tensor(t, false);
          break;
        }
        case AK::OptTensorList: {
          key += 'P';
          for (const c10::IValue& e : v.toListRef()) {
            if (absent(e)) key += 'n';
            else add_tensor(e.toTensor(), false, /*host_ok=*/true);
          }
          break;
        }
        case AK::Scalar: {
          at::Scalar s = v.toScalar();
          if (lowering_->flags & ops::kScalarValuesInKey) key += s.toDouble() == s.toDouble() ? std::to_string(s.toDouble()) : "nan";
          if (s.isBoolean()) {
            key += 'b';
            bool b = s.toBool();
            inputs.push_back(runtime::upload_scalar(&b, ElemType::Pred, dev));
          } else if (s.isIntegral(false)) {
            key += 'i';
            int64_t x = s.toLong();
            inputs.push_back(runtime::upload_scalar(&x, ElemType::S64, dev));
          } else {
            TORCH_CHECK(!s.isComplex(), "torch_tpu: complex scalars are not supported yet");
            key += 'f';
            double x = s.toDouble();
            inputs.push_back(runtime::upload_scalar(&x, ElemType::F64, dev));
          }
          break;
        }
        case AK::ScalarList: {
          std::vector<double> xs;
          for (const c10::IValue& e : v.toListRef()) xs.push_back(e.toScalar().toDouble());
          key += 'l';
          append_int(key, static_cast<int64_t>(xs.size()));
          inputs.push_back(runtime::upload(xs.data(), TensorType{ElemType::F64, {(int64_t)xs.size()}}, dev));
          break;
        }
        case AK::Int:
          key += 'i';
          append_int(key, v.isSymInt() ? v.toSymInt().expect_int() : v.toInt());
          break;
        case AK::IntList:
          key += '[';
          for (auto x : int_list(v)) append_int(key, x);
          key += ']';
          break;
        case AK::Double: {
          double d = v.toDouble();
          uint64_t bits;
          std::memcpy(&bits, &d, 8);
          key += 'd';
          append_int(key, static_cast<int64_t>(bits));
          break;
        }
        case AK::Bool: key += v.toBool() ? "B1" : "B0"; break;
        case AK::Str: key += 's' + v.toStringRef() + ';'; break;
        case AK::DType: key += 't'; append_int(key, v.toInt()); break;
        case AK::Generator: {
          std::optional<at::Generator> gen;
          if (!v.isNone()) gen = v.toGenerator();
          auto [seed, offset] = next_rng_state(gen, dev, static_cast<uint64_t>(std::max<int64_t>(first_numel, 1)));
          uint64_t state[2] = {seed, offset};
          key += 'g';
          inputs.push_back(runtime::upload(state, TensorType{ElemType::U64, {2}}, dev));
          break;
        }
        case AK::Ignore: key += '_'; break;
      }
    }
    if (lowering_->flags & ops::kUsesDefaultRng) {
      auto [seed, offset] = next_rng_state(std::nullopt, dev, static_cast<uint64_t>(std::max<int64_t>(first_numel, 1)));
      uint64_t state[2] = {seed, offset};
      key += 'R';
      inputs.push_back(runtime::upload(state, TensorType{ElemType::U64, {2}}, dev));
    }
    ops::MatmulPrecision precision = ops::MatmulPrecision::Highest;
    if (lowering_->flags & ops::kUsesMatmulPrecision) {
      precision = current_precision();
      key += static_cast<char>('0' + static_cast<int>(precision));
    }

    if (runtime::mode() == runtime::Mode::DeferAndFuse) {
      record(op, key, args, inputs, precision, skip_self, dev, stack);
      return;
    }

    auto compiled = runtime::get_or_compile(key, [&] { return build(op, args, inputs, precision, skip_self); });

    std::vector<pjrt::Buffer*> raw;
    raw.reserve(inputs.size());
    for (auto& b : inputs) raw.push_back(b.get());
    std::vector<BufferPtr> outputs = runtime::execute(*compiled, raw, dev);
    take_checks(op, outputs, compiled->checks);
    if (runtime::mode() == runtime::Mode::Debug) debug_check(op, outputs, compiled->output_present);

    torch::jit::drop(*stack, n);
    deliver(args, outputs, compiled->output_present, stack);
  }

  // DeferAndFuse: record the op into the pending graph; its results are
  // pending buffers that materialise at the next sync point.
  void record(const c10::OperatorHandle& op, const std::string& key, const std::vector<c10::IValue>& args,
              const std::vector<BufferPtr>& inputs, ops::MatmulPrecision precision, bool skip_self, int dev,
              torch::jit::Stack* stack) {
    std::shared_ptr<const Recorded> rec;
    {
      std::lock_guard<std::mutex> lock(shapes_mutex_);
      auto it = shapes_.find(key);
      if (it != shapes_.end()) rec = it->second;
    }
    if (!rec) {
      // First time for this signature: build once to learn (and check) the
      // result types, and keep the attributes with tensors replaced by meta
      // tensors, so the recorded graph holds no user tensor alive.
      runtime::BuiltModule m = build(op, args, inputs, precision, skip_self);
      auto r = std::make_shared<Recorded>();
      r->outs.assign(m.outputs.begin(), m.outputs.end() - m.checks.size());
      r->present.assign(m.output_present.begin(), m.output_present.end() - m.checks.size());
      r->checks = m.checks;
      for (const c10::IValue& v : args) r->args.push_back(metaize(v));
      rec = r;
      std::lock_guard<std::mutex> lock(shapes_mutex_);
      shapes_.emplace(key, rec);
    }
    c10::OperatorHandle handle = op;
    runtime::EmitFn fn = [this, handle, precision, skip_self, rec](shlo::Builder& b,
                                                                 const std::vector<shlo::Value>& ins) {
      return emit(b, ins, handle, rec->args, precision, skip_self, &rec->outs, &rec->present).results;
    };
    std::vector<TensorType> types = rec->outs;
    types.resize(types.size() + rec->checks.size(), TensorType{ElemType::S64, {}});
    std::vector<BufferPtr> outputs = runtime::record(dev, lowering_->name + std::string("|") + key, inputs,
                                                     types, std::move(fn));
    take_checks(op, outputs, rec->checks);
    torch::jit::drop(*stack, plan_.args.size());
    deliver(args, outputs, rec->present, stack);
  }

  // A write into a tensor whose elements share memory (an expanded view):
  // CPU refuses it in some ops (add_ on `arange(3).expand(4, 3)`) and not in
  // others (index_put_), and meta functions do not check. So the op runs once
  // on zero-filled CPU twins with the same sizes and strides, and raises
  // where CPU raises. Only reached for such tensors, never on the hot path.
  void check_overlapping_writes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
    bool overlapping = false;
    for (size_t i = 0; i < args.size() && !overlapping; ++i) {
      if (!plan_.args[i].is_mutated || !args[i].isTensor()) continue;
      const at::Tensor& t = args[i].toTensor();
      overlapping = t.defined() && !t.is_non_overlapping_and_dense() &&
                    at::has_internal_overlap(t) == at::MemOverlap::Yes;
    }
    if (!overlapping) return;
    run_on_cpu_twins(op, args);
  }

  // Runs the op on zero-filled CPU twins of the tpu tensors (same sizes and
  // strides) so that CPU's own checks raise their error; the CPU result is
  // discarded. For error paths only: it allocates the real sizes.
  static void run_on_cpu_twins(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
    auto twin = [](const at::Tensor& t) {
      if (!t.defined() || !t.is_privateuseone()) return t;
      int64_t extent = static_cast<int64_t>(
          at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.dtype().itemsize(), t.storage_offset()) /
          t.dtype().itemsize());
      return at::zeros({extent}, t.options().device(at::kCPU)).as_strided(t.sizes(), t.strides(), t.storage_offset());
    };
    torch::jit::Stack cpu;
    for (const c10::IValue& v : args) {
      if (v.isTensor()) {
        cpu.emplace_back(twin(v.toTensor()));
      } else if (v.isTensorList()) {
        std::vector<at::Tensor> l;
        for (const at::Tensor& t : v.toTensorVector()) l.push_back(twin(t));
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

  // The trailing results that are device-side check flags go to the
  // runtime, which reads them at the next sync point (at once in Debug mode).
  static void take_checks(const c10::OperatorHandle& op, std::vector<BufferPtr>& outputs,
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

  runtime::BuiltModule build(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                             const std::vector<BufferPtr>& inputs, ops::MatmulPrecision precision, bool skip_self) {
    shlo::Builder b;
    std::vector<shlo::Value> ins;
    for (const auto& in : inputs) ins.push_back(b.arg(in->type()));
    Emitted e;
    try {
      e = emit(b, ins, op, args, precision, skip_self, nullptr, nullptr);
    } catch (const shlo::ElementTypeError& why) {
      // The lowering met a dtype its StableHLO ops do not take. CPU either
      // refuses it too (abs of bool: NotImplementedError) and we raise CPU's
      // error, or computes it and we say the lowering is missing. Only on
      // this error path, once per signature.
      run_on_cpu_twins(op, args);
      TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: no lowering of ", op.schema().operator_name().name,
                                  " for these dtypes (", why.what(),
                                  "); TORCH_TPU_CPU_FALLBACK=1 runs such ops on CPU");
    }
    return runtime::BuiltModule{b.module(e.results), e.outs, {}, e.present, e.checks};
  }

  struct Emitted {
    std::vector<shlo::Value> results;  // declared results, write-backs, then check flags
    std::vector<TensorType> outs;
    std::vector<bool> present;
    std::vector<ops::CheckSpec> checks;
  };

  // Runs the lowering on `in_values` (one per runtime input, in order). Output
  // types come from PyTorch's meta function (or the lowering's own inference)
  // unless already known.
  Emitted emit(shlo::Builder& b, const std::vector<shlo::Value>& in_values, const c10::OperatorHandle& op,
               const std::vector<c10::IValue>& args, ops::MatmulPrecision precision, bool skip_self,
               const std::vector<TensorType>* known_outs, const std::vector<bool>* known_present) {
    std::vector<bool> present;
    std::vector<TensorType> outs;
    size_t writebacks = lowering_->writeback_args.size();
    if (known_outs) {
      outs.assign(known_outs->begin(), known_outs->end() - writebacks);
      present.assign(known_present->begin(), known_present->end() - writebacks);
    } else if (!lowering_->infer) {
      try {
        outs = meta_outputs(op, args, plan_, present);
      } catch (...) {  // c10::Error, or a Python meta function's exception
        check_out_casts(args);  // CPU's message where the out= dtype is the problem
        throw;
      }
      compute_in_result_dtype(args, outs);
      check_inplace_cast(args);
    }
    std::vector<ops::Arg> largs(args.size());
    size_t next_input = 0;
    auto take = [&]() { return in_values.at(next_input++); };
    for (size_t i = 0; i < args.size(); ++i) {
      const ArgInfo& info = plan_.args[i];
      const c10::IValue& v = args[i];
      ops::Arg& a = largs[i];
      if (info.is_out || (v.isNone() && info.kind != AK::Generator)) continue;
      switch (info.kind) {
        case AK::Tensor:
          if (!v.toTensor().defined() || (i == 0 && skip_self)) break;
          a.kind = ops::Arg::Tensor;
          a.values.push_back(take());
          break;
        case AK::TensorList:
          a.kind = ops::Arg::TensorList;
          for (size_t k = 0; k < v.toTensorVector().size(); ++k) a.values.push_back(take()), a.present.push_back(true);
          break;
        case AK::OptTensorList:
          a.kind = ops::Arg::TensorList;
          for (const c10::IValue& e : v.toListRef()) {
            a.present.push_back(!absent(e));
            if (!absent(e)) a.values.push_back(take());
          }
          break;
        case AK::Scalar:
          a.kind = ops::Arg::Scalar;
          a.scalar_is_float = v.toScalar().isFloatingPoint();
          a.scalar_value = v.toScalar().isComplex() ? 0.0 : v.toScalar().toDouble();
          a.values.push_back(take());
          break;
        case AK::ScalarList:
          a.kind = ops::Arg::ScalarList;
          a.values.push_back(take());
          break;
        case AK::Generator:
          a.kind = ops::Arg::Generator;
          a.values.push_back(take());
          break;
        case AK::Int:
          a.kind = ops::Arg::Int;
          a.i = v.isSymInt() ? v.toSymInt().expect_int() : v.toInt();
          break;
        case AK::IntList:
          a.kind = ops::Arg::IntList;
          a.ints = int_list(v);
          break;
        case AK::Double:
          a.kind = ops::Arg::Double;
          a.d = v.toDouble();
          break;
        case AK::Bool:
          a.kind = ops::Arg::Bool;
          a.b = v.toBool();
          break;
        case AK::Str:
          a.kind = ops::Arg::String;
          a.s = v.toStringRef();
          break;
        case AK::DType:
          a.kind = ops::Arg::DType;
          a.i = v.toInt();
          a.dtype = elem_of(static_cast<at::ScalarType>(v.toInt()));
          break;
        case AK::Ignore: break;
      }
    }
    ElemType common = (lowering_->flags & ops::kNoPromotion) ? ElemType::F32 : common_dtype(args, plan_);
    ops::LowerCtx ctx{b, largs, outs, present, common, precision, {}};
    if (lowering_->flags & ops::kUsesDefaultRng) ctx.rng.push_back(take());
    if (lowering_->infer && !known_outs) {
      outs = lowering_->infer(ctx);
      present = ctx.present;
      ctx.outs = outs;
    }
    std::vector<shlo::Value> results = lowering_->fn(ctx);
    TORCH_CHECK(results.size() == outs.size() + writebacks, "torch_tpu internal error: lowering '",
                lowering_->name, "' returned ", results.size(), " results, expected ", outs.size() + writebacks);
    const size_t declared = outs.size();
    for (size_t j = 0; j < writebacks; ++j) {
      const c10::IValue& target = args.at(lowering_->writeback_args[j]);
      TensorType wt = target.isTensor() && target.toTensor().defined() ? type_of(target.toTensor())
                                                                         : results[declared + j].type;
      outs.push_back(wt);
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
    std::vector<ops::CheckSpec> specs;
    for (const ops::Check& ch : ctx.checks) {
      results.push_back(ch.bad);
      outs.push_back(ch.bad.type);
      present.push_back(true);
      specs.push_back(ch.spec);
    }
    return Emitted{results, outs, present, specs};
  }

  // Result dtypes of the functional sibling of an out= overload; empty when
  // there is none or its meta function refuses the arguments.
  std::vector<at::ScalarType> functional_dtypes(const std::vector<c10::IValue>& args) {
    std::vector<at::ScalarType> dtypes;
    if (!functional_) return dtypes;
    std::vector<c10::IValue> fargs;
    for (size_t i = 0; i < args.size(); ++i)
      if (!plan_.args[i].is_out) fargs.push_back(args[i]);
    std::vector<bool> present;
    std::vector<TensorType> fouts;
    try {
      fouts = meta_outputs(*functional_, fargs, functional_plan_, present);
    } catch (...) {
      return dtypes;
    }
    for (const TensorType& t : fouts) dtypes.push_back(scalar_type_of(t.elem));
    return dtypes;
  }

  std::vector<at::Tensor> out_tensors(const std::vector<c10::IValue>& args) const {
    std::vector<at::Tensor> outs;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!plan_.args[i].is_out) continue;
      if (args[i].isTensor()) outs.push_back(args[i].toTensor());
      else if (args[i].isTensorList()) for (const at::Tensor& t : args[i].toTensorVector()) outs.push_back(t);
    }
    return outs;
  }

  // CPU's TensorIterator error for a result written into a tensor of a dtype
  // it cannot be cast to (out= and in-place; meta functions do not check).
  static void check_castable(at::ScalarType result, at::ScalarType into) {
    TORCH_CHECK(at::canCast(result, into), "result type ", result, " can't be cast to the desired output type ",
                into);
  }

  // An in-place op whose functional result cannot be cast back into self
  // (int32.mul_(1.1): Float into Int).
  void check_inplace_cast(const std::vector<c10::IValue>& args) {
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
  void check_out_casts(const std::vector<c10::IValue>& args) {
    std::vector<at::ScalarType> dtypes = functional_dtypes(args);
    std::vector<at::Tensor> outs = out_tensors(args);
    for (size_t k = 0; k < dtypes.size() && k < outs.size(); ++k)
      if (outs[k].defined()) check_castable(dtypes[k], outs[k].scalar_type());
  }

  // out= of another dtype than the op's result (add(f16, f16, out=f64)): CPU
  // computes in the result dtype (33000 + 33000 overflows to inf in f16) and
  // then casts into out, so the lowering produces the functional result type
  // and store() converts.
  void compute_in_result_dtype(const std::vector<c10::IValue>& args, std::vector<TensorType>& outs) {
    if (!functional_) return;
    std::vector<at::ScalarType> dtypes = functional_dtypes(args);
    if (dtypes.size() != outs.size()) return;
    for (size_t k = 0; k < outs.size(); ++k) outs[k].elem = elem_of(dtypes[k]);
  }

  void deliver(const std::vector<c10::IValue>& args, std::vector<BufferPtr> outputs,
               const std::vector<bool>& present, torch::jit::Stack* stack) {
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
        ts.push_back(real ? wrap(outputs[k], scalar_type_of(outputs[k]->type().elem)) : at::Tensor());
      }
      if (plan_.returns_list) {
        stack->emplace_back(ts);
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

  static void store(const at::Tensor& target, const BufferPtr& value) {
    const TensorType& vt = value->type();
    if (!target.sizes().equals(vt.dims)) at::native::resize_output(target, vt.dims);
    if (target.numel() == 0) return;
    if (elem_of(target.scalar_type()) == vt.elem) {
      write(target, value);
    } else {
      write(target, runtime::convert_broadcast(value, type_of(target), value->device()));
    }
  }

  const ops::Lowering* lowering_;
  std::once_flag planned_;
  OpPlan plan_;
  CpuCheck cpu_check_ = nullptr;  // cpu_checks.cpp
  std::optional<c10::OperatorHandle> inplace_functional_;  // mul.Tensor for mul_.Tensor
  OpPlan inplace_functional_plan_;
  std::optional<c10::OperatorHandle> functional_;  // out= overloads: the functional one
  OpPlan functional_plan_;
  struct Recorded {
    std::vector<TensorType> outs;  // without the check flags
    std::vector<bool> present;
    std::vector<ops::CheckSpec> checks;
    std::vector<c10::IValue> args;  // attributes; tensors replaced by meta tensors
  };
  static c10::IValue metaize(const c10::IValue& v) {
    if (v.isTensor()) return to_meta(v.toTensor());
    if (v.isTensorList()) {
      std::vector<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorVector()) l.push_back(to_meta(t));
      return l;
    }
    if (v.isList()) {
      bool optional_tensors = false;
      for (const c10::IValue& e : v.toListRef()) optional_tensors = optional_tensors || e.isTensor();
      if (!optional_tensors) return v;
      c10::List<std::optional<at::Tensor>> l;
      for (const c10::IValue& e : v.toListRef()) {
        if (absent(e)) l.push_back(std::nullopt);
        else l.push_back(at::empty({0}, e.toTensor().options().device(at::kMeta)));
      }
      return l;
    }
    return v;
  }
  std::mutex shapes_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Recorded>> shapes_;
};

// ---------------------------------------------------------------------------
// Data-dependent shapes: explicit host paths that synchronise.

// nonzero: the result's size depends on the values, so it is computed on the
// host from a device-to-host copy (a sync point, as on CUDA).
at::Tensor nonzero_host(const at::Tensor& self) {
  at::Tensor host = self.to(at::kCPU);
  return at::nonzero(host).to(self.device());
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  at::Tensor r = nonzero_host(self);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// Boolean masks inside index lists become integer indices (one per mask dim)
// through nonzero; the table kernel then handles the integer indices.
class MaskExpandingKernel final : public c10::OperatorKernel {
 public:
  explicit MaskExpandingKernel(const ops::Lowering* lowering) : inner_(lowering) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    const auto& schema_args = op.schema().arguments();
    for (size_t i = 0; i < schema_args.size(); ++i) {
      c10::IValue& v = (*stack)[stack->size() - schema_args.size() + i];
      if (!v.isList() || schema_args[i].name() != "indices") continue;
      c10::List<std::optional<at::Tensor>> expanded;
      bool changed = false;
      for (const c10::IValue& e : v.toListRef()) {
        if (absent(e)) {
          expanded.push_back(std::nullopt);
          continue;
        }
        const at::Tensor& t = e.toTensor();
        if (t.scalar_type() != at::kBool && t.scalar_type() != at::kByte) {
          expanded.push_back(t);
          continue;
        }
        changed = true;
        at::Tensor nz = at::nonzero(t.is_cpu() ? t : t.to(at::kCPU));
        for (int64_t j = 0; j < t.dim(); ++j) expanded.push_back(nz.select(1, j));
      }
      if (changed) v = c10::IValue(expanded);
    }
    inner_(op, ks, stack);
  }

 private:
  TableKernel inner_;
};

// unique / unique_consecutive / repeat_interleave(repeats): result sizes
// depend on the values; computed on the host like nonzero (a sync point).
at::Tensor to_dev(const at::Tensor& t, const at::Tensor& like) { return t.defined() ? t.to(like.device()) : t; }

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2_host(const at::Tensor& self, bool sorted, bool return_inverse,
                                                            bool return_counts) {
  auto [v, i, c] = at::_unique2(self.to(at::kCPU), sorted, return_inverse, return_counts);
  return {to_dev(v, self), to_dev(i, self), to_dev(c, self)};
}

std::tuple<at::Tensor, at::Tensor> unique_host(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [v, i] = at::_unique(self.to(at::kCPU), sorted, return_inverse);
  return {to_dev(v, self), to_dev(i, self)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_host(const at::Tensor& self, int64_t dim, bool sorted,
                                                               bool return_inverse, bool return_counts) {
  auto [v, i, c] = at::unique_dim(self.to(at::kCPU), dim, sorted, return_inverse, return_counts);
  return {to_dev(v, self), to_dev(i, self), to_dev(c, self)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive_host(const at::Tensor& self, bool return_inverse,
                                                                       bool return_counts, std::optional<int64_t> dim) {
  auto [v, i, c] = at::unique_consecutive(self.to(at::kCPU), return_inverse, return_counts, dim);
  return {to_dev(v, self), to_dev(i, self), to_dev(c, self)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_consecutive_host(const at::Tensor& self, int64_t dim,
                                                                           bool return_inverse, bool return_counts) {
  auto [v, i, c] = at::unique_dim_consecutive(self.to(at::kCPU), dim, return_inverse, return_counts);
  return {to_dev(v, self), to_dev(i, self), to_dev(c, self)};
}

at::Tensor repeat_interleave_host(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  return at::repeat_interleave_symint(repeats.to(at::kCPU), output_size).to(repeats.device());
}

// The _native_batch_norm_legit family declares the running stats as mutated
// arguments; native_batch_norm's lowering already updates them.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(const at::Tensor& input,
                                                                const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps) {
  auto r = at::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
  if (!training) {  // as on CPU: no saved statistics in evaluation
    std::get<1>(r) = at::empty({0}, input.options());
    std::get<2>(r) = at::empty({0}, input.options());
  } else {  // CPU saves them in the input's dtype
    std::get<1>(r) = std::get<1>(r).to(input.scalar_type());
    std::get<2>(r) = std::get<2>(r).to(input.scalar_type());
  }
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(const at::Tensor& input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps) {
  return at::native_batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_training(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const at::Tensor& running_mean, const at::Tensor& running_var, double momentum, double eps) {
  auto r = at::native_batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
  std::get<1>(r) = at::empty({0}, input.options());
  std::get<2>(r) = at::empty({0}, input.options());
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [y, mean, invstd] = at::native_batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {y, mean.to(input.scalar_type()), invstd.to(input.scalar_type()),
          at::empty({0}, input.options().dtype(at::kByte))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_new(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  return at::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
                                        eps, output_mask);
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  auto shape = at::infer_size(self.sizes(), mask.sizes());
  if (shape.empty()) shape.push_back(1);  // 0-d: select from a 1-element vector
  c10::List<std::optional<at::Tensor>> idx;
  idx.push_back(mask.expand(shape));
  return at::index(self.expand(shape), idx);
}

// ---------------------------------------------------------------------------
// Fallback for every op without a lowering.

bool cpu_fallback_enabled() {
  static bool enabled = [] {
    const char* v = std::getenv("TORCH_TPU_CPU_FALLBACK");
    return v && std::string(v) == "1";
  }();
  return enabled;
}

// Decompositions StableHLO has no op for (SVD, eigen, QR, LU, solves), the
// FFTs and bincount (data-dependent length) run through an explicit, documented host path: inputs are copied
// to the host, PyTorch's CPU kernel runs, results come back to the device.
// Every call is counted (torch.tpu.host_op_stats()), so it is never hidden.
const std::unordered_set<std::string>& host_ops() {
  static const std::unordered_set<std::string> ops = {
      "aten::_linalg_svd", "aten::_linalg_eigh", "aten::linalg_eig", "aten::_linalg_eigvals",
      "aten::linalg_qr", "aten::linalg_lu_factor_ex", "aten::linalg_lu", "aten::linalg_lu_solve",
      "aten::_linalg_solve_ex", "aten::linalg_inv_ex", "aten::linalg_cholesky_ex", "aten::_linalg_det",
      "aten::_linalg_slogdet", "aten::linalg_ldl_factor_ex", "aten::linalg_ldl_solve", "aten::linalg_lstsq",
      "aten::linalg_householder_product", "aten::geqrf", "aten::ormqr", "aten::triangular_solve",
      "aten::linalg_solve_triangular", "aten::cholesky_inverse", "aten::_cholesky_solve_helper",
      "aten::lu_unpack", "aten::linalg_matrix_exp", "aten::_fft_r2c", "aten::_fft_c2c", "aten::_fft_c2r",
      // the result's length is max(input) + 1: a value the host must read first, as nonzero's count
      "aten::bincount"};
  return ops;
}

std::mutex g_host_mu;
std::map<std::string, int64_t> g_host_counts;

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  if (host_ops().count(name.name)) {
    {
      std::lock_guard<std::mutex> lock(g_host_mu);
      g_host_counts[full]++;
    }
    at::native::cpu_fallback(op, stack);
    return;
  }
  if (cpu_fallback_enabled()) {
    static std::mutex mu;
    static std::unordered_set<std::string> warned;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (warned.insert(full).second)
        TORCH_WARN("torch_tpu: ", full, " has no 'tpu' lowering yet; running it on CPU (TORCH_TPU_CPU_FALLBACK=1)");
    }
    at::native::cpu_fallback(op, stack);
    return;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: operator '", full, "' (",
                              describe_args(op, *stack, op.schema().arguments().size()),
                              ") is not implemented for 'tpu' yet; set TORCH_TPU_CPU_FALLBACK=1 to run it on CPU");
}

}  // namespace

std::map<std::string, int64_t> host_op_counts() {
  std::lock_guard<std::mutex> lock(g_host_mu);
  return g_host_counts;
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>()); }

std::vector<std::string>& unresolved_lowerings() {
  static std::vector<std::string> names;
  return names;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("copy_", copy_);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("nonzero", nonzero_host);
  m.impl("nonzero.out", nonzero_out);
  m.impl("masked_select", masked_select);
  m.impl("_unique2", unique2_host);
  m.impl("_unique", unique_host);
  m.impl("unique_dim", unique_dim_host);
  m.impl("unique_consecutive", unique_consecutive_host);
  m.impl("unique_dim_consecutive", unique_dim_consecutive_host);
  m.impl("repeat_interleave.Tensor", repeat_interleave_host);
  m.impl("_native_batch_norm_legit", batch_norm_legit);
  m.impl("_native_batch_norm_legit.no_stats", batch_norm_legit_no_stats);
  m.impl("_native_batch_norm_legit_no_training", batch_norm_legit_no_training);
  m.impl("_batch_norm_with_update", batch_norm_with_update);
  m.impl("batch_norm_backward", batch_norm_backward_new);

  // A few ops (masked_scatter_) already carry a generic kernel for
  // PrivateUse1 that cannot run on device buffers; replacing it with the
  // lowering is intended, so the dispatcher's one-time "Overriding a
  // previously registered kernel" warning is not shown at import.
  struct QuietOverrides : c10::WarningHandler {
    c10::WarningHandler* next = c10::WarningUtils::get_warning_handler();
    void process(const c10::Warning& w) override {
      if (w.msg().find("Overriding a previously registered kernel") == std::string::npos) next->process(w);
    }
  };
  static QuietOverrides quiet;
  c10::WarningUtils::WarningHandlerGuard quiet_guard(&quiet);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const auto& lowering : ops::lowering_table()) {
    for (const char* name : lowering.aten_ops) {
      std::string full(name);
      auto dot = full.find('.');
      std::string base = "aten::" + full.substr(0, dot);
      std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
      auto handle = dispatcher.findSchema({base, overload});
      if (!handle.has_value()) {  // a typo, or an overload this torch version lacks: tests/test_registration.py
        unresolved_lowerings().push_back(full);
        continue;
      }
      // A device kernel for a CompositeImplicitAutograd op would replace its
      // decomposition and with it autograd: those keep decomposing.
      if (handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) continue;
      if (std::string(lowering.name) == "index" || std::string(lowering.name) == "index_put") {
        m.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<MaskExpandingKernel>(&lowering)));
        continue;
      }
      m.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<TableKernel>(&lowering)));
    }
  }
}

}  // namespace ttpu::aten
