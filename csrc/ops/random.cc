// Random number generation from a counter-based generator. The generator
// state (key, counter) is a runtime input, so seeding and advancing the
// generator never recompiles. Values are reproducible for a given seed on
// a given plugin; they are not PyTorch CPU's stream.

#include <cmath>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

const Value& rng_state(LowerCtx& c, size_t gen_arg) { return c.list(gen_arg).at(0); }

// Uniform floats in [0, 1) from random bits (u64 bits give f64, u32 f32):
// the top mantissa bits under the exponent of 1.0, minus 1.
Value uniform_from_bits(Builder& b, const Value& bits) {
  const auto& dims = bits.type.dims;
  bool f64 = bits.type.elem == ElemType::U64;
  ElemType u = bits.type.elem, f = f64 ? ElemType::F64 : ElemType::F32;
  Value mant = b.binary("shift_right_logical", bits, b.constant_int(f64 ? 12 : 9, u, dims));
  Value one = b.binary("or", mant, b.constant_bits(f64 ? 0x3FF0000000000000ull : 0x3F800000u, u, dims));
  return b.sub(b.bitcast(one, TensorType{f, dims}), b.constant(1.0, f, dims));
}

// Uniform floats in [0, 1), shape dims, in f32 or f64.
Value uniform01(LowerCtx& c, const Value& state, const std::vector<int64_t>& dims, bool f64) {
  return uniform_from_bits(c.b, c.b.rng_bits(state, TensorType{f64 ? ElemType::U64 : ElemType::U32, dims}).second);
}

