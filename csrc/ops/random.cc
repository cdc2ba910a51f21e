// Random number generation from a counter-based generator. The generator
// state (key, counter) is a runtime input, so seeding and advancing the
// generator never recompiles. Values are reproducible for a given seed on
// a given plugin; they are not PyTorch CPU's stream.
#include <cmath>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

const Value& rng_state(LowerCtx& c, size_t gen_arg) { return c.list(gen_arg).at(0); }

// Uniform floats in [0, 1), shape dims, in f32 or f64.
Value uniform01(LowerCtx& c, const Value& state, const std::vector<int64_t>& dims, bool f64) {
  Builder& b = c.b;
  if (f64) {
    Value bits = b.rng_bits(state, TensorType{ElemType::U64, dims}).second;
    Value mant = b.binary("shift_right_logical", bits, b.constant_int(12, ElemType::U64, dims));
    Value one = b.binary("or", mant, b.constant_bits(0x3FF0000000000000ull, ElemType::U64, dims));
    Value f = b.bitcast(one, TensorType{ElemType::F64, dims});
    return b.sub(f, b.constant(1.0, ElemType::F64, dims));
  }
  Value bits = b.rng_bits(state, TensorType{ElemType::U32, dims}).second;
  Value mant = b.binary("shift_right_logical", bits, b.constant_int(9, ElemType::U32, dims));
  Value one = b.binary("or", mant, b.constant_bits(0x3F800000u, ElemType::U32, dims));
  Value f = b.bitcast(one, TensorType{ElemType::F32, dims});
  return b.sub(f, b.constant(1.0, ElemType::F32, dims));
}

bool wants_f64(const TensorType& t) { return t.elem == ElemType::F64; }

std::vector<Value> uniform(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  bool f64 = wants_f64(out);
  Value u = uniform01(c, rng_state(c, 3), out.dims, f64);
  ElemType ct = u.type.elem;
  double from = c.d(1), to = c.d(2);
  Value r = b.add(b.constant(from, ct, out.dims), b.mul(u, b.constant(to - from, ct, out.dims)));
  // Rounding to a narrower type must not produce `to` itself.
  Value res = b.convert(r, out.elem);
  if (out.elem != ct) {
    Value back = b.convert(res, ct);
    Value too_big = b.compare(shlo::Compare::GE, back, b.constant(to, ct, out.dims));
    res = b.select(too_big, b.convert(b.constant(from, ct, out.dims), out.elem), res);
  }
  return {res};
}

std::vector<Value> exponential(LowerCtx& c) {
  // exponential_(self, lambd, generator): -log(1 - u) / lambd, u in [0, 1)
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value u = uniform01(c, rng_state(c, 2), out.dims, wants_f64(out));
  ElemType ct = u.type.elem;
  Value r = b.div(b.unary("negate", b.unary("log_plus_one", b.unary("negate", u))), b.constant(c.d(1), ct, out.dims));
  return {b.convert(r, out.elem)};
}

std::vector<Value> normal(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  bool f64 = wants_f64(out);
  int64_t n = out.numel();
  Value u = uniform01(c, rng_state(c, 3), {2, n}, f64);
  ElemType ct = u.type.elem;
  Value u1 = b.reshape(b.slice(u, {0, 0}, {1, n}, {1, 1}), {n});
  Value u2 = b.reshape(b.slice(u, {1, 0}, {2, n}, {1, 1}), {n});
  u1 = b.sub(b.constant(1.0, ct, {n}), u1);  // (0, 1]
  Value radius = b.unary("sqrt", b.mul(b.constant(-2.0, ct, {n}), b.unary("log", u1)));
  Value z = b.mul(radius, b.unary("cosine", b.mul(b.constant(2 * M_PI, ct, {n}), u2)));
  Value r = b.add(b.constant(c.d(1), ct, {n}), b.mul(z, b.constant(c.d(2), ct, {n})));
  return {b.convert(b.reshape(r, out.dims), out.elem)};
}

