// A small StableHLO text emitter. It prints the generic MLIR op form
// ("stablehlo.add"(...) : (...) -> ...) because that form has been stable
// across the XLA releases our PJRT plugins span, while pretty forms changed.
// No MLIR library is needed: PJRT plugins parse the text themselves.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ttpu::shlo {

enum class ElemType : uint8_t {
  Pred, S8, S16, S32, S64, U8, U16, U32, U64,
  F16, BF16, F32, F64, C64, C128, F8E4M3FN, F8E5M2,
  F8E4M3FNUZ, F8E5M2FNUZ, F8E8M0FNU,  // float8 variants (E8M0: MX block scales)
  F4E2M1FNX2,  // two float4 e2m1 values per byte: opaque bytes (ui8) on the device, as PyTorch holds them
  // complex32 (ComplexHalf): an f16 (real, imag) pair held as one opaque ui32
  // (real in the low half, as PyTorch lays it out). StableHLO has no
  // complex<f16>: convert() decodes it to complex64 and encodes back, and
  // lowerings compute in complex64 (the ATen layer widens at the boundary).
  C32,
  // bcomplex32 (BComplex32): the same with bfloat16 halves.
  BC32,
};

// complex32 and bcomplex32: complex values packed in one ui32 word.
inline bool is_packed_complex(ElemType t) { return t == ElemType::C32 || t == ElemType::BC32; }
// The type of each half of a packed complex word (f16 or bf16).
inline ElemType packed_half(ElemType t) { return t == ElemType::BC32 ? ElemType::BF16 : ElemType::F16; }

const char* mlir_name(ElemType t);   // "f32", "i1", "ui8", ...
int byte_size(ElemType t);           // storage bytes of one element
bool is_float(ElemType t);           // floating point (not complex)
bool is_float8(ElemType t);          // one of the 8-bit float formats
bool is_complex(ElemType t);
// The element type of one part (real or imaginary) of a complex type.
inline ElemType part_type(ElemType t) { return t == ElemType::C64 ? ElemType::F32 : ElemType::F64; }
bool is_signed_int(ElemType t);
bool is_unsigned_int(ElemType t);   // bool excluded
inline bool is_integral(ElemType t) { return is_signed_int(t) || is_unsigned_int(t); }

