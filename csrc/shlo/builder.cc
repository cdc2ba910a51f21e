#include "shlo/builder.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace ttpu::shlo {

const char* mlir_name(ElemType t) {
  switch (t) {
    case ElemType::Pred: return "i1";
    case ElemType::S8: return "i8";
    case ElemType::S16: return "i16";
    case ElemType::S32: return "i32";
    case ElemType::S64: return "i64";
    case ElemType::U8: return "ui8";
    case ElemType::U16: return "ui16";
    case ElemType::U32: return "ui32";
    case ElemType::U64: return "ui64";
    case ElemType::F16: return "f16";
    case ElemType::BF16: return "bf16";
    case ElemType::F32: return "f32";
    case ElemType::F64: return "f64";
    case ElemType::C64: return "complex<f32>";
    case ElemType::C128: return "complex<f64>";
    case ElemType::F8E4M3FN: return "f8E4M3FN";
    case ElemType::F8E5M2: return "f8E5M2";
    case ElemType::F8E4M3FNUZ: return "f8E4M3FNUZ";
    case ElemType::F8E5M2FNUZ: return "f8E5M2FNUZ";
    case ElemType::F8E8M0FNU: return "f8E8M0FNU";
    case ElemType::F4E2M1FNX2: return "ui8";
    case ElemType::C32: case ElemType::BC32: return "ui32";
  }
  return "?";
}

int byte_size(ElemType t) {
  switch (t) {
    case ElemType::Pred: case ElemType::S8: case ElemType::U8:
    case ElemType::F8E4M3FN: case ElemType::F8E5M2: case ElemType::F8E4M3FNUZ: case ElemType::F8E5M2FNUZ:
    case ElemType::F8E8M0FNU: case ElemType::F4E2M1FNX2: return 1;
    case ElemType::S16: case ElemType::U16: case ElemType::F16: case ElemType::BF16: return 2;
    case ElemType::S32: case ElemType::U32: case ElemType::F32: case ElemType::C32: case ElemType::BC32: return 4;
    case ElemType::S64: case ElemType::U64: case ElemType::F64: case ElemType::C64: return 8;
    case ElemType::C128: return 16;
  }
  return 0;
}

bool is_float(ElemType t) {
  return t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F32 || t == ElemType::F64 || is_float8(t);
}
bool is_float8(ElemType t) {
  return t == ElemType::F8E4M3FN || t == ElemType::F8E5M2 || t == ElemType::F8E4M3FNUZ ||
         t == ElemType::F8E5M2FNUZ || t == ElemType::F8E8M0FNU;
}
bool is_complex(ElemType t) { return t == ElemType::C64 || t == ElemType::C128; }
bool is_signed_int(ElemType t) {
  return t == ElemType::S8 || t == ElemType::S16 || t == ElemType::S32 || t == ElemType::S64;
}
bool is_unsigned_int(ElemType t) {
  return t == ElemType::U8 || t == ElemType::U16 || t == ElemType::U32 || t == ElemType::U64;
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  for (auto d : dims) {
    s += std::to_string(d);
    s += 'x';
  }
  s += mlir_name(elem);
  s += '>';
  return s;
}

std::string fmt_dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string int_array(const std::vector<int64_t>& v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) {
    s += i ? ", " : ": ";
    s += std::to_string(v[i]);
  }
  return s + ">";
}

static std::string types_of(const std::vector<Value>& vs) {
  std::string s;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i) s += ", ";
    s += vs[i].type.str();
  }
  return s;
}

std::string Builder::fresh() { return "%v" + std::to_string(next_++); }

Value Builder::arg(const TensorType& type) {
  Value v{"%arg" + std::to_string(args_.size()), type};
  args_.push_back(type);
  return v;
}

Value Builder::op(const std::string& name, const std::vector<Value>& operands,
                  const TensorType& result, const std::string& attrs) {
  return op_multi(name, operands, {result}, attrs)[0];
}

