// From an op's boxed arguments to what the runtime and the lowering need, in
// one pass over the schema's argument kinds (marshal), plus what only a cache
// miss needs: PyTorch's meta functions for the result types, the common dtype
// and the sibling overloads whose result types CPU computes in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "aten/common.h"

namespace ttpu::aten {

// One schema argument, classified once per op.
struct ArgInfo {
  ops::Arg::Kind kind = ops::Arg::None;  // how the lowering sees it (None: not passed)
  bool optional_entries = false;  // Tensor?[]: entries may be None, index tensors may live on the host
  bool is_out = false;            // kwarg-only written tensor (out=)
  bool is_mutated = false;        // written tensor (self of an in-place op, or out)
  bool is_index = false;          // positions and selectors (index, indices, condition, mask): no part of value type promotion
};

enum class Variant { Functional, Inplace, Out };

struct OpPlan {
  std::vector<ArgInfo> args;
  std::vector<std::string> names;  // the schema's argument names (LowerCtx::names)
  Variant variant = Variant::Functional;
  size_t num_returns = 0;
  bool returns_list = false;
  // Per schema return: an int or SymInt (the fused attention ops' max_q and
  // max_k). Its value comes from the meta function (Signature::int_returns).
  std::vector<bool> int_returns;
  bool any_int_return = false;
};

OpPlan make_plan(const c10::FunctionSchema& schema);

// A tensor operand passed as its storage's buffer and the view's offset (two
// runtime inputs from `input` on; runtime::view_operand): the module gathers
// the view itself, next to the op that reads it.
struct ViewInput {
  size_t input = 0;
  ops::ViewSpec view;
};

// One call's arguments after the single pass: the executable's cache key, the
// runtime inputs in the order the lowering takes them, and the lowering's
// arguments with every attribute set and values left empty (`takes` says how
// many inputs each argument receives; bind() fills them in a builder).
struct Marshalled {
  std::string key;
  std::vector<BufferPtr> inputs;
  std::vector<ops::Arg> args;
  std::vector<uint16_t> takes;
  bool rng = false;  // a trailing generator state for kUsesDefaultRng
  ops::MatmulPrecision precision = ops::MatmulPrecision::Highest;
  bool skip_self = false;  // kNoReadSelf in place: self's old value is not loaded
  bool layout = false;  // a non-contiguous input: results take the layout the meta function gives
  std::vector<ViewInput> views;  // in input order
};

// How a result is laid out, as CPU lays it out (the meta function's strides):
// empty `perm` for a contiguous result, else its dimensions from outermost to
// innermost in memory (the module returns it transposed to that order) and
// the exact strides the result tensor gets.
struct ResultLayout {
  std::vector<int64_t> perm;
  std::vector<int64_t> strides;
};

// The layout of a dense, non-overlapping tensor whose strides are a
// permutation of contiguous ones (a transpose, channels_last); {} otherwise.
ResultLayout permuted_layout(const at::Tensor& t);

void marshal(const OpPlan& plan, const ops::Lowering& lowering, const c10::OperatorName& name,
             const std::vector<c10::IValue>& args, int dev, Marshalled& m);

// One value per tensor operand: each view input's buffer and offset become
// the view's value (ops::gather_view); other values pass through.
std::vector<shlo::Value> gather_views(shlo::Builder& b, const std::vector<shlo::Value>& in,
                                      const std::vector<ViewInput>& views);

// Gives each argument its values (one per runtime input, in marshalling
// order); returns the generator state when the op draws from the default one.
std::optional<shlo::Value> bind(std::vector<ops::Arg>& args, const std::vector<uint16_t>& takes, bool rng,
                                const std::vector<shlo::Value>& values);

// Result types from PyTorch's own meta functions (type promotion,
// broadcasting and shape errors exactly as on CPU). For in-place ops, the
// written arguments' types. `present` marks results that are real (an
// output_mask may leave some undefined).
// `layouts`, if given, receives per result the layout the meta function
// gives it (permuted_layout); `ints`, if given, its int results in order.
std::vector<TensorType> meta_outputs(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                     const OpPlan& plan, std::vector<bool>& present,
                                     std::vector<ResultLayout>* layouts = nullptr,
                                     std::vector<c10::IValue>* ints = nullptr);

// PyTorch's result type over the value operands (index operands excluded).
ElemType common_dtype(c10::ArrayRef<c10::IValue> args, const OpPlan& plan);

// The functional overload taking the same arguments as an out= overload
// (add.out -> add.Tensor), and the functional op of an in-place one
// (mul_.Tensor -> mul.Tensor).
std::optional<c10::OperatorHandle> functional_sibling(const c10::FunctionSchema& out_schema, const OpPlan& plan);
std::optional<c10::OperatorHandle> inplace_sibling(const c10::FunctionSchema& schema);

// An entry of a Tensor?[] list that holds no tensor (None or undefined).
inline bool absent(const c10::IValue& e) { return e.isNone() || (e.isTensor() && !e.toTensor().defined()); }

}  // namespace ttpu::aten