struct TensorType {
  ElemType elem = ElemType::F32;
  std::vector<int64_t> dims;
  int64_t numel() const;
  int rank() const { return static_cast<int>(dims.size()); }
  std::string str() const;  // tensor<2x3xf32>
  bool operator==(const TensorType& o) const { return elem == o.elem && dims == o.dims; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

struct Value {
  std::string name;  // "%3" or "%arg0"
  TensorType type;
};

enum class Compare { EQ, NE, LT, LE, GT, GE };
enum class Reducer { Add, Mul, Max, Min, And, Or, Xor };
enum class Precision { Default, High, Highest };

// Builds one function body. Values are SSA names; every helper returns the
// new value with its type, so lowerings never spell types by hand.
// An operand element type the StableHLO op does not take (abs of i1, and
// of f32, sqrt of i16): raised while the module is built, before anything is
// compiled, so the ATen layer can report the op and dtype like CPU does.
class ElementTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Builder {
 public:
  Value arg(const TensorType& type);  // next function argument

  // Generic op: `attrs` is the text inside {...} (empty for none).
  Value op(const std::string& name, const std::vector<Value>& operands,
           const TensorType& result, const std::string& attrs = "");
  std::vector<Value> op_multi(const std::string& name, const std::vector<Value>& operands,
                              const std::vector<TensorType>& results, const std::string& attrs,
                              const std::string& region = "");

  // Elementwise
  Value unary(const char* name, const Value& x);  // e.g. "exponential"
  Value binary(const char* name, const Value& a, const Value& b);  // same shapes
  Value add(const Value& a, const Value& b) { return binary("add", a, b); }
  Value sub(const Value& a, const Value& b) { return binary("subtract", a, b); }
  Value mul(const Value& a, const Value& b) { return binary("multiply", a, b); }
  Value div(const Value& a, const Value& b) { return binary("divide", a, b); }
  // max/min/clamp/reduce(Max|Min) follow PyTorch for floats: a NaN operand
  // gives NaN (see propagate_nan in builder.cc).
  Value max(const Value& a, const Value& b);
  Value min(const Value& a, const Value& b);
  Value compare(Compare dir, const Value& a, const Value& b);
  Value select(const Value& pred, const Value& on_true, const Value& on_false);
  // The reverse of dims (flip).
  Value reverse(const Value& x, const std::vector<int64_t>& dims);
  Value convert(const Value& x, ElemType to);  // no-op when already `to`
  Value bitcast(const Value& x, const TensorType& to);
  Value clamp(const Value& lo, const Value& x, const Value& hi);
  // `r` where no operand is NaN, else a NaN operand (floats; else `r` itself).
  Value propagate_nan(const std::vector<Value>& operands, const Value& r);

  // Constants
  Value constant(double v, ElemType t, const std::vector<int64_t>& dims = {});
  Value constant_int(int64_t v, ElemType t, const std::vector<int64_t>& dims = {});
  Value constant_bits(uint64_t bits, ElemType t, const std::vector<int64_t>& dims = {});
  Value iota(const TensorType& type, int64_t dim);

  // Shape
  Value reshape(const Value& x, const std::vector<int64_t>& dims);
  Value broadcast_in_dim(const Value& x, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& mapping);
  Value broadcast_to(const Value& x, const std::vector<int64_t>& dims);  // numpy rules
  Value transpose(const Value& x, const std::vector<int64_t>& perm);
  Value slice(const Value& x, const std::vector<int64_t>& start,
              const std::vector<int64_t>& limit, const std::vector<int64_t>& stride);
  Value concatenate(const std::vector<Value>& xs, int64_t dim);
  // `interior`: values inserted between neighbouring elements (none when empty).
  Value pad(const Value& x, const Value& pad_value, const std::vector<int64_t>& lo,
            const std::vector<int64_t>& hi, const std::vector<int64_t>& interior = {});
  Value dynamic_update_slice(const Value& base, const Value& update,
                             const std::vector<int64_t>& start);
  // Start indices as 0-d s64 values (runtime offsets).
  Value dynamic_update_slice(const Value& base, const Value& update, const std::vector<Value>& start);
  Value dynamic_slice(const Value& x, const std::vector<Value>& start, const std::vector<int64_t>& sizes);

  // Reductions and contractions
  Value reduce(const Value& x, const Value& init, const std::vector<int64_t>& dims, Reducer r);
  // Variadic reduce returning (value, index) for argmax/argmin along `dim`.
  std::pair<Value, Value> reduce_arg(const Value& x, int64_t dim, bool is_max, ElemType index_type);
  Value dot_general(const Value& a, const Value& b, const std::vector<int64_t>& batch_a,
                    const std::vector<int64_t>& batch_b, const std::vector<int64_t>& contract_a,
                    const std::vector<int64_t>& contract_b, ElemType result, Precision p);

  // Indexing: gather rows of a flat (1-D) operand with an index tensor of any shape.
  Value gather_flat(const Value& flat, const Value& indices);
  // Scatter `updates` into a flat operand at `indices` (same shape as updates), overwriting.
  Value scatter_flat(const Value& flat, const Value& indices, const Value& updates);
  // Generic gather/scatter with full dimension numbers (text of the #stablehlo attribute body).
  Value gather(const Value& operand, const Value& indices, const TensorType& result,
               const std::string& dimension_numbers, const std::vector<int64_t>& slice_sizes);
  Value scatter(const Value& operand, const Value& indices, const Value& updates,
                const std::string& dimension_numbers, Reducer* combine);  // null = overwrite

  // Random bits from a counter-based generator; returns (new_state, bits).
  std::pair<Value, Value> rng_bits(const Value& state, const TensorType& bits_type);

  // Finish the function; returns the whole module text.
  std::string module(const std::vector<Value>& results,
                     const std::vector<int>& donated_arg_for_result = {}) const;

  int num_args() const { return static_cast<int>(args_.size()); }
  // A new unique SSA name, for lowerings that write region bodies themselves.
  std::string fresh();
  // Region bodies (while loops): swap in an empty text, emit the region's ops,
  // swap the function body back; returns the text that was in place.
  std::string swap_body(std::string text) {
    std::swap(body_, text);
    return text;
  }

 private:
  // Data movement of a 16- or 8-bit float as its bit pattern (see builder.cc).
  static bool moves_as_bits(ElemType t);
  Value to_bits(const Value& x);
  Value from_bits(const Value& x, ElemType t);
  std::string region_binary(const char* opname, ElemType t);  // ^bb with one binary op
  std::vector<TensorType> args_;
  std::string body_;
  int next_ = 0;
};

std::string int_array(const std::vector<int64_t>& v);  // array<i64: 1, 2>
std::string fmt_dims(const std::vector<int64_t>& v);   // [1, 2]

}  // namespace ttpu::shlo