// Integers uniformly in [from, from + range) from 64 random bits.
Value random_range(LowerCtx& c, const Value& state, int64_t from, uint64_t range) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value bits = b.rng_bits(state, TensorType{ElemType::U64, out.dims}).second;
  Value r = b.binary("remainder", bits, b.constant_bits(range, ElemType::U64, out.dims));
  Value v = b.add(b.convert(r, ElemType::S64), b.constant_int(from, ElemType::S64, out.dims));
  return b.convert(v, out.elem);
}

uint64_t default_range(ElemType t) {
  switch (t) {
    case ElemType::F32: return (uint64_t{1} << 24) + 1;
    case ElemType::F64: return (uint64_t{1} << 53) + 1;
    case ElemType::F16: return (uint64_t{1} << 11) + 1;
    case ElemType::BF16: return (uint64_t{1} << 8) + 1;
    case ElemType::Pred: return 2;
    default: break;
  }
  int bits = shlo::byte_size(t) * 8;
  if (shlo::is_unsigned_int(t)) return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits);
  return uint64_t{1} << (bits - 1);  // [0, max]
}

std::vector<Value> random_from(LowerCtx& c) {
  // random_.from(self, from, to?, generator)
  int64_t from = c.i(1);
  uint64_t range = c.has(2) ? static_cast<uint64_t>(c.i(2) - from) : default_range(c.out().elem);
  return {random_range(c, rng_state(c, 3), from, range)};
}

std::vector<Value> random_to(LowerCtx& c) {
  return {random_range(c, rng_state(c, 2), 0, static_cast<uint64_t>(c.i(1)))};
}

std::vector<Value> random_full(LowerCtx& c) {
  return {random_range(c, rng_state(c, 1), 0, default_range(c.out().elem))};
}

std::vector<Value> bernoulli_float(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value u = uniform01(c, rng_state(c, 2), out.dims, false);
  Value p = b.constant(c.d(1), ElemType::F32, out.dims);
  return {b.convert(b.compare(shlo::Compare::LT, u, p), out.elem)};
}

std::vector<Value> native_dropout(LowerCtx& c) {
  // native_dropout(input, p, train?) -> (output, mask)
  Builder& b = c.b;
  Value x = c.t(0);
  double p = c.d(1);
  bool train = !c.has(2) || c.flag(2);
  const TensorType& mask_t = c.out(1);
  if (!train || p == 0) {
    return {x, b.constant(1, mask_t.elem, mask_t.dims)};
  }
  Value u = uniform01(c, c.rng.at(0), x.type.dims, false);
  Value keep = b.compare(shlo::Compare::GE, u, b.constant(p, ElemType::F32, x.type.dims));
  ElemType acc = accumulate_type(x.type.elem);
  double scale = p >= 1 ? 0.0 : 1.0 / (1.0 - p);
  Value y = b.mul(b.convert(x, acc), b.constant(scale, acc, x.type.dims));
  y = b.select(keep, y, b.constant(0, acc, x.type.dims));
  return {b.convert(y, c.out(0).elem), b.convert(keep, mask_t.elem)};
}

std::vector<Value> native_dropout_backward(LowerCtx& c) {
  // native_dropout_backward(grad_output, mask, scale)
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value g = b.convert(c.t(0), acc);
  Value m = b.convert(c.t(1), acc);
  return {b.convert(b.mul(b.mul(g, m), b.constant(c.d(2), acc, g.type.dims)), c.out().elem)};
}

}  // namespace

void append_random(std::vector<Lowering>& t) {
  t.push_back({"native_dropout", native_dropout, {"native_dropout"}, kUsesDefaultRng});
  t.push_back({"native_dropout_backward", native_dropout_backward, {"native_dropout_backward"}});
  t.push_back({"uniform", uniform, {"uniform_"}, kNoReadSelf});
  t.push_back({"exponential", exponential, {"exponential_"}, kNoReadSelf});
  t.push_back({"normal", normal, {"normal_"}, kNoReadSelf});
  t.push_back({"random_from", random_from, {"random_.from"}, kNoReadSelf});
  t.push_back({"random_to", random_to, {"random_.to"}, kNoReadSelf});
  t.push_back({"random", random_full, {"random_"}, kNoReadSelf});
  t.push_back({"bernoulli", bernoulli_float, {"bernoulli_.float"}, kNoReadSelf});
}

}  // namespace ttpu::ops
