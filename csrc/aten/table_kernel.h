// The table kernel: one boxed kernel serves every lowering of the table and
// its functional, in-place and out= variants, in every eager mode. It checks
// devices, marshals the arguments in one pass (marshal.h), then runs the op's
// executable (Strict, Debug) or records it into the pending graph
// (DeferAndFuse), and delivers results or writes them through views.
#pragma once

#include <atomic>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "aten/common.h"
#include "aten/marshal.h"
#include "runtime/executor.h"

namespace ttpu::aten {

class TableKernel final : public c10::OperatorKernel {
 public:
  explicit TableKernel(const ops::Lowering* lowering) : lowering_(lowering) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack);

 private:
  // What an executable's key determines, learnt at its first call: the
  // lowering's arguments (attributes; values bound per build), the common
  // dtype and the result types. Holds no tensor, so a recorded graph keeps
  // no user tensor alive.
  struct Signature {
    std::vector<ops::Arg> args;
    const std::vector<std::string>* names = nullptr;  // the plan's: the kernel outlives its signatures
    std::vector<uint16_t> takes;
    std::vector<ViewInput> views;  // view operands the module gathers (marshal.h)
    bool rng = false;
    ops::MatmulPrecision precision = ops::MatmulPrecision::Highest;
    ElemType common = ElemType::F32;
    std::vector<TensorType> outs;  // declared results, then write-backs (no check flags)
    std::vector<bool> present;
    std::vector<ops::CheckSpec> checks;
    std::vector<std::optional<TensorType>> writeback_types;  // first build only: the targets' types
    // Per declared result: its layout (marshal.h; the module returns it
    // transposed to that order); empty: all contiguous.
    std::vector<ResultLayout> layouts;
    // The result types as the executor gets them: physical order, then the
    // check flags (computed once, read on every call).
    std::vector<TensorType> submitted;
    // The int results (OpPlan::int_returns), as the meta function gave them
    // for these shapes.
    std::vector<c10::IValue> int_returns;
  };
  struct Emitted {
    std::vector<shlo::Value> results;  // declared results, write-backs, then check flags
    std::vector<TensorType> outs;  // as the module returns them (physical order)
    std::vector<bool> present;
    std::vector<ops::CheckSpec> checks;
    std::vector<TensorType> logical;  // declared results and write-backs in PyTorch's dimension order
  };

  void run(const c10::OperatorHandle& op, torch::jit::Stack* stack);
  void submit(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, Marshalled& m, int dev,
              torch::jit::Stack* stack, bool out_beside_input = false);
  // Signatures are never dropped, so the pointer stays valid (recorded graphs keep it).
  const Signature* signature(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, Marshalled& m);
  Signature derive(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, Marshalled& m);
  // A key's first call: derives the signature and runs the lowering once to
  // complete it (inferred result types, check flags).
  std::shared_ptr<const Signature> learn(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                         Marshalled& m);
  Emitted emit(shlo::Builder& b, const std::vector<shlo::Value>& in_values, const Signature& sig, bool known) const;
  void deliver(const std::vector<c10::IValue>& args, std::vector<BufferPtr> outputs, const Signature& sig,
               torch::jit::Stack* stack) const;

  // out= and in-place result dtypes, checked the way CPU's TensorIterator does.
  bool functional_meta(const std::vector<c10::IValue>& args, std::vector<TensorType>& outs,
                       std::vector<bool>& present);
  std::vector<at::ScalarType> functional_dtypes(const std::vector<c10::IValue>& args);
  void check_inplace_cast(const std::vector<c10::IValue>& args);
  void check_out_casts(const std::vector<c10::IValue>& args);
  void compute_in_result_dtype(const std::vector<c10::IValue>& args, std::vector<TensorType>& outs);
  void check_out_dtypes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                        bool meta_refused = false);
  bool out_from_functional(const std::vector<c10::IValue>& args, Signature& sig);
  std::vector<ResultLayout> result_layouts(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) const;
  // Whether an out= shares a storage with an input without overlapping it
  // (checked again once the result's shape is known: a resize may make them overlap).
  bool check_overlapping_writes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) const;
  void check_resized_out_overlap(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                 const Signature& sig) const;

  const ops::Lowering* lowering_;
  std::once_flag planned_;
  OpPlan plan_;
  CpuCheck cpu_check_ = nullptr;                            // cpu_checks.cpp
  std::optional<c10::OperatorHandle> inplace_functional_;  // mul.Tensor for mul_.Tensor
  OpPlan inplace_functional_plan_;
  std::optional<c10::OperatorHandle> functional_;  // out= overloads: the functional one
  OpPlan functional_plan_;
  std::mutex signatures_mutex_;
  // An out= tensor that fully overlaps an input: whether CPU's kernel refuses it
  // (take, gather, cat: "unsupported operation: ... single memory location";
  // elementwise ops accept it). 0 unknown, 1 refuses, 2 accepts; learnt once per op.
  mutable std::atomic<int> full_out_overlap_{0};
  // Signatures by key (every mode)
  std::unordered_map<std::string, std::shared_ptr<const Signature>> signatures_;
};

}  // namespace ttpu::aten
