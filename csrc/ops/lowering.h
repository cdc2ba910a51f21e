// The lowering table: one function per ATen op (or op family) that turns SSA
// inputs and attributes into StableHLO. The same function serves eager
// (one-op modules), fused graphs and compiled FX graphs: a lowering never
// sees buffers, devices or PyTorch objects, only values and attributes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "shlo/builder.h"

namespace ttpu::ops {

using shlo::Builder;
using shlo::ElemType;
using shlo::TensorType;
using shlo::Value;

// One schema argument as the lowering sees it. Tensors and Scalars are SSA
// values (runtime inputs); everything else is a compile-time attribute that
// is part of the cache key.
struct Arg {
  enum Kind { None, Tensor, TensorList, Scalar, ScalarList, Int, IntList, Double, Bool, String, DType, Generator, FloatList };
  Kind kind = None;
  std::vector<Value> values;  // Tensor: 1, TensorList: n, Scalar: 1 (0-d), ScalarList: 1 (1-D), Generator: state
  std::vector<bool> present;  // TensorList with optional entries (Tensor?[])
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> doubles;  // FloatList (float[]): compile-time values
  ElemType dtype = ElemType::F32;
  bool scalar_is_float = false;  // Scalar: the Python value was a float
  double scalar_value = 0;       // Scalar: its value, usable only with kScalarValuesInKey
};

enum class MatmulPrecision { Highest, High, Medium };

// A device-side assertion (what CUDA reports as a device-side assert, raised
// here as the exception CPU raises). The op's executable gets one extra s64
// 0-d result per check: kCheckPassed when every input was valid, else an
// offending value. The runtime reads it at the next sync point (at once in
// Debug mode) and raises, naming the op.
struct CheckSpec {
  bool index_error = true;  // IndexError, else RuntimeError
  std::string message;      // "{}" is replaced by the offending value ...
  bool with_value = true;   // ... unless the message is the user's own (_assert_async's)
  bool operator==(const CheckSpec& o) const {
    return index_error == o.index_error && message == o.message && with_value == o.with_value;
  }
};
constexpr int64_t kCheckPassed = INT64_MIN;
// A check that fails for every value, known while lowering (an index into a
// size-0 dimension): raised at once as CPU's IndexError, not at a sync point.
struct IndexError : std::out_of_range {
  using std::out_of_range::out_of_range;
};
// A case the lowering does not handle yet: NotImplementedError naming it.
struct Unsupported : std::logic_error {
  using std::logic_error::logic_error;
};
// Arguments PyTorch's API refuses with a ValueError (scaled_mm's scale shapes).
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct Check {
  Value bad;  // s64 0-d
  CheckSpec spec;
};

struct LowerCtx {
  Builder& b;
  std::vector<Arg>& args;
  std::vector<TensorType> outs;  // result types (from PyTorch's meta functions)
  std::vector<bool> present;     // false: an optional result nobody asked for (output_mask)
  ElemType common = ElemType::F32;  // PyTorch's result_type over tensor and scalar arguments
  MatmulPrecision precision = MatmulPrecision::Highest;
  // CPU casts every operand, 0-d ones (Python scalars) included, to the
  // common dtype before a bf16/f16 kernel widens it to f32; only mul and div
  // read a 0-d operand at its original precision (TensorIterator's
  // original_scalar_value). Those lowerings set this before reading inputs.
  bool full_precision_scalars = false;
  std::vector<Value> rng;  // kUsesDefaultRng: the generator state (u64[2])
  std::vector<Check> checks;  // device-side assertions the lowering added

  // Asserts that every element of the integer value `values` satisfies `ok`
  // (a pred of the same shape); an offending element is reported.
  void check(const Value& ok, const Value& values, CheckSpec spec);
  // Asserts lo <= values < hi elementwise.
  void check_range(const Value& values, int64_t lo, int64_t hi, CheckSpec spec);
  // An index into a dim of `size` (negative ones count from the end): the
  // message PyTorch's index kernels use, "index {} is out of bounds for
  // dimension {dim} with size {size}", prefixed by `prefix`.
  // allow_negative: -size <= index < size (Python-style), else 0 <= index < size.
  void check_index(const Value& index, int64_t dim, int64_t size, bool index_error, bool allow_negative,
                   const std::string& prefix = "");

  // The op's schema argument names, in the order of `args` (set by the aten
  // layer once per registered overload). A lowering runs only when an
  // executable is built, so reading an argument by name costs nothing per call.
  const std::vector<std::string>* names = nullptr;