namespace {

// The element-type constraints of the StableHLO ops lowerings emit most
// (spec: "Constraints" of each op), checked on the first operand.
void check_element_type(const std::string& name, const std::vector<Value>& operands) {
  if (operands.empty()) return;
  ElemType t = operands[0].type.elem;
  bool fp = is_float(t) || is_complex(t), bits = is_integral(t) || t == ElemType::Pred;
  static const char* const kFloatOnly[] = {"sqrt", "rsqrt", "exponential", "exponential_minus_one", "log",
                                           "log_plus_one", "logistic", "tanh", "sine", "cosine", "tan", "cbrt",
                                           "floor", "ceil", "round_nearest_even", "round_nearest_afz", "atan2",
                                           "is_finite", "chlo.erf", "chlo.lgamma", "chlo.digamma"};
  static const char* const kBitsOnly[] = {"and", "or", "xor", "not", "shift_left", "shift_right_arithmetic",
                                          "shift_right_logical", "popcnt", "count_leading_zeros"};
  static const char* const kNotBool[] = {"abs", "negate", "sign", "divide", "remainder", "power", "subtract"};
  // Complex numbers have no order: PyTorch's CPU kernels refuse max/min/
  // clamp/sort of them, while XLA would order them (or fail to compile).
  // Rounding, remainder, atan2, is_finite and the special functions take
  // real floats only (XLA:CPU crashed compiling a complex remainder; CPU
  // refuses fmod/atan2/floor/erf of complex tensors).
  static const char* const kNotComplex[] = {"maximum", "minimum", "clamp", "remainder", "floor", "ceil",
                                            "round_nearest_even", "round_nearest_afz", "atan2", "is_finite",
                                            "chlo.erf", "chlo.lgamma", "chlo.digamma"};
  auto in = [&](const auto& list) {
    for (const char* n : list)
      if (name == n) return true;
    return false;
  };
  bool bad = (in(kFloatOnly) && !fp) || (in(kBitsOnly) && !bits) || (in(kNotBool) && t == ElemType::Pred) ||
             (in(kNotComplex) && is_complex(t));
  if (bad) throw ElementTypeError("stablehlo." + name + " does not take " + mlir_name(t) + " operands");
}

}  // namespace

std::vector<Value> Builder::op_multi(const std::string& name, const std::vector<Value>& operands,
                                     const std::vector<TensorType>& results,
                                     const std::string& attrs, const std::string& region) {
  check_element_type(name, operands);
  std::string id = fresh();
  std::ostringstream os;
  os << "    " << id;
  if (results.size() > 1) os << ":" << results.size();
  // Names with a dialect prefix ("chlo.erf") are used as they are.
  os << " = \"" << (name.find('.') == std::string::npos ? "stablehlo." : "") << name << "\"(";
  for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << operands[i].name;
  os << ")";
  if (!region.empty()) os << " (" << region << ")";
  if (!attrs.empty()) os << " {" << attrs << "}";
  os << " : (" << types_of(operands) << ") -> ";
  if (results.size() == 1) {
    os << results[0].str();
  } else {
    os << "(";
    for (size_t i = 0; i < results.size(); ++i) os << (i ? ", " : "") << results[i].str();
    os << ")";
  }
  os << "\n";
  body_ += os.str();
  std::vector<Value> out;
  if (results.size() == 1) {
    out.push_back({id, results[0]});
  } else {
    for (size_t i = 0; i < results.size(); ++i) out.push_back({id + "#" + std::to_string(i), results[i]});
  }
  return out;
}

Value Builder::unary(const char* name, const Value& x) { return op(name, {x}, x.type); }

Value Builder::binary(const char* name, const Value& a, const Value& b) {
  if (a.type != b.type)
    throw std::runtime_error(std::string("shlo: operand types differ for ") + name + ": " +
                             a.type.str() + " vs " + b.type.str());
  return op(name, {a, b}, a.type);
}

Value Builder::compare(Compare dir, const Value& a, const Value& b) {
  static const char* names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  if (is_complex(a.type.elem) && dir != Compare::EQ && dir != Compare::NE)
    throw ElementTypeError(std::string("an ordered comparison (") + names[static_cast<int>(dir)] +
                           ") does not take " + mlir_name(a.type.elem) + " operands");
  TensorType r{ElemType::Pred, a.type.dims};
  std::string attrs = std::string("comparison_direction = #stablehlo<comparison_direction ") +
                      names[static_cast<int>(dir)] + ">";
  if (is_float(a.type.elem)) attrs += ", compare_type = #stablehlo<comparison_type FLOAT>";
  else if (is_unsigned_int(a.type.elem) || a.type.elem == ElemType::Pred)
    attrs += ", compare_type = #stablehlo<comparison_type UNSIGNED>";
  else if (is_signed_int(a.type.elem))
    attrs += ", compare_type = #stablehlo<comparison_type SIGNED>";
  return op("compare", {a, b}, r, attrs);
}

// XLA:CPU moves some 16- and 8-bit floats through f32 (a concatenate, select
// or scatter of bf16 is widened and rounded back), which rewrites NaN payloads
// and signs: bf16 0x7f81 comes back as 0x7fc0, f8e5m2 0xfd as 0x7f. CPU's
// copies, cat, where and index ops keep every bit, so the builder moves such
// values as unsigned integers of the same width; a bitcast costs nothing.
bool Builder::moves_as_bits(ElemType t) { return is_float(t) && byte_size(t) <= 2; }

Value Builder::to_bits(const Value& x) {
  return bitcast(x, TensorType{byte_size(x.type.elem) == 2 ? ElemType::U16 : ElemType::U8, x.type.dims});
}

Value Builder::from_bits(const Value& x, ElemType t) { return bitcast(x, TensorType{t, x.type.dims}); }

Value Builder::select(const Value& pred, const Value& on_true, const Value& on_false) {
  if (moves_as_bits(on_true.type.elem))
    return from_bits(select(pred, to_bits(on_true), to_bits(on_false)), on_true.type.elem);
  return op("select", {pred, on_true, on_false}, on_true.type);
}

