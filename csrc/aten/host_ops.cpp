// Explicit host paths, each a sync point: ops whose result size depends on
// the values (nonzero, unique, repeat_interleave, boolean-mask indices), the
// decompositions StableHLO has no op for (linalg, FFT; counted), and the
// fallback for every op without a lowering (NotImplementedError, or CPU
// when the user opts in with TORCH_TPU_CPU_FALLBACK=1).
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_set>

#include "aten/native_kernels.h"

namespace ttpu::aten {

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
void MaskExpandingKernel::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                                     torch::jit::Stack* stack) {
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
      if (t.scalar_type() == at::kByte)  // CPU's words (ATen's expandTensors)
        TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
      at::Tensor nz = at::nonzero(t.is_cpu() ? t : t.to(at::kCPU));
      for (int64_t j = 0; j < t.dim(); ++j) expanded.push_back(nz.select(1, j));
    }
    if (changed) v = c10::IValue(expanded);
  }
  inner_(op, ks, stack);
}

// unique / unique_consecutive / repeat_interleave(repeats): result sizes
// depend on the values; computed on the host like nonzero (a sync point).
namespace {
at::Tensor to_dev(const at::Tensor& t, const at::Tensor& like) { return t.defined() ? t.to(like.device()) : t; }
}  // namespace

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

// ---------------------------------------------------------------------------
// Fallback for every op without a lowering.

namespace {

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

}  // namespace

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
                              describe_args(*stack, op.schema().arguments().size()),
                              ") is not implemented for 'tpu' yet; set TORCH_TPU_CPU_FALLBACK=1 to run it on CPU");
}

std::map<std::string, int64_t> host_op_counts() {
  std::lock_guard<std::mutex> lock(g_host_mu);
  return g_host_counts;
}

}  // namespace ttpu::aten