// A state whose key is derived from (seed, offset) and whose counter starts
// at 0: an op that draws more values than its input has elements (the
// runtime advances the offset by the input's size) gets a stream of its own.
Value own_stream(Builder& b, const Value& state) {
  Value seed = b.slice(state, {0}, {1}, {1}), offset = b.slice(state, {1}, {2}, {1});
  Value mixed = b.mul(b.add(offset, b.constant_bits(1, ElemType::U64, {1})),
                      b.constant_bits(0x9E3779B97F4A7C15ull, ElemType::U64, {1}));
  Value key = b.binary("xor", seed, mixed);
  return b.concatenate({key, b.constant_bits(0, ElemType::U64, {1})}, 0);
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

// Standard normal values of shape dims (Box-Muller), in f32 or f64.
Value standard_normal(LowerCtx& c, const Value& state, const std::vector<int64_t>& dims, bool f64) {
  Builder& b = c.b;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Value u = uniform01(c, state, {2, n}, f64);
  ElemType ct = u.type.elem;
  Value u1 = b.reshape(b.slice(u, {0, 0}, {1, n}, {1, 1}), {n});
  Value u2 = b.reshape(b.slice(u, {1, 0}, {2, n}, {1, 1}), {n});
  u1 = b.sub(b.constant(1.0, ct, {n}), u1);  // (0, 1]
  Value radius = b.unary("sqrt", b.mul(b.constant(-2.0, ct, {n}), b.unary("log", u1)));
  Value z = b.mul(radius, b.unary("cosine", b.mul(b.constant(2 * M_PI, ct, {n}), u2)));
  return b.reshape(z, dims);
}

// mean + std * z for the (self, mean, std, generator) ops, in the compute type.
Value scaled_normal(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value z = standard_normal(c, rng_state(c, 3), out.dims, wants_f64(out));
  ElemType ct = z.type.elem;
  return b.add(b.constant(c.d(1), ct, out.dims), b.mul(z, b.constant(c.d(2), ct, out.dims)));
}

std::vector<Value> normal(LowerCtx& c) {
  // normal_(self, mean, std, generator)
  return {c.b.convert(scaled_normal(c), c.out().elem)};
}

// normal.Tensor_float / float_Tensor / Tensor_Tensor (mean, std, generator):
// mean + std * z elementwise, std checked >= 0 like CPU.
std::vector<Value> normal_tensors(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  bool f64 = wants_f64(out);
  ElemType ct = f64 ? ElemType::F64 : ElemType::F32;
  TensorType tt{ct, out.dims};
  auto operand = [&](size_t k) {
    if (c.args.at(k).kind == Arg::Tensor) return broadcast_convert(b, c.t(k), tt);
    return b.constant(c.d(k), ct, out.dims);
  };
  Value mean = operand(0), std_dev = operand(1);
  if (c.args.at(1).kind == Arg::Tensor) {
    Value ok = b.reduce(b.compare(shlo::Compare::GE, std_dev, b.constant(0.0, ct, out.dims)),
                        b.constant_int(1, ElemType::Pred), wrap_dims({}, out.rank()), shlo::Reducer::And);
    c.check(ok, b.constant_int(0, ElemType::S64), {false, "normal expects all elements of std >= 0.0"});
  }
  Value z = standard_normal(c, rng_state(c, 2), out.dims, f64);
  return {b.convert(b.add(mean, b.mul(z, std_dev)), out.elem)};
}

std::vector<Value> log_normal(LowerCtx& c) {
  // log_normal_(self, mean, std, generator): exp(mean + std * z)
  return {c.b.convert(c.b.unary("exponential", scaled_normal(c)), c.out().elem)};
}

std::vector<Value> cauchy(LowerCtx& c) {
  // cauchy_(self, median, sigma, generator): median + sigma * tan(pi * (u - 1/2))
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value u = uniform01(c, rng_state(c, 3), out.dims, wants_f64(out));
  ElemType ct = u.type.elem;
  Value a = b.mul(b.constant(M_PI, ct, out.dims), b.sub(u, b.constant(0.5, ct, out.dims)));
  Value t = b.unary("tan", a);
  Value r = b.add(b.constant(c.d(1), ct, out.dims), b.mul(b.constant(c.d(2), ct, out.dims), t));
  return {b.convert(r, out.elem)};
}

std::vector<Value> geometric(LowerCtx& c) {
  // geometric_(self, p, generator): trials to the first success, >= 1:
  // ceil(log(v) / log1p(-p)) with v = 1 - u in (0, 1].
  Builder& b = c.b;
  const TensorType& out = c.out();
  Value u = uniform01(c, rng_state(c, 2), out.dims, wants_f64(out));
  ElemType ct = u.type.elem;
  Value v = b.sub(b.constant(1.0, ct, out.dims), u);
  Value k = b.unary("ceil", b.div(b.unary("log", v), b.constant(std::log1p(-c.d(1)), ct, out.dims)));
  k = b.max(k, b.constant(1.0, ct, out.dims));
  return {b.convert(k, out.elem)};
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

std::vector<Value> bernoulli_tensor(LowerCtx& c) {
  // bernoulli_.Tensor(self, p, generator): u < p, p broadcast to self.
  Builder& b = c.b;
  const TensorType& out = c.out();
  bool f64 = c.t(1).type.elem == ElemType::F64;
  Value u = uniform01(c, rng_state(c, 2), out.dims, f64);
  Value p = broadcast_convert(b, c.t(1), TensorType{u.type.elem, out.dims});
  // CPU checks every probability (NaN fails too)
  Value in_range = b.binary("and", b.compare(shlo::Compare::GE, p, b.constant(0.0, p.type.elem, out.dims)),
                            b.compare(shlo::Compare::LE, p, b.constant(1.0, p.type.elem, out.dims)));
  std::vector<int64_t> all_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(out.dims.size()); ++d) all_dims.push_back(d);
  Value ok = all_dims.empty() ? in_range
                              : b.reduce(in_range, b.constant_int(1, ElemType::Pred), all_dims, shlo::Reducer::And);
  c.check(ok, b.constant_int(0, ElemType::S64), {false, "Expected p_in >= 0 && p_in <= 1 to be true, but got false."});
  return {b.convert(b.compare(shlo::Compare::LT, u, p), out.elem)};
}

std::vector<Value> randperm(LowerCtx& c) {
  // randperm.generator_out(n, generator, out): the order of n random keys.
  Builder& b = c.b;
  const TensorType& out = c.out();
  int64_t n = out.dims.at(0);
  if (n == 0) return {b.constant_int(0, out.elem, {0})};
  Value keys = b.rng_bits(own_stream(b, rng_state(c, 1)), TensorType{ElemType::U64, {n}}).second;
  return {b.convert(sort_with_indices(b, keys, 0, false).second, out.elem)};
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

// rrelu_with_noise_functional(self, noise, lower, upper, training, generator)
// -> (out, noise_out), CPU's rule. Training: where x <= 0 a slope r drawn
// uniformly from [lower, upper] multiplies x and is the noise there; the
// noise is 1 elsewhere. Evaluation: leaky_relu with slope (lower + upper) / 2
// (computed in double, as CPU does), noise unchanged. The mutating
// overloads (rrelu_with_noise, _, .out) are composites over this one.
std::vector<Value> rrelu_with_noise(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType& out = c.out(0);
  ElemType ct = accumulate_type(out.elem);
  Value x = b.convert(c.t(0), ct);
  Value zero = b.constant(0, ct, out.dims);
  if (!c.flag("training")) {
    Value lo = c.scalar("lower", ElemType::F64), hi = c.scalar("upper", ElemType::F64);
    Value slope = b.convert(b.div(b.add(lo, hi), b.constant(2.0, ElemType::F64)), ct);
    Value y = b.select(b.compare(Compare::GT, x, zero), x, b.mul(x, b.broadcast_in_dim(slope, out.dims, {})));
    return {b.convert(y, out.elem), c.t(1)};
  }
  Value u = uniform01(c, rng_state(c, 5), out.dims, wants_f64(out));
  ElemType ut = u.type.elem;
  Value lo = b.broadcast_in_dim(c.scalar("lower", ut), out.dims, {});
  Value hi = b.broadcast_in_dim(c.scalar("upper", ut), out.dims, {});
  Value r = b.convert(b.add(lo, b.mul(u, b.sub(hi, lo))), ct);
  Value neg = b.compare(Compare::LE, x, zero);
  Value noise = b.select(neg, r, b.constant(1, ct, out.dims));
  Value y = b.select(neg, b.mul(x, noise), x);
  return {b.convert(y, out.elem), b.convert(noise, c.out(1).elem)};
}

// poisson(rates, generator): CPU's samplers, vectorised in one while loop
// that runs until every element has its sample: Knuth's product of
// uniforms for rates below 10, Hormann's transformed rejection (PTRS) with
// the same constants as CPU's sample_poisson above. Each pass draws two
// uniforms per element from a generator state carried through the loop.
// A negative or NaN rate raises CPU's error at the next sync; an infinite
// one gives CPU's value (int64's minimum, from its cast).
std::vector<Value> poisson(LowerCtx& c) {
  Builder& b = c.b;
  Value rate = c.t(0);
  if (!shlo::is_float(rate.type.elem))
    throw shlo::ElementTypeError(std::string("poisson does not take ") + shlo::mlir_name(rate.type.elem));
  const TensorType& out = c.out();
  const auto& dims = out.dims;
  bool f64 = wants_f64(out);
  ElemType ct = f64 ? ElemType::F64 : ElemType::F32;
  auto k = [&](double v) { return b.constant(v, ct, dims); };
  Value lam = b.convert(rate, ct);
  Value ok = b.compare(Compare::GE, lam, k(0));
  std::vector<int64_t> all_dims(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) all_dims[i] = static_cast<int64_t>(i);
  c.check(b.reduce(ok, b.constant_int(1, ElemType::Pred), all_dims, Reducer::And), b.constant_int(0, ElemType::S64),
          {false, "invalid Poisson rate, expected rate to be non-negative"});
  Value finite = b.op("is_finite", {lam}, TensorType{ElemType::Pred, dims});
  Value done0 = b.binary("or", b.unary("not", ok), b.unary("not", finite));

  std::vector<Value> init{own_stream(b, rng_state(c, 1)), lam, k(0), k(1), done0};
  std::vector<TensorType> types;
  for (auto& v : init) types.push_back(v.type);
  auto block = [&](std::vector<Value>& args) {
    std::string head = "{\n    ^bb0(";
    for (size_t i = 0; i < init.size(); ++i) {
      args.push_back({b.fresh(), types[i]});
      head += (i ? ", " : "") + args[i].name + ": " + types[i].str();
    }
    return head + "):\n";
  };
  auto ret = [&](const std::vector<Value>& vs) {
    std::string s = "      \"stablehlo.return\"(", t;
    for (size_t i = 0; i < vs.size(); ++i) {
      s += (i ? ", " : "") + vs[i].name;
      t += (i ? ", " : "") + vs[i].type.str();
    }
    return s + ") : (" + t + ") -> ()\n  }";
  };
  std::vector<Value> ca;
  std::string cond = block(ca);
  std::string saved = b.swap_body("");
  Value pending = b.reduce(b.unary("not", ca[4]), b.constant_int(0, ElemType::Pred), all_dims, Reducer::Or);
  cond += b.swap_body(saved) + ret({pending});

  std::vector<Value> ba;
  std::string body = block(ba);
  saved = b.swap_body("");
  {
    const Value &st = ba[0], &l = ba[1], &kk = ba[2], &prod = ba[3], &done = ba[4];
    std::vector<int64_t> two = dims;
    two.insert(two.begin(), 2);
    auto [next, bits] = b.rng_bits(st, TensorType{f64 ? ElemType::U64 : ElemType::U32, two});
    Value u2 = uniform_from_bits(b, bits);
    std::vector<int64_t> lo(two.size(), 0), hi = two, stride(two.size(), 1);
    hi[0] = 1;
    Value u = b.reshape(b.slice(u2, lo, hi, stride), dims);
    lo[0] = 1, hi[0] = 2;
    Value v = b.reshape(b.slice(u2, lo, hi, stride), dims);
    // Knuth: multiply uniforms until the product falls to exp(-rate)
    Value p2 = b.mul(prod, u);
    Value knuth_done = b.compare(Compare::LE, p2, b.unary("exponential", b.unary("negate", l)));
    // PTRS
    Value slam = b.unary("sqrt", l), loglam = b.unary("log", l);
    Value bb = b.add(k(0.931), b.mul(k(2.53), slam));
    Value a = b.add(k(-0.059), b.mul(k(0.02483), bb));
    Value invalpha = b.add(k(1.1239), b.div(k(1.1328), b.sub(bb, k(3.4))));
    Value vr = b.sub(k(0.9277), b.div(k(3.6224), b.sub(bb, k(2))));
    Value uc = b.sub(u, k(0.5));
    Value us = b.sub(k(0.5), b.unary("abs", uc));
    Value cand = b.unary("floor", b.add(b.add(b.mul(b.add(b.div(b.mul(k(2), a), us), bb), uc), l), k(0.43)));
    Value quick = b.binary("and", b.compare(Compare::GE, us, k(0.07)), b.compare(Compare::LE, v, vr));
    Value reject = b.binary("or", b.compare(Compare::LT, cand, k(0)),
                            b.binary("and", b.compare(Compare::LT, us, k(0.013)), b.compare(Compare::GT, v, us)));
    Value lhs = b.sub(b.add(b.unary("log", v), b.unary("log", invalpha)), b.unary("log", b.add(b.div(a, b.mul(us, us)), bb)));
    Value rhs = b.sub(b.add(b.unary("negate", l), b.mul(cand, loglam)), b.op("chlo.lgamma", {b.add(cand, k(1))}, cand.type));
    Value ptrs_done = b.binary("or", quick, b.binary("and", b.unary("not", reject), b.compare(Compare::LE, lhs, rhs)));
    Value small = b.compare(Compare::LT, l, k(10));
    Value now = b.select(small, knuth_done, ptrs_done);
    Value result = b.select(small, kk, cand);
    Value step = b.select(small, b.add(kk, k(1)), kk);
    Value nk = b.select(done, kk, b.select(now, result, step));
    Value np = b.select(done, prod, p2);
    Value nd = b.binary("or", done, now);
    body += b.swap_body(saved) + ret({next, l, nk, np, nd});
  }
  auto res = b.op_multi("while", init, types, "", cond + ", " + body);
  Value sample = b.select(b.binary("and", ok, b.unary("not", finite)), k(-9223372036854775808.0), res[2]);
  return {b.convert(sample, out.elem)};
}

// multinomial(self, num_samples, replacement, generator): CPU's algorithms.
// Without replacement (and for one sample): the k largest p / E with
// E ~ Exp(1) (the exponential race). With replacement: inverse CDF, the
// number of running sums <= u * total for each draw u.
std::vector<Value> multinomial(LowerCtx& c) {
  Builder& b = c.b;
  Value p_in = c.t(0);
  const TensorType& out = c.out();
  bool one_row = p_in.type.rank() == 1;
  int64_t n = p_in.type.dims.back(), rows = one_row ? 1 : p_in.type.dims[0];
  int64_t k = c.i(1);
  bool replacement = c.flag(2) && k > 1;
  ElemType ct = p_in.type.elem == ElemType::F64 ? ElemType::F64 : ElemType::F32;
  Value p = b.reshape(b.convert(p_in, ct), {rows, n});
  std::vector<int64_t> pd{rows, n};
  Value zero = b.constant(0.0, ct, pd);
  auto all = [&](const Value& pred) {  // 0-d pred: every element satisfies pred
    return b.reduce(pred, b.constant_int(1, ElemType::Pred), {0, 1}, shlo::Reducer::And);
  };
  Value finite = b.compare(shlo::Compare::LT, b.unary("abs", p), b.constant(INFINITY, ct, pd));
  Value nonneg = b.compare(shlo::Compare::GE, p, zero);
  Value row_sum = b.reduce(p, b.constant(0.0, ct), {1}, shlo::Reducer::Add);
  Value some = all(b.reshape(b.compare(shlo::Compare::GT, row_sum, b.constant(0.0, ct, {rows})), {rows, 1}));
  Value zero_s = b.constant_int(0, ElemType::S64);
  if (!replacement) {
    c.check(all(b.binary("and", finite, nonneg)), zero_s,
            {false, "probability tensor contains either `inf`, `nan` or element < 0"});
    c.check(some, zero_s, {false, "invalid multinomial distribution (sum of probabilities <= 0)"});
    Value u = uniform01(c, rng_state(c, 3), pd, ct == ElemType::F64);
    Value e = b.unary("negate", b.unary("log_plus_one", b.unary("negate", u)));
    Value key = b.div(p, e);  // p = 0 gives 0 (E = 0 only when u = 0: then +inf or nan for p = 0)
    key = b.select(b.compare(shlo::Compare::GT, p, zero), key, zero);
    Value idx = sort_with_indices(b, key, 1, true).second;
    idx = b.slice(idx, {0, 0}, {rows, k}, {1, 1});
    return {b.convert(b.reshape(idx, out.dims), out.elem)};
  }
  c.check(all(nonneg), zero_s, {false, "invalid multinomial distribution (encountering probability entry < 0)"});
  c.check(all(finite), zero_s,
          {false, "invalid multinomial distribution (encountering probability entry = infinity or NaN)"});
  c.check(some, zero_s, {false, "invalid multinomial distribution (sum of probabilities <= 0)"});
  Value cdf = prefix_sum(b, p, 1);
  Value total = b.slice(cdf, {0, n - 1}, {rows, n}, {1, 1});  // [rows, 1]
  Value u = uniform01(c, own_stream(b, rng_state(c, 3)), {rows, k}, ct == ElemType::F64);
  Value target = b.mul(u, b.broadcast_in_dim(b.reshape(total, {rows}), {rows, k}, {0}));
  std::vector<int64_t> grid{rows, k, n};
  Value le = b.compare(shlo::Compare::LE, b.broadcast_in_dim(cdf, grid, {0, 2}), b.broadcast_in_dim(target, grid, {0, 1}));
  Value idx = b.reduce(b.convert(le, ElemType::S64), b.constant_int(0, ElemType::S64), {2}, shlo::Reducer::Add);
  // Rounding can put u * total at the total: draw the last category with mass.
  Value pos = b.iota(TensorType{ElemType::S64, pd}, 1);
  Value last = b.reduce(b.select(b.compare(shlo::Compare::GT, p, zero), pos, b.constant_int(0, ElemType::S64, pd)),
                        b.constant_int(0, ElemType::S64), {1}, shlo::Reducer::Max);
  idx = b.min(idx, b.broadcast_in_dim(last, {rows, k}, {0}));
  return {b.convert(b.reshape(idx, out.dims), out.elem)};
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
  t.push_back({"multinomial", multinomial, {"multinomial+"}});
  t.push_back({"rrelu_with_noise", rrelu_with_noise, {"rrelu_with_noise_functional"}});
  t.push_back({"poisson", poisson, {"poisson+"}});
  t.push_back({"normal_tensors", normal_tensors,
               {"normal.Tensor_float+", "normal.float_Tensor+", "normal.Tensor_Tensor+"}});
  t.push_back({"log_normal", log_normal, {"log_normal_"}, kNoReadSelf});
  t.push_back({"cauchy", cauchy, {"cauchy_"}, kNoReadSelf});
  t.push_back({"geometric", geometric, {"geometric_"}, kNoReadSelf});
  t.push_back({"bernoulli_tensor", bernoulli_tensor, {"bernoulli_.Tensor"}, kNoReadSelf});
  t.push_back({"randperm", randperm, {"randperm.generator_out"}});
  t.push_back({"bernoulli", bernoulli_float, {"bernoulli_.float"}, kNoReadSelf});
}

}  // namespace ttpu::ops