Value Builder::reverse(const Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  if (moves_as_bits(x.type.elem)) return from_bits(reverse(to_bits(x), dims), x.type.elem);
  return op("reverse", {x}, x.type, "dimensions = " + int_array(dims));
}

Value Builder::convert(const Value& x, ElemType to) {
  if (x.type.elem == to) return x;
  TensorType r{to, x.type.dims};
  if (is_packed_complex(x.type.elem) || is_packed_complex(to)) {
    // complex32 <-> complex64: the ui32 splits into its two f16 halves
    // (bitcast_convert puts the low half first, as in memory).
    std::vector<int64_t> pair_dims = x.type.dims;
    pair_dims.push_back(2);
    const int64_t rank = x.type.rank();
    std::vector<int64_t> zero(rank + 1, 0), one(rank + 1, 1), lim = pair_dims;
    if (is_packed_complex(x.type.elem)) {
      Value halves = bitcast(x, TensorType{packed_half(x.type.elem), pair_dims});
      auto part = [&](int64_t k) {
        std::vector<int64_t> start = zero, stop = lim;
        start[rank] = k;
        stop[rank] = k + 1;
        return convert(reshape(slice(halves, start, stop, one), x.type.dims), ElemType::F32);
      };
      Value c = op("complex", {part(0), part(1)}, TensorType{ElemType::C64, x.type.dims});
      return convert(c, to);
    }
    Value c = convert(x, ElemType::C64);
    std::vector<int64_t> one_dims = x.type.dims;
    one_dims.push_back(1);
    auto half = [&](const char* which) {
      Value p = op(which, {c}, TensorType{ElemType::F32, x.type.dims});
      return reshape(convert(p, packed_half(to)), one_dims);
    };
    return bitcast(concatenate({half("real"), half("imag")}, rank), r);
  }
  if (is_complex(x.type.elem) && !is_complex(to)) {
    // PyTorch casts complex to real by dropping the imaginary part, and to
    // bool by "!= 0": either part nonzero (NaN included).
    ElemType part = part_type(x.type.elem);
    Value re = op("real", {x}, TensorType{part, x.type.dims});
    if (to != ElemType::Pred) return convert(re, to);
    Value im = op("imag", {x}, TensorType{part, x.type.dims});
    return op("or", {convert(re, to), convert(im, to)}, r);
  }
  if (to == ElemType::Pred && !is_complex(x.type.elem)) {
    // XLA converts to PRED by truncation for some types; PyTorch means "!= 0".
    Value zero = constant(0, x.type.elem, x.type.dims);
    return compare(Compare::NE, x, zero);
  }
  if (to == ElemType::F8E4M3FN && (is_float(x.type.elem) || is_integral(x.type.elem))) {
    // e4m3fn has no infinity: like PyTorch, out-of-range values (and +-inf)
    // saturate to +-448 rather than becoming NaN; NaN stays NaN.
    Value f = convert(x, ElemType::F32);
    Value lim = constant(448.0, ElemType::F32, x.type.dims);
    Value clamped = op("clamp", {op("negate", {lim}, lim.type), f, lim}, f.type);
    return op("convert", {clamped}, r);
  }
  if (to == ElemType::F8E8M0FNU && (is_float(x.type.elem) || is_integral(x.type.elem) || x.type.elem == ElemType::Pred)) {
    // e8m0 holds only a power of two's exponent (no sign, no zero): like
    // PyTorch, the sign is dropped and zero becomes the smallest value,
    // 2^-127 (byte 0); XLA's convert would give NaN for both.
    Value a = op("abs", {convert(x, ElemType::F32)}, TensorType{ElemType::F32, x.type.dims});
    Value e = op("convert", {a}, r);
    Value zero = compare(Compare::EQ, a, constant(0.0, ElemType::F32, x.type.dims));
    return select(zero, bitcast(constant_int(0, ElemType::U8, x.type.dims), r), e);
  }
  if (is_float(x.type.elem) && (to == ElemType::S8 || to == ElemType::S16 || to == ElemType::S32 ||
                                 to == ElemType::S64 || to == ElemType::U8)) {
    // PyTorch CPU casts like x86's truncating conversion: to int64 (uint8
    // goes through int64 too, c10's static_cast_with_inter_type) or to int32
    // (int8/int16/int32), where NaN, +-inf and out-of-range values become the
    // minimum (INT64_MIN / INT32_MIN), then wraps to the narrower type
    // (-2.0 -> uint8 254, -300.0 -> int8 -44). XLA's convert saturates.
    ElemType via = (to == ElemType::S64 || to == ElemType::U8) ? ElemType::S64 : ElemType::S32;
    Value f = (x.type.elem == ElemType::F16 || x.type.elem == ElemType::BF16) ? convert(x, ElemType::F32) : x;
    double lim = via == ElemType::S64 ? 9223372036854775808.0 : 2147483648.0;
    Value in_range = binary("and", compare(Compare::GE, f, constant(-lim, f.type.elem, f.type.dims)),
                            compare(Compare::LT, f, constant(lim, f.type.elem, f.type.dims)));
    TensorType vt{via, x.type.dims};
    Value lowest = via == ElemType::S64 ? constant_int(std::numeric_limits<int64_t>::min(), via, x.type.dims)
                                        : constant_int(std::numeric_limits<int32_t>::min(), via, x.type.dims);
    Value v = select(in_range, op("convert", {f}, vt), lowest);
    return via == to ? v : op("convert", {v}, r);
  }
  if (x.type.elem == ElemType::Pred && is_float(to)) {
    return select(x, constant(1.0, to, x.type.dims), constant(0.0, to, x.type.dims));
  }
  return op("convert", {x}, r);
}