  const Value& t(size_t i) const;              // required tensor
  bool has(size_t i) const;                    // argument present (not None)
  const std::vector<Value>& list(size_t i) const;
  Value scalar(size_t i, ElemType as) const;   // a Scalar argument converted to `as`
  Value scalar_like(size_t i, const Value& like) const;  // broadcast to like's shape and type
  int64_t i(size_t k) const;
  double d(size_t k) const;
  bool flag(size_t k) const;
  const std::vector<int64_t>& ints(size_t k) const;
  const std::string& str(size_t k) const;
  const TensorType& out(size_t k = 0) const { return outs.at(k); }
  bool wants(size_t k) const { return k < present.size() ? present[k] : true; }

  // The same accessors by schema argument name, where a name reads better
  // than a position (c.i("dim")) or one lowering serves overloads whose
  // positions differ. An unknown name is an internal error naming it.
  size_t at(std::string_view name) const;
  const Value& t(std::string_view n) const { return t(at(n)); }
  bool has(std::string_view n) const { return has(at(n)); }
  const std::vector<Value>& list(std::string_view n) const { return list(at(n)); }
  Value scalar(std::string_view n, ElemType as) const { return scalar(at(n), as); }
  Value scalar_like(std::string_view n, const Value& like) const { return scalar_like(at(n), like); }
  int64_t i(std::string_view n) const { return i(at(n)); }
  double d(std::string_view n) const { return d(at(n)); }
  bool flag(std::string_view n) const { return flag(at(n)); }
  const std::vector<int64_t>& ints(std::string_view n) const { return ints(at(n)); }
  const std::string& str(std::string_view n) const { return str(at(n)); }
};

using LowerFn = std::vector<Value> (*)(LowerCtx&);

// The op overwrites `self` without reading it (fill_, uniform_, ...): the
// runtime does not load self's old value.
constexpr unsigned kNoReadSelf = 1;
// The output shape depends on Scalar values (arange): they join the cache key.
constexpr unsigned kScalarValuesInKey = 2;
// arange: the result's length (PyTorch's rule, from the Scalar values) joins
// the cache key instead of the values, which are runtime inputs: one
// executable per length and dtype (a decoder's arange(past, past + 1) each token).
constexpr unsigned kRangeSizeInKey = 32;
// The op draws from the default generator without a Generator argument
// (native_dropout): the runtime passes a state in LowerCtx::rng.
constexpr unsigned kUsesDefaultRng = 4;
// Float32 dots/convolutions follow torch.get_float32_matmul_precision().
constexpr unsigned kUsesMatmulPrecision = 8;

// The operands keep their own types (_scaled_mm's float8 matrices beside
// float scales): no common dtype is computed, LowerCtx::common is unset.
constexpr unsigned kNoPromotion = 16;

// Result types for ops PyTorch has no meta function for (convolution_overrideable).
using InferFn = std::vector<TensorType> (*)(LowerCtx&);

struct Lowering {
  const char* name;                     // family name, for messages
  LowerFn fn;
  // ATen overloads it serves: "mm", "max.dim", ...; "add.Tensor+" is the
  // functional overload with the in-place and out= variants PyTorch derives
  // from it (add_.Tensor, add.out), resolved at registration.
  std::vector<const char*> aten_ops;
  unsigned flags = 0;
  InferFn infer = nullptr;              // null: PyTorch's meta function decides
  // Arguments the op updates although its schema does not say so (batch
  // norm's running stats): the lowering returns their new values after the
  // declared results, in this order, and the runtime writes them back.
  std::vector<int> writeback_args = {};
};

// All lowerings, gathered from the family files.
const std::vector<Lowering>& lowering_table();

// Family registrations (each family file defines one; the table is assembled
// in common.cc in this order).
void append_arithmetic(std::vector<Lowering>& t);
void append_unary(std::vector<Lowering>& t);
void append_activations(std::vector<Lowering>& t);
void append_reductions(std::vector<Lowering>& t);
void append_norms(std::vector<Lowering>& t);
void append_losses(std::vector<Lowering>& t);
void append_linalg(std::vector<Lowering>& t);
void append_creation(std::vector<Lowering>& t);
void append_shape(std::vector<Lowering>& t);
void append_random(std::vector<Lowering>& t);
void append_indexing(std::vector<Lowering>& t);
void append_embedding(std::vector<Lowering>& t);
void append_convolution(std::vector<Lowering>& t);
void append_pooling(std::vector<Lowering>& t);
void append_sort_scan(std::vector<Lowering>& t);
void append_special(std::vector<Lowering>& t);
void append_amp(std::vector<Lowering>& t);
void append_rnn(std::vector<Lowering>& t);
void append_attention(std::vector<Lowering>& t);

// The plugin platform executables are compiled for. Set once by the runtime
// when the client starts (Portable until then, and in tests).
enum class Target { Portable, Cpu, Cuda, Tpu };
Target target();
void set_target(Target t);
Target target_from_platform(const std::string& platform);

// A rule with per-platform overrides registered next to the portable one,
// as JAX registers a lowering rule per platform: the portable rule is the
// default, an override replaces it on its platform only (an XLA:CPU
// workaround must not reach GPU or TPU plugins). Serves lowerings and the
// helpers many lowerings share (sum_dims).
template <typename F>
struct PerTarget {
  F portable;
  std::vector<std::pair<Target, F>> overrides = {};
  F get() const {
    const Target on = target();
    for (const auto& [t, f] : overrides)
      if (t == on) return f;
    return portable;
  }
};

// Helpers shared by lowerings.
Value to_type(Builder& b, const Value& v, ElemType t);
Value broadcast_convert(Builder& b, const Value& v, const TensorType& to);
int64_t wrap_dim(int64_t dim, int64_t rank);
std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t rank);  // empty = all
ElemType accumulate_type(ElemType t);  // f32 for f16/bf16, else t
shlo::Precision to_shlo(MatmulPrecision p);

