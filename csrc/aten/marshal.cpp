// The single marshalling pass of the table kernel and what a cache miss adds
// to it (marshal.h).
#include "aten/marshal.h"

#include <ATen/Dispatch.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DefaultDtype.h>

#include <algorithm>
#include <cstring>

namespace ttpu::aten {

namespace {

ArgInfo classify(const c10::Argument& a) {
  ArgInfo info;
  c10::TypePtr t = a.real_type();  // ScalarType/Layout/MemoryFormat are ints in type()
  if (auto o = t->castRaw<c10::OptionalType>()) t = o->getElementType();
  switch (t->kind()) {
    case c10::TypeKind::TensorType: info.kind = ops::Arg::Tensor; break;
    case c10::TypeKind::NumberType: info.kind = ops::Arg::Scalar; break;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: info.kind = ops::Arg::Int; break;
    case c10::TypeKind::FloatType: info.kind = ops::Arg::Double; break;
    case c10::TypeKind::BoolType: info.kind = ops::Arg::Bool; break;
    case c10::TypeKind::StringType: info.kind = ops::Arg::String; break;
    case c10::TypeKind::ScalarTypeType: info.kind = ops::Arg::DType; break;
    case c10::TypeKind::GeneratorType: info.kind = ops::Arg::Generator; break;
    case c10::TypeKind::ListType: {
      c10::TypePtr e = t->castRaw<c10::ListType>()->getElementType();
      if (e->kind() == c10::TypeKind::TensorType) {
        info.kind = ops::Arg::TensorList;
      } else if (e->kind() == c10::TypeKind::OptionalType) {
        info.kind = ops::Arg::TensorList;
        info.optional_entries = true;
      } else if (e->kind() == c10::TypeKind::NumberType) {
        info.kind = ops::Arg::ScalarList;
      } else if (e->kind() == c10::TypeKind::FloatType) {
        info.kind = ops::Arg::FloatList;  // float[]: compile-time values (histogram's range)
      } else {
        info.kind = ops::Arg::IntList;  // int[], SymInt[], bool[]
      }
      break;
    }
    default: info.kind = ops::Arg::None; break;  // Layout, Device, MemoryFormat...: not the lowering's business
  }
  info.is_mutated = a.alias_info() && a.alias_info()->isWrite();
  info.is_out = info.is_mutated && a.kwarg_only();
  // where's condition and masked_fill's mask select, they do not promote
  // (a float8 where has no Bool/Float8 promotion to refuse)
  info.is_index = a.name() == "index" || a.name() == "indices" || a.name() == "condition" || a.name() == "mask";
  return info;
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

std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  if (v.isBoolList()) {
    for (bool b : v.toBoolList()) out.push_back(b);
    return out;
  }
  for (const c10::IValue& e : v.toListRef()) out.push_back(e.isSymInt() ? e.toSymInt().expect_int() : e.toInt());
  return out;
}

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

}  // namespace

OpPlan make_plan(const c10::FunctionSchema& schema) {
  OpPlan p;
  for (const auto& a : schema.arguments()) {
    p.args.push_back(classify(a));
    p.names.push_back(a.name());
  }
  for (const auto& a : p.args) {
    if (a.is_out) p.variant = Variant::Out;
    else if (a.is_mutated && p.variant != Variant::Out) p.variant = Variant::Inplace;
  }
  p.num_returns = schema.returns().size();
  p.returns_list = p.num_returns == 1 && schema.returns()[0].type()->kind() == c10::TypeKind::ListType;
  for (const auto& r : schema.returns()) {
    c10::TypeKind k = r.type()->kind();
    p.int_returns.push_back(k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType);
    p.any_int_return |= p.int_returns.back();
  }
  return p;
}

void marshal(const OpPlan& plan, const ops::Lowering& lowering, const c10::OperatorName& name,
             const std::vector<c10::IValue>& args, int dev, Marshalled& m) {
  // `m` may be a reused one: its buffers keep their capacity (no allocation
  // per call on the hot path), their contents are reset.
  std::string& key = m.key;
  key.clear();
  m.inputs.clear();
  m.views.clear();
  m.rng = false;
  m.precision = ops::MatmulPrecision::Highest;
  key += lowering.name;
  key += '|';
  key += name.overload_name;
  // mul.Tensor and mul_.Tensor share overload name and lowering, but not
  // result types (the in-place one keeps self's dtype, the functional one
  // promotes): sharing an executable gave a f16 result for f16 + f32 after a
  // f16.add_(f32), and let int64.mul_(1.1) run the float one.
  key += plan.variant == Variant::Inplace ? 'I' : (plan.variant == Variant::Out ? 'O' : 'F');
  key += '|';
  // Promotion of Python floats and of integers to float (uint8 + 5.5) uses
  // torch.get_default_dtype(): the meta result types, and with them the
  // executable, depend on it.
  key += static_cast<char>('A' + static_cast<int>(c10::typeMetaToScalarType(c10::get_default_dtype())));
  m.skip_self = (lowering.flags & ops::kNoReadSelf) && plan.variant == Variant::Inplace;
  m.args.resize(args.size());
  for (ops::Arg& a : m.args) {
    a.kind = ops::Arg::None;
    a.values.clear();
    a.present.clear();
    a.ints.clear();
    a.s.clear();
  }
  m.takes.assign(args.size(), 0);
  int64_t first_numel = -1;

  // A tensor operand: a runtime input (or, for self of kNoReadSelf, only its type).
  auto add_tensor = [&](const at::Tensor& operand, bool is_self, bool host_ok) -> bool {
    // Lazy conj/neg bits: mm/bmm/addmm (and views) are conj-aware in
    // PyTorch, so the Conjugate fallback hands `m.mH` over unresolved; the
    // lowering sees stored values, so operands are resolved first.
    at::Tensor resolved;
    if (operand.is_conj() || operand.is_neg()) resolved = operand.resolve_conj().resolve_neg();
    const at::Tensor& t = resolved.defined() ? resolved : operand;
    if (first_numel < 0) first_numel = t.numel();
    if (t.is_privateuseone()) {
      if (is_self && m.skip_self) {
        append_tensor_key(key, 'S', t);
        return false;
      }
      append_tensor_key(key, 'T', t);
      runtime::StorageHandle& h = handle_of(t);
      if (is_whole_buffer(h, t)) {  // the hot path: read()'s, without looking the storage up again
        m.inputs.push_back(h.buffer);
      } else if (fold_views()) {
        m.views.push_back(ViewInput{m.inputs.size(), view_of(t)});
        runtime::view_operand(h, m.views.back().view, m.inputs, key);
      } else {
        m.inputs.push_back(runtime::read_view(h, view_of(t)));
      }
      return true;
    }
    if (host_ok && t.dim() > 0) {  // index tensors may live on the host, as with CUDA
      append_tensor_key(key, 'h', t);
      at::Tensor host = t.contiguous();
      m.inputs.push_back(runtime::upload(host.const_data_ptr(), TensorType{elem_of(t.scalar_type()), t.sizes().vec()}, dev));
      return true;
    }
    TORCH_CHECK(t.dim() == 0,
                "Expected all tensors to be on the same device, but found at least two devices, tpu:", dev, " and ",
                t.device(), "! (only 0-dim CPU tensors can be mixed with tpu tensors)");
    append_tensor_key(key, 'c', t);
    ElemType et = elem_of(t.scalar_type());
    if (shlo::byte_size(et) <= 8) {
      m.inputs.push_back(runtime::upload_scalar(t.const_data_ptr(), et, dev));
    } else {
      m.inputs.push_back(runtime::upload(t.const_data_ptr(), TensorType{et, {}}, dev));
    }
    return true;
  };
  auto draw = [&](const std::optional<at::Generator>& gen) {
    auto [seed, offset] = next_rng_state(gen, dev, static_cast<uint64_t>(std::max<int64_t>(first_numel, 1)));
    uint64_t state[2] = {seed, offset};
    m.inputs.push_back(runtime::upload(state, TensorType{ElemType::U64, {2}}, dev));
  };

  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo& info = plan.args[i];
    const c10::IValue& v = args[i];
    ops::Arg& a = m.args[i];
    uint16_t& takes = m.takes[i];
    if (info.is_out) {
      key += 'o';
      if (v.isTensor()) key += static_cast<char>('A' + static_cast<int>(v.toTensor().scalar_type()));
      continue;
    }
    if (v.isNone() && info.kind != ops::Arg::Generator) {
      key += 'n';
      continue;
    }
    switch (info.kind) {
      case ops::Arg::Tensor: {
        const at::Tensor& t = v.toTensor();
        if (!t.defined()) {
          key += 'n';
          break;
        }
        if (add_tensor(t, i == 0, false)) a.kind = ops::Arg::Tensor, takes = 1;
        break;
      }
      case ops::Arg::TensorList:
        a.kind = ops::Arg::TensorList;
        if (!info.optional_entries) {
          auto list = v.toTensorVector();
          key += 'L';
          append_int(key, static_cast<int64_t>(list.size()));
          for (const at::Tensor& t : list) add_tensor(t, false, false), a.present.push_back(true);
          takes = static_cast<uint16_t>(list.size());
          break;
        }
        key += 'P';
        for (const c10::IValue& e : v.toListRef()) {
          bool here = !absent(e);
          a.present.push_back(here);
          if (!here) {
            key += 'n';
            continue;
          }
          add_tensor(e.toTensor(), false, /*host_ok=*/true);
          ++takes;
        }
        break;
      case ops::Arg::Scalar: {
        at::Scalar s = v.toScalar();
        if (s.isComplex()) {
          // A complex Python scalar: a complex128 0-d input; the lowering
          // converts it to the common (complex) dtype, or to a real one by
          // its real part where CPU allows that (fill_ checks the imaginary
          // part first, as c10's checked conversion does).
          key += 'c';
          a.kind = ops::Arg::Scalar;
          a.scalar_is_float = true;
          c10::complex<double> z = s.toComplexDouble();
          a.scalar_value = z.real();
          takes = 1;
          m.inputs.push_back(runtime::upload(&z, TensorType{ElemType::C128, {}}, dev));
          break;
        }
        if (lowering.flags & ops::kScalarValuesInKey) key += s.toDouble() == s.toDouble() ? std::to_string(s.toDouble()) : "nan";
        a.kind = ops::Arg::Scalar;
        a.scalar_is_float = s.isFloatingPoint();
        a.scalar_value = s.toDouble();
        takes = 1;
        if (s.isBoolean()) {
          key += 'b';
          bool b = s.toBool();
          m.inputs.push_back(runtime::upload_scalar(&b, ElemType::Pred, dev));
        } else if (s.isIntegral(false)) {
          key += 'i';
          int64_t x = s.toLong();
          m.inputs.push_back(runtime::upload_scalar(&x, ElemType::S64, dev));
        } else {
          key += 'f';
          double x = s.toDouble();
          m.inputs.push_back(runtime::upload_scalar(&x, ElemType::F64, dev));
        }
        break;
      }
      case ops::Arg::ScalarList: {
        std::vector<double> xs;
        for (const c10::IValue& e : v.toListRef()) xs.push_back(e.toScalar().toDouble());
        key += 'l';
        append_int(key, static_cast<int64_t>(xs.size()));
        m.inputs.push_back(runtime::upload(xs.data(), TensorType{ElemType::F64, {(int64_t)xs.size()}}, dev));
        a.kind = ops::Arg::ScalarList;
        takes = 1;
        break;
      }
      case ops::Arg::Int:
        a.kind = ops::Arg::Int;
        a.i = v.isSymInt() ? v.toSymInt().expect_int() : v.toInt();
        key += 'i';
        append_int(key, a.i);
        break;
      case ops::Arg::IntList:
        a.kind = ops::Arg::IntList;
        a.ints = int_list(v);
        key += '[';
        for (auto x : a.ints) append_int(key, x);
        key += ']';
        break;
      case ops::Arg::FloatList: {
        a.kind = ops::Arg::FloatList;
        a.doubles.clear();
        key += 'f';
        for (const c10::IValue& e : v.toListRef()) {
          double x = e.toDouble();
          uint64_t bits;
          std::memcpy(&bits, &x, sizeof bits);
          a.doubles.push_back(x);
          append_int(key, static_cast<int64_t>(bits));
        }
        key += ']';
        break;
      }
      case ops::Arg::Double: {
        a.kind = ops::Arg::Double;
        a.d = v.toDouble();
        uint64_t bits;
        std::memcpy(&bits, &a.d, 8);
        key += 'd';
        append_int(key, static_cast<int64_t>(bits));
        break;
      }
      case ops::Arg::Bool:
        a.kind = ops::Arg::Bool;
        a.b = v.toBool();
        key += a.b ? "B1" : "B0";
        break;
      case ops::Arg::String:
        a.kind = ops::Arg::String;
        a.s = v.toStringRef();
        key += 's' + a.s + ';';
        break;
      case ops::Arg::DType:
        a.kind = ops::Arg::DType;
        a.i = v.toInt();
        a.dtype = elem_of(static_cast<at::ScalarType>(a.i));
        key += 't';
        append_int(key, a.i);
        break;
      case ops::Arg::Generator:
        a.kind = ops::Arg::Generator;
        takes = 1;
        key += 'g';
        draw(v.isNone() ? std::nullopt : std::optional<at::Generator>(v.toGenerator()));
        break;
      case ops::Arg::None: key += '_'; break;
    }
  }
  if (lowering.flags & ops::kRangeSizeInKey) {
    // arange.start_out(start, end, step, out): the length, by ATen's own rule
    // (its bound checks raise CPU's errors); the values stay runtime scalars
    TORCH_INTERNAL_ASSERT(args.size() == 4 && args[3].isTensor());
    const at::Scalar start = args[0].toScalar(), end = args[1].toScalar(), step = args[2].toScalar();
    int64_t n = -1;
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, args[3].toTensor().scalar_type(), "arange", [&] {
      n = at::native::compute_arange_size<scalar_t>(start, end, step);
    });
    key += 'n';
    append_int(key, n);
  }
  if (lowering.flags & ops::kUsesDefaultRng) {
    m.rng = true;
    key += 'R';
    draw(std::nullopt);
  }
  if (lowering.flags & ops::kUsesMatmulPrecision) {
    m.precision = current_precision();
    key += static_cast<char>('0' + static_cast<int>(m.precision));
  }
}