Value Builder::bitcast(const Value& x, const TensorType& to) { return op("bitcast_convert", {x}, to); }

// NaN in max/min/clamp and in Max/Min reductions: PyTorch (and StableHLO's
// spec) propagate it, but XLA:CPU emits fast min/max that return the other
// operand unless --xla_cpu_enable_fast_min_max=false. That flag is a CPU-only
// setting (and the persistent cache would have to know it), so the lowering
// itself selects the NaN: correct on every plugin, and XLA fuses the selects
// into the same loop.
Value Builder::propagate_nan(const std::vector<Value>& operands, const Value& r) {
  if (!is_float(r.type.elem)) return r;
  Value out = r;
  for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
    Value v = it->type.dims == r.type.dims ? *it : broadcast_in_dim(*it, r.type.dims, {});
    out = select(compare(Compare::NE, v, v), v, out);
  }
  return out;
}

Value Builder::max(const Value& a, const Value& b) { return propagate_nan({a, b}, binary("maximum", a, b)); }
Value Builder::min(const Value& a, const Value& b) { return propagate_nan({a, b}, binary("minimum", a, b)); }

// lo/hi may be 0-d (stablehlo.clamp broadcasts them).
Value Builder::clamp(const Value& lo, const Value& x, const Value& hi) {
  return propagate_nan({x, lo, hi}, op("clamp", {lo, x, hi}, x.type));
}

static uint64_t float_bits(double v, ElemType t) {
  if (t == ElemType::F64) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
  float f = static_cast<float>(v);
  uint32_t b32;
  std::memcpy(&b32, &f, 4);
  if (t == ElemType::F32) return b32;
  if (t == ElemType::BF16) {
    // round to nearest even, keeping NaN a NaN
    if ((b32 & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    uint32_t lsb = (b32 >> 16) & 1u;
    return (b32 + 0x7fffu + lsb) >> 16;
  }
  if (t == ElemType::F16) {
    // IEEE half from float, round to nearest even
    uint32_t sign = (b32 >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((b32 >> 23) & 0xff) - 127 + 15;
    uint32_t mant = b32 & 0x7fffffu;
    if (((b32 >> 23) & 0xff) == 0xff) return sign | 0x7c00u | (mant ? 0x200u : 0u);
    if (exp >= 31) return sign | 0x7c00u;
    if (exp <= 0) {
      if (exp < -10) return sign;
      mant |= 0x800000u;
      uint32_t shift = static_cast<uint32_t>(14 - exp);
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1))) ++half;
      return sign | half;
    }
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
    return half;
  }
  throw std::runtime_error(std::string("shlo: no float constant for ") + mlir_name(t));
}

Value Builder::constant(double v, ElemType t, const std::vector<int64_t>& dims) {
  if (is_packed_complex(t)) return convert(constant(v, ElemType::C64, dims), t);
  if (is_float(t) && !is_float8(t))
    return constant_bits(float_bits(v, t), t, dims);
  if (is_float(t)) {  // fp8: build in f32 and convert
    Value f = constant(v, ElemType::F32, dims);
    return convert(f, t);
  }
  if (t == ElemType::Pred) return constant_int(v != 0, t, dims);
  if (is_complex(t)) {  // (real, 0): built from a real constant and a zero imaginary part
    ElemType part = part_type(t);
    Value re = constant(v, part, dims), im = constant(0.0, part, dims);
    return op("complex", {re, im}, TensorType{t, dims});
  }
  return constant_int(static_cast<int64_t>(v), t, dims);
}

Value Builder::constant_int(int64_t v, ElemType t, const std::vector<int64_t>& dims) {
  TensorType scalar{t, {}};
  std::string lit;
  if (t == ElemType::Pred) lit = v ? "true" : "false";
  else if (is_float(t) || is_complex(t) || is_packed_complex(t)) return constant(static_cast<double>(v), t, dims);
  else if (is_unsigned_int(t)) lit = std::to_string(static_cast<uint64_t>(v));
  else lit = std::to_string(v);
  Value c = op("constant", {}, scalar, "value = dense<" + lit + "> : " + scalar.str());
  if (dims.empty()) return c;
  return broadcast_in_dim(c, dims, {});
}

