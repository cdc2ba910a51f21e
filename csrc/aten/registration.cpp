// Registration for PrivateUse1: the storage/view primitives, copies, host
// paths and composites by name, every lowering of the table through the
// table kernel (an overload name that resolves to nothing is reported, see
// tests/test_registration.py), and the fallback for the rest.
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <algorithm>
#include <unordered_map>

#include "aten/native_kernels.h"
#include "aten/table_kernel.h"

namespace ttpu::aten {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>()); }

std::vector<std::string>& unresolved_lowerings() {
  static std::vector<std::string> names;
  return names;
}

std::vector<std::pair<std::string, std::string>>& registered_lowerings() {
  static std::vector<std::pair<std::string, std::string>> ops;
  return ops;
}

namespace {

// A table name "op.overload+" is the functional overload with the in-place
// and out= variants PyTorch derives from it: "op_.overload", and the
// overload of "op" whose schema is the functional one plus out= arguments
// (add.Tensor -> add.out, eq.Scalar -> eq.Scalar_out, div.Tensor_mode ->
// div.out_mode; torchgen pairs them by the same rule). Only variants that
// exist are returned; none at all is reported as unresolved.
std::vector<std::string> with_variants(const std::string& functional) {
  static const auto overloads = [] {
    std::unordered_map<std::string, std::vector<std::string>> by_name;
    for (const auto& op : c10::Dispatcher::singleton().getAllOpNames()) by_name[op.name].push_back(op.overload_name);
    return by_name;
  }();
  auto& dispatcher = c10::Dispatcher::singleton();
  auto dot = functional.find('.');
  std::string base = functional.substr(0, dot), overload = dot == std::string::npos ? "" : functional.substr(dot + 1);
  auto handle = dispatcher.findSchema({"aten::" + base, overload});
  if (!handle) return {};
  const auto& args = handle->schema().arguments();
  auto same_inputs = [&](const c10::FunctionSchema& s, bool out) {
    size_t n = 0;
    for (const auto& a : s.arguments()) {
      if (out && a.is_out()) continue;
      if (n >= args.size() || a.name() != args[n].name() || a.type()->str() != args[n].type()->str()) return false;
      ++n;
    }
    return n == args.size();
  };
  std::vector<std::string> found;
  auto inplace = dispatcher.findSchema({"aten::" + base + "_", overload});
  if (inplace && same_inputs(inplace->schema(), false)) found.push_back(base + "_" + (overload.empty() ? "" : "." + overload));
  auto it = overloads.find("aten::" + base);
  if (it != overloads.end()) {
    for (const auto& o : it->second) {
      auto h = dispatcher.findSchema({"aten::" + base, o});
      if (h && h->schema().is_mutable() && !o.empty() && o != overload && same_inputs(h->schema(), true) &&
          std::any_of(h->schema().arguments().begin(), h->schema().arguments().end(),
                      [](const c10::Argument& a) { return a.is_out(); }))
        found.push_back(base + "." + o);
    }
  }
  return found;
}

// The overload names a table entry stands for, "+" entries expanded.
std::vector<std::string> overload_names(const ops::Lowering& lowering) {
  std::vector<std::string> names;
  for (const char* name : lowering.aten_ops) {
    std::string full(name);
    if (full.empty() || full.back() != '+') {
      names.push_back(full);
      continue;
    }
    full.pop_back();
    auto variants = with_variants(full);
    if (variants.empty()) unresolved_lowerings().push_back(full + "+ (no in-place or out= variant)");
    names.push_back(full);
    names.insert(names.end(), variants.begin(), variants.end());
  }
  return names;
}

}  // namespace

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
  m.impl("equal", equal);
  m.impl("narrow_copy", narrow_copy);
  m.impl("bernoulli.out", bernoulli_out);
  m.impl("_transformer_encoder_layer_fwd", transformer_encoder_layer_fwd);
  m.impl("masked_select.out", masked_select_out);
  m.impl("rrelu_with_noise", rrelu_with_noise);
  m.impl("rrelu_with_noise_", rrelu_with_noise_);
  m.impl("rrelu_with_noise.out", rrelu_with_noise_out);
  m.impl("_efficientzerotensor", efficient_zero_tensor);
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
    for (const std::string& full : overload_names(lowering)) {
      const char* name = full.c_str();
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
      registered_lowerings().emplace_back(full, lowering.name);
      if (std::string(lowering.name) == "index" || std::string(lowering.name) == "index_put") {
        m.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<MaskExpandingKernel>(&lowering)));
        continue;
      }
      m.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<TableKernel>(&lowering)));
    }
  }
}

}  // namespace ttpu::aten
