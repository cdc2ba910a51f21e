// Tensor kinds 'tpu' does not hold: sparse (COO, CSR/CSC/BSR/BSC) and
// quantized tensors. Every op that would make or use one on 'tpu' raises one
// NotImplementedError naming the layout and what to do, instead of the
// dispatcher's "Could not run ... from the 'Sparsetpu' backend" (or a
// crash in code that assumes a dense PJRT storage). The dispatch keys of
// such tensors get a fallback; the dense ops that would produce one
// (to_sparse, quantize_per_tensor, ...) get the same refusal.
#include <ATen/ops/_to_copy_native.h>
#include <torch/library.h>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

std::string op_name(const c10::OperatorHandle& op) {
  const auto& n = op.schema().operator_name();
  return n.name + (n.overload_name.empty() ? "" : "." + n.overload_name);
}

[[noreturn]] void refuse_sparse(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: ", op_name(op),
                              ": sparse tensors (layouts torch.sparse_coo, torch.sparse_csr/csc/bsr/bsc) are not "
                              "supported on 'tpu'; keep them on CPU, or use dense tensors on 'tpu' (.to_dense())");
}

[[noreturn]] void refuse_quantized(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: ", op_name(op),
                              ": quantized tensors (torch.quint8/qint8/qint32, per-tensor or per-channel affine) are "
                              "not supported on 'tpu'; dequantize them (.dequantize()) before moving to 'tpu', or "
                              "keep low-precision weights as plain tensors (float8, int8) with explicit scales");
}

// Moving a CSR/CSC/BSR/BSC tensor to 'tpu': the dispatcher adds the target's
// key (SparseCsrPrivateUse1) to the call, and ATen's composite _to_copy, which
// outranks a backend fallback, would move the index and value tensors and
// build the compressed tensor around them, a tensor that fails at its first
// use (some composites then raise internal errors). The move itself refuses;
// any other target runs ATen's own kernel.
at::Tensor compressed_to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                              std::optional<at::Layout> layout, std::optional<at::Device> device,
                              std::optional<bool> pin_memory, bool non_blocking,
                              std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK_NOT_IMPLEMENTED(!device || device->type() != c10::DeviceType::PrivateUse1, "torch_tpu: _to_copy (",
                              self.layout(), " to 'tpu')",
                              ": sparse tensors (layouts torch.sparse_coo, torch.sparse_csr/csc/bsr/bsc) are not "
                              "supported on 'tpu'; keep them on CPU, or use dense tensors on 'tpu' (.to_dense())");
  return at::native::_to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) { m.impl("_to_copy", &compressed_to_copy); }

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>()); }
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
}
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_quantized>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"_to_sparse", "_to_sparse.sparse_dim", "_to_sparse_csr", "_to_sparse_csc",
                           "_to_sparse_bsr", "_to_sparse_bsc", "_sparse_coo_tensor_with_dims_and_tensors",
                           "sparse_resize_", "sparse_resize_and_clear_"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuse_sparse>());
  for (const char* name : {"quantize_per_tensor", "quantize_per_tensor.tensor_qparams", "quantize_per_tensor.tensors",
                           "quantize_per_channel", "quantize_per_tensor_dynamic", "_empty_affine_quantized",
                           "_empty_per_channel_affine_quantized"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuse_quantized>());
}

}  // namespace ttpu::aten