Value Builder::constant_bits(uint64_t bits, ElemType t, const std::vector<int64_t>& dims) {
  TensorType scalar{t, {}};
  char buf[32];
  int width = byte_size(t) * 2;
  std::snprintf(buf, sizeof buf, "0x%0*llX", width, static_cast<unsigned long long>(bits));
  Value c = op("constant", {}, scalar, std::string("value = dense<") + buf + "> : " + scalar.str());
  if (dims.empty()) return c;
  return broadcast_in_dim(c, dims, {});
}

Value Builder::iota(const TensorType& type, int64_t dim) {
  return op("iota", {}, type, "iota_dimension = " + std::to_string(dim) + " : i64");
}

Value Builder::reshape(const Value& x, const std::vector<int64_t>& dims) {
  if (x.type.dims == dims) return x;
  return op("reshape", {x}, TensorType{x.type.elem, dims});
}

Value Builder::broadcast_in_dim(const Value& x, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& mapping) {
  if (x.type.dims == dims) {
    bool identity = mapping.size() == dims.size();
    for (size_t i = 0; identity && i < mapping.size(); ++i) identity = mapping[i] == (int64_t)i;
    if (identity) return x;
  }
  return op("broadcast_in_dim", {x}, TensorType{x.type.elem, dims},
            "broadcast_dimensions = " + int_array(mapping));
}

Value Builder::broadcast_to(const Value& x, const std::vector<int64_t>& dims) {
  if (x.type.dims == dims) return x;
  int offset = static_cast<int>(dims.size()) - x.type.rank();
  if (offset < 0) throw std::runtime_error("shlo: cannot broadcast " + x.type.str() + " to " + fmt_dims(dims));
  // size-1 dims that expand must be reshaped away first: broadcast_in_dim allows 1 -> n directly.
  std::vector<int64_t> mapping;
  for (int i = 0; i < x.type.rank(); ++i) {
    int64_t d = x.type.dims[i];
    if (d != 1 && d != dims[i + offset])
      throw std::runtime_error("shlo: cannot broadcast " + x.type.str() + " to " + fmt_dims(dims));
    mapping.push_back(i + offset);
  }
  return broadcast_in_dim(x, dims, mapping);
}

Value Builder::transpose(const Value& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == (int64_t)i;
  if (identity) return x;
  if (moves_as_bits(x.type.elem)) return from_bits(transpose(to_bits(x), perm), x.type.elem);
  std::vector<int64_t> dims;
  for (auto p : perm) dims.push_back(x.type.dims[p]);
  return op("transpose", {x}, TensorType{x.type.elem, dims}, "permutation = " + int_array(perm));
}

Value Builder::slice(const Value& x, const std::vector<int64_t>& start,
                     const std::vector<int64_t>& limit, const std::vector<int64_t>& stride) {
  std::vector<int64_t> dims;
  bool identity = true;
  for (size_t i = 0; i < start.size(); ++i) {
    dims.push_back((limit[i] - start[i] + stride[i] - 1) / stride[i]);
    identity = identity && start[i] == 0 && limit[i] == x.type.dims[i] && stride[i] == 1;
  }
  if (identity) return x;
  if (moves_as_bits(x.type.elem)) return from_bits(slice(to_bits(x), start, limit, stride), x.type.elem);
  return op("slice", {x}, TensorType{x.type.elem, dims},
            "start_indices = " + int_array(start) + ", limit_indices = " + int_array(limit) +
                ", strides = " + int_array(stride));
}

Value Builder::concatenate(const std::vector<Value>& xs, int64_t dim) {
  if (xs.size() == 1) return xs[0];
  if (moves_as_bits(xs[0].type.elem)) {
    std::vector<Value> bits;
    for (const Value& x : xs) bits.push_back(to_bits(x));
    return from_bits(concatenate(bits, dim), xs[0].type.elem);
  }
  TensorType r = xs[0].type;
  r.dims[dim] = 0;
  for (auto& x : xs) r.dims[dim] += x.type.dims[dim];
  return op("concatenate", xs, r, "dimension = " + std::to_string(dim) + " : i64");
}

Value Builder::pad(const Value& x, const Value& pad_value, const std::vector<int64_t>& lo,
                   const std::vector<int64_t>& hi, const std::vector<int64_t>& interior_in) {
  if (moves_as_bits(x.type.elem)) return from_bits(pad(to_bits(x), to_bits(pad_value), lo, hi, interior_in), x.type.elem);
  std::vector<int64_t> interior = interior_in.empty() ? std::vector<int64_t>(lo.size(), 0) : interior_in;
  TensorType r = x.type;
  for (size_t i = 0; i < lo.size(); ++i)
    r.dims[i] += lo[i] + hi[i] + (r.dims[i] > 0 ? (r.dims[i] - 1) * interior[i] : 0);
  return op("pad", {x, pad_value}, r,
            "edge_padding_low = " + int_array(lo) + ", edge_padding_high = " + int_array(hi) +
                ", interior_padding = " + int_array(interior));
}

Value Builder::dynamic_update_slice(const Value& base, const Value& update,
                                    const std::vector<int64_t>& start) {
  std::vector<Value> at;
  for (auto s : start) at.push_back(constant_int(s, ElemType::S64));
  return dynamic_update_slice(base, update, at);
}