std::vector<shlo::Value> gather_views(shlo::Builder& b, const std::vector<shlo::Value>& in,
                                      const std::vector<ViewInput>& views) {
  std::vector<shlo::Value> out;
  out.reserve(in.size());
  size_t next_view = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (next_view < views.size() && views[next_view].input == i) {
      out.push_back(ops::gather_view(b, in[i], views[next_view].view, &in[i + 1]));
      ++next_view, ++i;  // the offset is consumed
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

std::optional<shlo::Value> bind(std::vector<ops::Arg>& args, const std::vector<uint16_t>& takes, bool rng,
                                const std::vector<shlo::Value>& values) {
  size_t next = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    args[i].values.clear();
    for (uint16_t k = 0; k < takes[i]; ++k) args[i].values.push_back(values.at(next++));
  }
  if (rng) return values.at(next++);
  return std::nullopt;
}

ResultLayout permuted_layout(const at::Tensor& t) {
  if (!t.defined() || t.dim() < 2 || t.is_contiguous() || !t.is_non_overlapping_and_dense()) return {};
  // Size-1 dims first (where they go does not move any element), then the
  // others from the largest stride to the smallest (distinct: t is dense).
  ResultLayout l;
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < t.dim(); ++d) (t.size(d) == 1 ? l.perm : rest).push_back(d);
  std::sort(rest.begin(), rest.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  l.perm.insert(l.perm.end(), rest.begin(), rest.end());
  l.strides = t.strides().vec();
  return l;
}

std::vector<TensorType> meta_outputs(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                     const OpPlan& plan, std::vector<bool>& present,
                                     std::vector<ResultLayout>* layouts, std::vector<c10::IValue>* ints) {
  torch::jit::Stack ms;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      ms.emplace_back(to_meta(v.toTensor()));
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorVector()) l.push_back(to_meta(t));
      ms.emplace_back(l);
    } else if (v.isList() && plan.args[i].optional_entries) {
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
    } else if (plan.args[i].kind == ops::Arg::Generator) {
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
  auto layout = [&](const at::Tensor& t) {
    if (layouts) layouts->push_back(permuted_layout(t));
  };
  for (const c10::IValue& r : ms) {
    if (r.isTensor()) {
      layout(r.toTensor());
      outs.push_back(meta_type(r.toTensor()));
      present.push_back(r.toTensor().defined());
    } else if (r.isTensorList()) {
      for (const at::Tensor& t : r.toTensorVector()) layout(t), outs.push_back(meta_type(t)), present.push_back(true);
    } else if (r.isNone()) {
      layout(at::Tensor());
      outs.push_back(meta_type(at::Tensor()));
      present.push_back(false);
    } else if (ints && (r.isInt() || r.isSymInt())) {
      ints->push_back(r);
    }
  }
  return outs;
}

// Index and selector operands do not take part in promotion (index_select
// on a float8 tensor has no float8/int64 promotion to refuse, as on CPU).
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
    } else if (v.isScalar() && plan.args[i].kind == ops::Arg::Scalar) {
      state = at::native::update_result_type_state(v.toScalar(), state);
      any = true;
    }
  }
  if (!any) return ElemType::F32;
  return elem_of(at::native::result_type(state));
}

// Its result dtype is the dtype CPU computes in before casting into out.
std::optional<c10::OperatorHandle> functional_sibling(const c10::FunctionSchema& out_schema, const OpPlan& plan) {
  std::vector<const c10::Argument*> ins;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    if (plan.args[i].kind == ops::Arg::DType) return std::nullopt;  // sum(dtype=None, out=) computes in out's dtype
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

// Same overload name and arguments, no trailing underscore, nothing mutated.
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

}  // namespace ttpu::aten