// Views over a flat storage buffer (used by the runtime for reads and writes
// through arbitrary strided views, and by the compiled path for *_scatter ops).
struct ViewSpec {
  ElemType elem;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;  // in elements of `elem`
};
// Reinterpret the bytes of a 1-D value as another element type (view(dtype)).
Value reinterpret_flat(Builder& b, const Value& flat, ElemType to);
// `offset`, when given, is a 0-d s64 runtime value used instead of view.offset,
// so views at different offsets (batch slices) share one executable.
Value gather_view(Builder& b, const Value& base, const ViewSpec& view, const Value* offset = nullptr);
// Returns the new flat base (in the view's element type) with `value` written through the view.
Value scatter_view(Builder& b, const Value& base, const Value& value, const ViewSpec& view,
                   const Value* offset = nullptr);
bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

// Elementwise helpers: input i (tensor or Scalar) converted to `compute` and
// broadcast to result 0's shape; the compute type of float math (f32 for
// f16/bf16 and integer inputs promoted by PyTorch); a value converted to
// result 0's type as the op's only result.
Value ew_in(LowerCtx& c, size_t i, ElemType compute);
// A Scalar argument as ew_in would read it: broadcast like `like`, first
// rounded to a bf16/f16 common dtype unless c.full_precision_scalars.
Value ew_scalar(LowerCtx& c, size_t i, const Value& like);
ElemType float_compute(LowerCtx& c);
std::vector<Value> as_out(LowerCtx& c, const Value& v);
// n evenly spaced values from start to end (0-d, of the compute type) as
// PyTorch's linspace places them: the first half stepping up from start, the
// second half stepping down from end, so both ends are exact.
Value linspace_values(Builder& b, const Value& start, const Value& end, int64_t n);
// Stable sort of `x` along `dim` with its positions: (values, s64 indices).
std::pair<Value, Value> sort_with_indices(Builder& b, const Value& x, int64_t dim, bool descending);
// Inclusive prefix sum (or product) along dim in O(n log n) elementwise work.
Value prefix_scan(Builder& b, const Value& x, int64_t dim, bool product);
Value prefix_sum(Builder& b, const Value& x, int64_t dim);
// Gather along `dim` with a 1-D s64 index (the result's dim takes the index
// length), and its transpose: rows of g added into `size` positions.
Value take_along(Builder& b, const Value& x, int64_t dim, const Value& index);
Value add_along(Builder& b, const Value& g, int64_t dim, const Value& index, int64_t size);
// Sum over `dims` (sorted), without keeping them; on XLA:CPU f32 sums over
// leading dims are emitted as a product with ones.
Value sum_dims(Builder& b, const Value& x, const std::vector<int64_t>& dims);
// Loss reduction modes: 0 none, 1 mean, 2 sum.
Value reduce_loss(Builder& b, const Value& l, int64_t reduction);

}  // namespace ttpu::ops