Value Builder::dynamic_update_slice(const Value& base, const Value& update, const std::vector<Value>& start) {
  if (moves_as_bits(base.type.elem))
    return from_bits(dynamic_update_slice(to_bits(base), to_bits(update), start), base.type.elem);
  std::vector<Value> operands{base, update};
  operands.insert(operands.end(), start.begin(), start.end());
  return op("dynamic_update_slice", operands, base.type);
}

Value Builder::dynamic_slice(const Value& x, const std::vector<Value>& start, const std::vector<int64_t>& sizes) {
  if (moves_as_bits(x.type.elem)) return from_bits(dynamic_slice(to_bits(x), start, sizes), x.type.elem);
  std::vector<Value> operands{x};
  operands.insert(operands.end(), start.begin(), start.end());
  return op("dynamic_slice", operands, TensorType{x.type.elem, sizes}, "slice_sizes = " + int_array(sizes));
}

std::string Builder::region_binary(const char* opname, ElemType t) {
  TensorType s{t, {}};
  std::string a = fresh(), b = fresh(), r = fresh();
  std::string ty = s.str();
  std::string body = "{\n    ^bb0(" + a + ": " + ty + ", " + b + ": " + ty + "):\n";
  if (opname) {
    body += "      " + r + " = \"stablehlo." + opname + "\"(" + a + ", " + b + ") : (" + ty + ", " + ty +
            ") -> " + ty + "\n";
    body += "      \"stablehlo.return\"(" + r + ") : (" + ty + ") -> ()\n  }";
  } else {  // overwrite: keep the update
    body += "      \"stablehlo.return\"(" + b + ") : (" + ty + ") -> ()\n  }";
  }
  return body;
}

static const char* reducer_op(Reducer r) {
  switch (r) {
    case Reducer::Add: return "add";
    case Reducer::Mul: return "multiply";
    case Reducer::Max: return "maximum";
    case Reducer::Min: return "minimum";
    case Reducer::And: return "and";
    case Reducer::Or: return "or";
    case Reducer::Xor: return "xor";
  }
  return "add";
}

Value Builder::reduce(const Value& x, const Value& init, const std::vector<int64_t>& dims, Reducer r) {
  if (is_complex(x.type.elem) && (r == Reducer::Max || r == Reducer::Min))
    throw ElementTypeError(std::string("a max/min reduction does not take ") + mlir_name(x.type.elem));
  if (dims.empty()) return x;
  TensorType out{x.type.elem, {}};
  for (int i = 0; i < x.type.rank(); ++i) {
    bool reduced = false;
    for (auto d : dims) reduced = reduced || d == i;
    if (!reduced) out.dims.push_back(x.type.dims[i]);
  }
  Value red = op_multi("reduce", {x, init}, {out}, "dimensions = " + int_array(dims),
                       region_binary(reducer_op(r), x.type.elem))[0];
  if ((r != Reducer::Max && r != Reducer::Min) || !is_float(x.type.elem)) return red;
  // NaN wins, as in max/min above: a slice holding one reduces to NaN.
  Value any_nan = op_multi("reduce", {compare(Compare::NE, x, x), constant_int(0, ElemType::Pred)},
                           {TensorType{ElemType::Pred, out.dims}}, "dimensions = " + int_array(dims),
                           region_binary("or", ElemType::Pred))[0];
  return select(any_nan, constant(NAN, x.type.elem, out.dims), red);
}

std::pair<Value, Value> Builder::reduce_arg(const Value& x, int64_t dim, bool is_max, ElemType index_type) {
  if (is_complex(x.type.elem))
    throw ElementTypeError(std::string(is_max ? "argmax" : "argmin") + " does not take " + mlir_name(x.type.elem));
  TensorType idx_type{index_type, x.type.dims};
  Value idx = iota(idx_type, dim);
  ElemType t = x.type.elem;
  Value init = is_float(t) ? constant(is_max ? -INFINITY : INFINITY, t)
                           : (t == ElemType::Pred ? constant_int(is_max ? 0 : 1, t)
                                                  : constant_int(0, t));
  if (!is_float(t) && t != ElemType::Pred) {
    // extreme integer values as initial value
    int bits = byte_size(t) * 8;
    if (is_signed_int(t)) {
      int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
      int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
      init = constant_int(is_max ? lo : hi, t);
    } else {
      uint64_t hi = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
      init = is_max ? constant_int(0, t) : constant_bits(hi, t);
    }
  }
  Value init_i = constant_int(0, index_type);
  TensorType s{t, {}}, si{index_type, {}};
  std::string a = fresh(), ai = fresh(), b = fresh(), bi = fresh();
  // Body: prefer a when it is strictly better, NaN, or equal with a smaller index.
  std::string R;
  auto line = [&](const std::string& text) { R += "      " + text + "\n"; };
  std::string ty = s.str(), tyi = si.str(), typ = TensorType{ElemType::Pred, {}}.str();
  std::string cmp = is_float(t) ? "FLOAT" : (is_signed_int(t) ? "SIGNED" : "UNSIGNED");
  std::string better = fresh(), eq = fresh(), lt_idx = fresh(), tie = fresh(), take = fresh(),
              isnan = fresh(), v = fresh(), vi = fresh();
  line(better + " = \"stablehlo.compare\"(" + a + ", " + b +
       ") {comparison_direction = #stablehlo<comparison_direction " + (is_max ? "GT" : "LT") +
       ">, compare_type = #stablehlo<comparison_type " + cmp + ">} : (" + ty + ", " + ty + ") -> " + typ);
  line(eq + " = \"stablehlo.compare\"(" + a + ", " + b +
       ") {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = "
       "#stablehlo<comparison_type " + cmp + ">} : (" + ty + ", " + ty + ") -> " + typ);
  line(lt_idx + " = \"stablehlo.compare\"(" + ai + ", " + bi +
       ") {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = "
       "#stablehlo<comparison_type SIGNED>} : (" + tyi + ", " + tyi + ") -> " + typ);
  line(tie + " = \"stablehlo.and\"(" + eq + ", " + lt_idx + ") : (" + typ + ", " + typ + ") -> " + typ);
  if (is_float(t)) {
    line(isnan + " = \"stablehlo.compare\"(" + a + ", " + a +
         ") {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = "
         "#stablehlo<comparison_type FLOAT>} : (" + ty + ", " + ty + ") -> " + typ);
    std::string t1 = fresh(), bnan = fresh(), notb = fresh(), t2 = fresh();
    // a wins if a is NaN (and b is not NaN or a has the smaller index)
    line(bnan + " = \"stablehlo.compare\"(" + b + ", " + b +
         ") {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = "
         "#stablehlo<comparison_type FLOAT>} : (" + ty + ", " + ty + ") -> " + typ);
    line(notb + " = \"stablehlo.not\"(" + bnan + ") : (" + typ + ") -> " + typ);
    line(t1 + " = \"stablehlo.or\"(" + better + ", " + tie + ") : (" + typ + ", " + typ + ") -> " + typ);
    // when b is NaN, a only wins if a is NaN with smaller index
    std::string bothnan = fresh(), nanwin = fresh(), anan_bnot = fresh(), t3 = fresh();
    line(t2 + " = \"stablehlo.and\"(" + t1 + ", " + notb + ") : (" + typ + ", " + typ + ") -> " + typ);
    line(anan_bnot + " = \"stablehlo.and\"(" + isnan + ", " + notb + ") : (" + typ + ", " + typ + ") -> " + typ);
    line(bothnan + " = \"stablehlo.and\"(" + isnan + ", " + bnan + ") : (" + typ + ", " + typ + ") -> " + typ);
    line(nanwin + " = \"stablehlo.and\"(" + bothnan + ", " + lt_idx + ") : (" + typ + ", " + typ + ") -> " + typ);
    line(t3 + " = \"stablehlo.or\"(" + t2 + ", " + anan_bnot + ") : (" + typ + ", " + typ + ") -> " + typ);
    line(take + " = \"stablehlo.or\"(" + t3 + ", " + nanwin + ") : (" + typ + ", " + typ + ") -> " + typ);
  } else {
    line(take + " = \"stablehlo.or\"(" + better + ", " + tie + ") : (" + typ + ", " + typ + ") -> " + typ);
  }
  line(v + " = \"stablehlo.select\"(" + take + ", " + a + ", " + b + ") : (" + typ + ", " + ty + ", " + ty +
       ") -> " + ty);
  line(vi + " = \"stablehlo.select\"(" + take + ", " + ai + ", " + bi + ") : (" + typ + ", " + tyi + ", " +
       tyi + ") -> " + tyi);
  line("\"stablehlo.return\"(" + v + ", " + vi + ") : (" + ty + ", " + tyi + ") -> ()");
  std::string region = "{\n    ^bb0(" + a + ": " + ty + ", " + ai + ": " + tyi + ", " + b + ": " + ty +
                       ", " + bi + ": " + tyi + "):\n" + R + "  }";
  TensorType out{t, {}}, outi{index_type, {}};
  for (int i = 0; i < x.type.rank(); ++i) {
    if (i == dim) continue;
    out.dims.push_back(x.type.dims[i]);
    outi.dims.push_back(x.type.dims[i]);
  }
  auto res = op_multi("reduce", {x, idx, init, init_i}, {out, outi},
                      "dimensions = " + int_array({dim}), region);
  return {res[0], res[1]};
}

Value Builder::dot_general(const Value& a, const Value& b, const std::vector<int64_t>& batch_a,
                           const std::vector<int64_t>& batch_b, const std::vector<int64_t>& contract_a,
                           const std::vector<int64_t>& contract_b, ElemType result, Precision p) {
  TensorType r{result, {}};
  for (auto d : batch_a) r.dims.push_back(a.type.dims[d]);
  auto free_dims = [](const Value& v, const std::vector<int64_t>& batch, const std::vector<int64_t>& con,
                      std::vector<int64_t>& out) {
    for (int i = 0; i < v.type.rank(); ++i) {
      bool used = false;
      for (auto d : batch) used = used || d == i;
      for (auto d : con) used = used || d == i;
      if (!used) out.push_back(v.type.dims[i]);
    }
  };
  free_dims(a, batch_a, contract_a, r.dims);
  free_dims(b, batch_b, contract_b, r.dims);
  std::string dn = "dot_dimension_numbers = #stablehlo.dot<";
  bool first = true;
  auto field = [&](const char* name, const std::vector<int64_t>& v) {
    if (v.empty()) return;
    dn += first ? "" : ", ";
    first = false;
    dn += std::string(name) + " = " + fmt_dims(v);
  };
  field("lhs_batching_dimensions", batch_a);
  field("rhs_batching_dimensions", batch_b);
  field("lhs_contracting_dimensions", contract_a);
  field("rhs_contracting_dimensions", contract_b);
  dn += ">";
  const char* pn = p == Precision::Highest ? "HIGHEST" : (p == Precision::High ? "HIGH" : "DEFAULT");
  dn += std::string(", precision_config = [#stablehlo<precision ") + pn + ">, #stablehlo<precision " + pn + ">]";
  return op("dot_general", {a, b}, r, dn);
}

Value Builder::gather_flat(const Value& flat, const Value& indices) {
  if (moves_as_bits(flat.type.elem)) return from_bits(gather_flat(to_bits(flat), indices), flat.type.elem);
  TensorType r{flat.type.elem, indices.type.dims};
  std::string dn = "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], "
                   "index_vector_dim = " + std::to_string(indices.type.rank()) +
                   ">, slice_sizes = array<i64: 1>, indices_are_sorted = false";
  return op("gather", {flat, indices}, r, dn);
}

Value Builder::scatter_flat(const Value& flat, const Value& indices, const Value& updates) {
  if (moves_as_bits(flat.type.elem))
    return from_bits(scatter_flat(to_bits(flat), indices, to_bits(updates)), flat.type.elem);
  std::string dn = "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
                   "scatter_dims_to_operand_dims = [0], index_vector_dim = " +
                   std::to_string(indices.type.rank()) + ">, indices_are_sorted = false, unique_indices = false";
  return op_multi("scatter", {flat, indices, updates}, {flat.type}, dn,
                  region_binary(nullptr, flat.type.elem))[0];
}

Value Builder::gather(const Value& operand, const Value& indices, const TensorType& result,
                      const std::string& dimension_numbers, const std::vector<int64_t>& slice_sizes) {
  if (moves_as_bits(operand.type.elem)) {
    Value bits = to_bits(operand);
    return from_bits(gather(bits, indices, TensorType{bits.type.elem, result.dims}, dimension_numbers, slice_sizes),
                     operand.type.elem);
  }
  return op("gather", {operand, indices}, result,
            "dimension_numbers = #stablehlo.gather<" + dimension_numbers +
                ">, slice_sizes = " + int_array(slice_sizes) + ", indices_are_sorted = false");
}

Value Builder::scatter(const Value& operand, const Value& indices, const Value& updates,
                       const std::string& dimension_numbers, Reducer* combine) {
  if (!combine && moves_as_bits(operand.type.elem))
    return from_bits(scatter(to_bits(operand), indices, to_bits(updates), dimension_numbers, nullptr),
                     operand.type.elem);
  return op_multi("scatter", {operand, indices, updates}, {operand.type},
                  "scatter_dimension_numbers = #stablehlo.scatter<" + dimension_numbers +
                      ">, indices_are_sorted = false, unique_indices = false",
                  region_binary(combine ? reducer_op(*combine) : nullptr, operand.type.elem))[0];
}

std::pair<Value, Value> Builder::rng_bits(const Value& state, const TensorType& bits_type) {
  auto r = op_multi("rng_bit_generator", {state}, {state.type, bits_type},
                    "rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>");
  return {r[0], r[1]};
}

std::string Builder::module(const std::vector<Value>& results,
                            const std::vector<int>& donated_arg_for_result) const {
  std::ostringstream os;
  os << "module @ttpu {\n  func.func public @main(";
  for (size_t i = 0; i < args_.size(); ++i) {
    os << (i ? ", " : "") << "%arg" << i << ": " << args_[i].str();
    for (size_t r = 0; r < donated_arg_for_result.size(); ++r)
      if (donated_arg_for_result[r] == static_cast<int>(i))
        os << " {tf.aliasing_output = " << r << " : i32}";
  }
  os << ") -> (" << types_of(results) << ") {\n" << body_;
  os << "    \"func.return\"(";
  for (size_t i = 0; i < results.size(); ++i) os << (i ? ", " : "") << results[i].name;
  os << ") : (" << types_of(results) << ") -> ()\n  }\n}\n";
  return os.str();
}

}  // namespace ttpu::shlo
