// Complex arithmetic with the special values CPU's kernels give. PyTorch's CPU
// kernels compute complex exp and pow with the C library (glibc's cexp and
// cpow, which follow C99 Annex G: cexp(+inf + i y) is inf·cis(y), cexp(-inf +
// i inf) is 0, a product whose naive parts are both NaN is recovered from its
// infinite factors) and divide with Smith's algorithm (c10::complex, as NumPy
// does). StableHLO's complex exponential, multiply and divide leave those
// cases to the plugin (XLA:CPU gives 0 for 1 / (inf + i inf) where CPU gives
// NaN, NaN for exp(inf + 0i) where CPU gives inf), so the lowerings that must
// match CPU on them (exp, pow, sigmoid, div, reciprocal of complex operands)
// compose these from real operations, the same on every plugin.

#include <cfloat>
#include <cmath>

#include "ops/elementwise.h"

namespace ttpu::ops::ew {

namespace {

Value make(Builder& b, const Value& re, const Value& im, const TensorType& like) {
  return b.op("complex", {re, im}, like);
}

Value either(Builder& b, const Value& p, const Value& q) { return b.binary("or", p, q); }
Value finite(Builder& b, const Value& x) { return b.unary("not", either(b, isinf(b, x), isnan(b, x))); }
Value both(Builder& b, const Value& p, const Value& q) { return b.binary("and", p, q); }

// sin(y) and cos(y), with sin(±0) = ±0 and cos(±0) = 1 exactly.
struct SinCos {
  Value sin, cos;
};
SinCos sincos(Builder& b, const Value& y) {
  Value y_zero = b.compare(Compare::EQ, y, k(b, 0, y));
  return {b.select(y_zero, y, b.unary("sine", y)), b.select(y_zero, k(b, 1, y), b.unary("cosine", y))};
}

}  // namespace

// (a + ib)(c + id) = (ac - bd) + i(ad + bc), as c10::complex and CPU's
// vectorized kernels multiply: no recovery of NaN parts, and no rewriting of
// x * x as (a - b)(a + b) + 2iab that a compiler may apply to StableHLO's
// complex multiply (which turns inf - inf = NaN into -inf).
Value cmul_naive(Builder& b, const Value& x, const Value& y) {
  Parts p = parts(b, x), q = parts(b, y);
  return make(b, b.sub(b.mul(p.re, q.re), b.mul(p.im, q.im)), b.add(b.mul(p.re, q.im), b.mul(p.im, q.re)), x.type);
}

// (a + ib)(c + id) as libgcc's __mulsc3: the naive parts, and where both are
// NaN, the infinite factors boxed to ±1 (NaN partners to ±0) and scaled by inf.
Value cmul_c99(Builder& b, const Value& x, const Value& y) {
  Parts p = parts(b, x), q = parts(b, y);
  Value a = p.re, bb = p.im, c = q.re, d = q.im;
  Value ac = b.mul(a, c), bd = b.mul(bb, d), ad = b.mul(a, d), bc = b.mul(bb, c);
  Value re = b.sub(ac, bd), im = b.add(ad, bc);
  Value zero = k(b, 0, a), one = k(b, 1, a);
  auto box = [&](const Value& v) { return copysign(b, b.select(isinf(b, v), one, zero), v); };
  auto zero_nan = [&](const Value& v, const Value& when) {
    return b.select(both(b, when, isnan(b, v)), copysign(b, zero, v), v);
  };
  Value x_inf = either(b, isinf(b, a), isinf(b, bb)), y_inf = either(b, isinf(b, c), isinf(b, d));
  Value a1 = b.select(x_inf, box(a), a), b1 = b.select(x_inf, box(bb), bb);
  Value c1 = zero_nan(c, x_inf), d1 = zero_nan(d, x_inf);
  c1 = b.select(y_inf, box(c1), c1), d1 = b.select(y_inf, box(d1), d1);
  a1 = zero_nan(a1, y_inf), b1 = zero_nan(b1, y_inf);
  Value prod_inf = either(b, either(b, isinf(b, ac), isinf(b, bd)), either(b, isinf(b, ad), isinf(b, bc)));
  Value overflow = both(b, b.unary("not", either(b, x_inf, y_inf)), prod_inf);
  a1 = zero_nan(a1, overflow), b1 = zero_nan(b1, overflow), c1 = zero_nan(c1, overflow), d1 = zero_nan(d1, overflow);
  Value inf = k(b, INFINITY, a);
  Value re2 = b.mul(inf, b.sub(b.mul(a1, c1), b.mul(b1, d1)));
  Value im2 = b.mul(inf, b.add(b.mul(a1, d1), b.mul(b1, c1)));
  Value recover = both(b, both(b, isnan(b, re), isnan(b, im)), either(b, either(b, x_inf, y_inf), overflow));
  return make(b, b.select(recover, re2, re), b.select(recover, im2, im), x.type);
}

// cexp(x + iy) as glibc computes it: exp(x)·cis(y) with x beyond the overflow
// threshold taken in steps (a finite result where cos or sin is small), y = 0
// kept exact, and Annex G's values for infinite and NaN parts.
Value cexp_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  const Value &x = p.re, &y = p.im;
  bool f32 = x.type.elem == ElemType::F32;
  double t = f32 ? std::floor((FLT_MAX_EXP - 1) * M_LN2) : std::floor((DBL_MAX_EXP - 1) * M_LN2);
  Value zero = k(b, 0, x), one = k(b, 1, x), inf = k(b, INFINITY, x), nan = k(b, NAN, x);
  Value y_zero = b.compare(Compare::EQ, y, zero);
  SinCos sc = sincos(b, y);
  const Value &cos_y = sc.cos, &sin_y = sc.sin;
  // finite x: scale cis(y) by exp(t) while x > t (at most twice before it overflows anyway)
  Value xs = x, cs = cos_y, ss = sin_y;
  for (int step = 0; step < 2; ++step) {
    Value big = b.compare(Compare::GT, xs, k(b, t, x));
    Value et = b.select(big, k(b, std::exp(t), x), one);
    cs = b.mul(cs, et), ss = b.mul(ss, et), xs = b.select(big, b.sub(xs, k(b, t, x)), xs);
  }
  // still beyond it: glibc's overflow result, the largest finite value times
  // the scaled cis (so a zero part stays a signed zero rather than inf * 0)
  Value ev = b.select(b.compare(Compare::GT, xs, k(b, t, x)), k(b, f32 ? FLT_MAX : DBL_MAX, x),
                      b.unary("exponential", xs));
  Value re = b.mul(ev, cs), im = b.mul(ev, ss);
  Value y_fin = finite(b, y);
  // finite x, y infinite or NaN: NaN + i NaN
  re = b.select(y_fin, re, nan), im = b.select(y_fin, im, nan);
  // x = ±inf
  Value x_neg = signbit(b, x);
  Value mag = b.select(x_neg, zero, inf);
  Value re_inf = b.select(y_zero, mag, copysign(b, mag, cos_y));
  Value im_inf = b.select(y_zero, y, copysign(b, mag, sin_y));
  re_inf = b.select(y_fin, re_inf, b.select(x_neg, zero, inf));
  im_inf = b.select(y_fin, im_inf, b.select(x_neg, copysign(b, zero, y), nan));
  Value x_isinf = isinf(b, x);
  re = b.select(x_isinf, re_inf, re), im = b.select(x_isinf, im_inf, im);
  // x NaN: NaN + i y for y = 0, else NaN + i NaN
  Value x_nan = isnan(b, x);
  re = b.select(x_nan, nan, re), im = b.select(x_nan, b.select(y_zero, y, nan), im);
  return make(b, re, im, z.type);
}

// |x + iy| without overflow, inf over NaN (as hypot).
Value cabs_c99(Builder& b, const Value& x, const Value& y) {
  Value ax = b.unary("abs", x), ay = b.unary("abs", y);
  Value big = b.max(ax, ay), small = b.min(ax, ay);
  Value one = k(b, 1, x);
  Value r = b.div(small, b.select(b.compare(Compare::EQ, big, k(b, 0, x)), one, big));
  Value h = b.mul(big, b.unary("sqrt", b.add(one, b.mul(r, r))));
  h = b.select(either(b, isnan(b, x), isnan(b, y)), b.add(ax, ay), h);
  return b.select(either(b, isinf(b, x), isinf(b, y)), k(b, INFINITY, x), h);
}

// clog(x + iy) = log|z| + i arg z, with Annex G's values: a NaN part gives
// NaN + i NaN unless the other is infinite (+inf + i NaN); log(±0) = -inf.
Value clog_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  // |z| itself overflows when both parts are near the largest value (log|3e38
  // + 3e38i| is 88.9): there, log(max) + log1p((min / max)^2) / 2
  Value ax = b.unary("abs", p.re), ay = b.unary("abs", p.im);
  Value big = b.max(ax, ay), small = b.min(ax, ay);
  double limit = (p.re.type.elem == ElemType::F32 ? FLT_MAX : DBL_MAX) / 4;
  Value huge = both(b, b.compare(Compare::GT, big, k(b, limit, big)), finite(b, big));
  Value r = b.div(small, b.select(huge, big, k(b, 1, big)));
  Value scaled = b.add(b.unary("log", big), b.mul(k(b, 0.5, big), b.unary("log_plus_one", b.mul(r, r))));
  Value h = cabs_c99(b, p.re, p.im);
  // |z| near 1: log|z| = log1p(|z|^2 - 1) / 2 with |z|^2 - 1 = (max - 1)(max + 1) + min^2,
  // which keeps the digits log(|z|) loses when |z| is rounded (log|0.585 + 0.824i|)
  Value near_one = both(b, b.compare(Compare::GT, h, k(b, 0.7, h)), b.compare(Compare::LT, h, k(b, 1.4, h)));
  Value m1 = b.add(b.mul(b.sub(big, k(b, 1, big)), b.add(big, k(b, 1, big))), b.mul(small, small));
  Value log_near = b.mul(k(b, 0.5, big), b.unary("log_plus_one", m1));
  Value log_abs = b.select(huge, scaled, b.select(near_one, log_near, b.unary("log", h)));
  return make(b, log_abs, b.binary("atan2", p.im, p.re), z.type);
}

// csqrt(x + iy) as glibc: the principal root, real part >= 0, imaginary part
// with y's sign (-0 included: sqrt(-4 - 0i) = -2i), and Annex G's values for
// infinite and NaN parts.
Value csqrt_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Value zero = k(b, 0, p.re), half = k(b, 0.5, p.re), inf = k(b, INFINITY, p.re), nan = k(b, NAN, p.re);
  // parts near the largest value: the root of z / 4, doubled (|z| + x would
  // overflow: sqrt(3e38 + i) is 1.7e19, not inf)
  double limit = (p.re.type.elem == ElemType::F32 ? FLT_MAX : DBL_MAX) / 4;
  Value huge = b.compare(Compare::GT, b.max(b.unary("abs", p.re), b.unary("abs", p.im)), k(b, limit, p.re));
  Value quarter = b.select(huge, k(b, 0.25, p.re), k(b, 1, p.re));
  Value grow = b.select(huge, k(b, 2, p.re), k(b, 1, p.re));
  const Value x = b.mul(p.re, quarter), y = b.mul(p.im, quarter);
  Value d = cabs_c99(b, x, y);
  Value x_pos = b.compare(Compare::GT, x, zero);
  // x > 0: r = sqrt((d + x) / 2), s = y / 2r;  x <= 0: s = sqrt((d - x) / 2), r = |y| / 2s
  Value big_pos = b.unary("sqrt", b.add(b.mul(half, d), b.mul(half, x)));
  Value big_neg = b.unary("sqrt", b.sub(b.mul(half, d), b.mul(half, x)));
  Value re = b.select(x_pos, big_pos, b.unary("abs", b.mul(half, b.div(y, big_neg))));
  Value im = b.select(x_pos, b.mul(half, b.div(y, big_pos)), copysign(b, big_neg, y));
  re = b.mul(re, grow), im = b.mul(im, grow);
  // y = ±0: a real root, on the axis y's sign picks
  Value y_zero = b.compare(Compare::EQ, y, zero);
  Value x_neg = b.compare(Compare::LT, x, zero);
  Value root = b.mul(b.unary("sqrt", b.unary("abs", x)), grow);
  re = b.select(y_zero, b.select(x_neg, zero, root), re);
  im = b.select(y_zero, copysign(b, b.select(x_neg, root, zero), y), im);
  // non-finite parts
  Value y_nan = isnan(b, y), x_inf = isinf(b, x), x_neg_inf = both(b, x_inf, signbit(b, x));
  Value any_nan = either(b, isnan(b, x), y_nan);
  re = b.select(any_nan, nan, re), im = b.select(any_nan, nan, im);
  re = b.select(x_inf, b.select(x_neg_inf, b.select(y_nan, nan, zero), inf), re);
  im = b.select(x_inf, b.select(x_neg_inf, copysign(b, inf, y), b.select(y_nan, nan, copysign(b, zero, y))), im);
  Value y_inf = isinf(b, y);
  re = b.select(y_inf, inf, re), im = b.select(y_inf, y, im);
  return make(b, re, im, z.type);
}

// (a + ib) / (c + id) by Smith's algorithm, as c10::complex divides (and
// NumPy): the ratio of the smaller to the larger part of the divisor scales
// the result, so no square overflows; 0 / 0 gives a / |c| and b / |d|.
// log1p(z) as c10::complex computes it: the angle atan2(im, re + 1), the
// modulus' logarithm through log1p(re (2 + re) + im^2) when |z| < 0.5 (re
// itself when that underflows to 0), else log(hypot(re + 1, im)).
Value clog1p_c10(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Value one = k(b, 1, p.re);
  Value re1 = b.add(p.re, one);
  Value theta = b.binary("atan2", p.im, re1);
  Value r = b.add(b.mul(p.re, b.add(k(b, 2, p.re), p.re)), b.mul(p.im, p.im));
  Value small_mod = b.select(b.compare(Compare::EQ, r, k(b, 0, r)), p.re, b.mul(k(b, 0.5, r), b.unary("log_plus_one", r)));
  Value big_mod = b.unary("log", cabs_c99(b, re1, p.im));
  Value small = b.compare(Compare::LT, cabs_c99(b, p.re, p.im), k(b, 0.5, p.re));
  return make(b, b.select(small, small_mod, big_mod), theta, z.type);
}

// logaddexp of complex values as CPU's helper computes it: NaN (in either
// part of either operand) gives NaN + NaNj; with min/max ordered by real
// part, equal infinite real parts give min (-inf) or log(exp(min) + exp(max))
// (+inf); otherwise max + log1p(exp(min - max)).
Value clogaddexp_cpu(Builder& b, const Value& x, const Value& y) {
  Parts px = parts(b, x), py = parts(b, y);
  Value nan_x = either(b, isnan(b, px.re), isnan(b, px.im));
  Value nan_y = either(b, isnan(b, py.re), isnan(b, py.im));
  Value x_first = b.compare(Compare::LT, px.re, py.re);
  Value mn = b.select(x_first, x, y), mx = b.select(x_first, y, x);
  Parts pmn = parts(b, mn), pmx = parts(b, mx);
  Value general = b.add(clog1p_c10(b, cexp_c99(b, b.sub(mn, mx))), mx);
  Value both_inf = both(b, b.unary("not", finite(b, pmn.re)), b.compare(Compare::EQ, pmn.re, pmx.re));
  Value plus_inf = clog_c99(b, b.add(cexp_c99(b, mn), cexp_c99(b, mx)));
  Value inf_case = b.select(b.compare(Compare::LT, pmn.re, k(b, 0, pmn.re)), mn, plus_inf);
  Value r = b.select(both_inf, inf_case, general);
  Value nan = make(b, k(b, NAN, px.re), k(b, NAN, px.re), x.type);
  return b.select(either(b, nan_x, nan_y), nan, r);
}

Value cdiv_smith(Builder& b, const Value& x, const Value& y) {
  Parts p = parts(b, x), q = parts(b, y);
  const Value &a = p.re, &bb = p.im, &c = q.re, &d = q.im;
  Value ac_ = b.unary("abs", c), ad_ = b.unary("abs", d);
  Value one = k(b, 1, a), zero = k(b, 0, a);
  // |c| >= |d|
  Value rat1 = b.div(d, c);
  Value scl1 = b.div(one, b.add(c, b.mul(d, rat1)));
  Value re1 = b.mul(b.add(a, b.mul(bb, rat1)), scl1), im1 = b.mul(b.sub(bb, b.mul(a, rat1)), scl1);
  // both zero
  Value both_zero = both(b, b.compare(Compare::EQ, ac_, zero), b.compare(Compare::EQ, ad_, zero));
  re1 = b.select(both_zero, b.div(a, ac_), re1), im1 = b.select(both_zero, b.div(bb, ad_), im1);
  // |c| < |d| (or a NaN part)
  Value rat2 = b.div(c, d);
  Value scl2 = b.div(one, b.add(d, b.mul(c, rat2)));
  Value re2 = b.mul(b.add(b.mul(a, rat2), bb), scl2), im2 = b.mul(b.sub(b.mul(bb, rat2), a), scl2);
  Value first = b.compare(Compare::GE, ac_, ad_);
  return make(b, b.select(first, re1, re2), b.select(first, im1, im2), x.type);
}

namespace {

// The largest x with exp(x) finite, rounded down: glibc's threshold t.
double exp_limit(const Value& x) {
  return x.type.elem == ElemType::F32 ? std::floor((FLT_MAX_EXP - 1) * M_LN2) : std::floor((DBL_MAX_EXP - 1) * M_LN2);
}

// exp(a) / 2 * c for a >= 0 without an intermediate overflow: c is scaled
// by exp(t) / 2 first and by exp(a - t) in at most two steps of t, and past
// that by the largest finite value (so c = ±0 stays ±0, never inf * 0).
Value half_exp_times(Builder& b, const Value& a, const Value& c) {
  double t = exp_limit(a);
  Value one = k(b, 1, a);
  Value big = b.compare(Compare::GT, a, k(b, t, a));
  Value v = b.mul(c, b.select(big, k(b, std::exp(t) / 2, a), k(b, 0.5, a)));
  Value rest = b.select(big, b.sub(a, k(b, t, a)), a);
  Value step = b.compare(Compare::GT, rest, k(b, t, a));
  v = b.mul(v, b.select(step, k(b, std::exp(t), a), one));
  rest = b.select(step, b.sub(rest, k(b, t, a)), rest);
  Value over = b.compare(Compare::GT, rest, k(b, t, a));
  double max = a.type.elem == ElemType::F32 ? FLT_MAX : DBL_MAX;
  return b.mul(v, b.select(over, k(b, max, a), b.unary("exponential", b.select(over, k(b, 0, a), rest))));
}

// i z and -i z
Value times_i(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  return make(b, neg(b, p.im), p.re, z.type);
}
Value times_minus_i(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  return make(b, p.im, neg(b, p.re), z.type);
}


// sinh(x + iy) (odd = true) = sinh x cos y + i cosh x sin y, or cosh(x + iy)
// (odd = false) = cosh x cos y + i sinh x sin y: with |x| past exp's limit
// both are exp|x| / 2 taken in steps; Annex G's values for infinite and NaN
// parts (glibc's csinh/ccosh).
Value csinh_ccosh(Builder& b, const Value& z, bool odd) {
  Parts p = parts(b, z);
  const Value &x = p.re, &y = p.im;
  Value zero = k(b, 0, x), inf = k(b, INFINITY, x), nan = k(b, NAN, x);
  Value ax = b.unary("abs", x), x_neg = signbit(b, x);
  SinCos sc = sincos(b, y);
  auto sign_x = [&](const Value& v) { return b.select(x_neg, neg(b, v), v); };
  Value large = b.compare(Compare::GT, ax, k(b, exp_limit(x), x));
  // sinh|x| and cosh|x| as factors of cos y and sin y
  Value c_factor = odd ? real_sinh(b, ax) : real_cosh(b, ax);
  Value s_factor = odd ? real_cosh(b, ax) : real_sinh(b, ax);
  Value re = b.select(large, half_exp_times(b, ax, sc.cos), b.mul(c_factor, sc.cos));
  Value im = b.select(large, half_exp_times(b, ax, sc.sin), b.mul(s_factor, sc.sin));
  if (odd) re = sign_x(re);
  else im = sign_x(im);
  Value y_zero = b.compare(Compare::EQ, y, zero), y_fin = finite(b, y), x_zero = b.compare(Compare::EQ, x, zero);
  // finite x, y infinite or NaN
  Value re_y = odd ? b.select(x_zero, x, nan) : nan;
  Value im_y = odd ? nan : b.select(x_zero, zero, nan);
  re = b.select(y_fin, re, re_y), im = b.select(y_fin, im, im_y);
  // x = ±inf: infinite parts with the signs of cos y and sin y
  Value re_inf = b.select(y_zero, odd ? x : inf, copysign(b, inf, sc.cos));
  Value im_inf = b.select(y_zero, odd ? y : sign_x(y), copysign(b, inf, sc.sin));
  if (odd) re_inf = b.select(y_zero, re_inf, sign_x(re_inf));
  else im_inf = b.select(y_zero, im_inf, sign_x(im_inf));
  re_inf = b.select(y_fin, re_inf, inf);  // sinh(-inf + i inf) is +inf + i NaN, as glibc gives
  im_inf = b.select(y_fin, im_inf, nan);
  Value x_inf = isinf(b, x);
  re = b.select(x_inf, re_inf, re), im = b.select(x_inf, im_inf, im);
  // x NaN: NaN + i y for y = ±0, else NaN + i NaN
  Value x_nan = isnan(b, x);
  re = b.select(x_nan, nan, re);
  im = b.select(x_nan, b.select(y_zero, y, nan), im);
  return make(b, re, im, z.type);
}

}  // namespace

Value csinh_c99(Builder& b, const Value& z) { return csinh_ccosh(b, z, true); }
Value ccosh_c99(Builder& b, const Value& z) { return csinh_ccosh(b, z, false); }
// sin z = -i sinh(iz), cos z = cosh(iz)
Value csin_c99(Builder& b, const Value& z) {
  Value w = times_minus_i(b, csinh_c99(b, times_i(b, z)));
  // glibc's csin(x + i inf) for x infinite or NaN: NaN + i inf whatever the signs
  Parts p = parts(b, z), q = parts(b, w);
  Value fix = both(b, isinf(b, p.im), b.unary("not", finite(b, p.re)));
  return make(b, q.re, b.select(fix, k(b, INFINITY, q.im), q.im), z.type);
}
Value ccos_c99(Builder& b, const Value& z) { return ccosh_c99(b, times_i(b, z)); }

// tanh(x + iy) by Kahan's formula: t = tan y, s = sinh x, beta = 1 + t^2,
// tanh z = (beta s sqrt(1 + s^2) + i t) / (1 + beta s^2); for larger |x|
// ±1 + i 4 sin y cos y exp(-2|x|) (a signed zero, or tiny).
// Annex G (C11): tanh(±inf + iy) = ±1 ± i0, tanh(±0 + i inf) = ±0 + i NaN.
Value ctanh_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  const Value &x = p.re, &y = p.im;
  Value zero = k(b, 0, x), one = k(b, 1, x), nan = k(b, NAN, x);
  Value ax = b.unary("abs", x), x_neg = signbit(b, x);
  SinCos sc = sincos(b, y);
  Value t = b.div(sc.sin, sc.cos);
  Value s = real_sinh(b, x);
  Value beta = b.add(one, b.mul(t, t));
  Value rho = b.unary("sqrt", b.add(one, b.mul(s, s)));
  Value denom = b.add(one, b.mul(beta, b.mul(s, s)));
  Value re = b.div(b.mul(b.mul(beta, rho), s), denom);
  Value im = b.div(t, denom);
  // past |x| = 9 (f32) or 22 (f64) tanh x rounds to ±1 and sinh x squared
  // can overflow the formula above
  double cut = x.type.elem == ElemType::F32 ? 9 : 22;
  Value large = b.compare(Compare::GT, ax, k(b, cut, x));
  Value unit = b.select(x_neg, neg(b, one), one);
  Value e = b.unary("exponential", b.mul(k(b, -2, x), b.min(ax, k(b, exp_limit(x), x))));
  Value tiny = b.mul(b.mul(k(b, 4, x), b.mul(sc.sin, sc.cos)), e);
  re = b.select(large, unit, re), im = b.select(large, tiny, im);
  // finite x, y infinite or NaN: ±0 + i NaN for x = ±0, else NaN + i NaN
  Value y_fin = finite(b, y), x_zero = b.compare(Compare::EQ, x, zero);
  re = b.select(y_fin, re, b.select(x_zero, x, nan)), im = b.select(y_fin, im, nan);
  // x = ±inf: ±1 + i0 with the sign of sin 2y (of y when y is not finite)
  Value x_inf = isinf(b, x);
  Value im_inf = copysign(b, zero, b.select(y_fin, b.mul(sc.sin, sc.cos), y));
  re = b.select(x_inf, unit, re), im = b.select(x_inf, im_inf, im);
  // x NaN: NaN + i y for y = 0, else NaN + i NaN
  Value x_nan = isnan(b, x);
  re = b.select(x_nan, nan, re);
  im = b.select(x_nan, b.select(b.compare(Compare::EQ, y, zero), y, nan), im);
  return make(b, re, im, z.type);
}
// tan z = -i tanh(iz)
Value ctan_c99(Builder& b, const Value& z) { return times_minus_i(b, ctanh_c99(b, times_i(b, z))); }

// atanh(x + iy) = log((1 + z) / (1 - z)) / 2, in Kahan's form: real part
// log1p(4|x| / ((1 - |x|)^2 + y^2)) / 4 with x's sign, imaginary part
// atan2(2y, (1 - |x|)(1 + |x|) - y^2) / 2; for parts too large to square,
// Re(1 / z) + i pi/2 with y's sign. Annex G: atanh(±1 + i0) = ±inf + i0,
// an infinite part gives ±0 + i pi/2 (NaN when y is NaN).
Value catanh_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  const Value &x = p.re, &y = p.im;
  Value zero = k(b, 0, x), one = k(b, 1, x), nan = k(b, NAN, x), half_pi = k(b, M_PI / 2, x);
  Value ax = b.unary("abs", x), ay = b.unary("abs", y), x_neg = signbit(b, x);
  auto sign_x = [&](const Value& v) { return b.select(x_neg, neg(b, v), v); };
  Value omx = b.sub(one, ax);
  Value re = b.mul(k(b, 0.25, x),
                   b.unary("log_plus_one", b.div(b.mul(k(b, 4, x), ax), b.add(b.mul(omx, omx), b.mul(ay, ay)))));
  // z near ±1: the squares underflow (atanh(1 + 1e-30i) is 34.9 + 0.785i), and
  // log1p(4|x| / d) = log(4|x|) - 2 log|1 - |x| + iy| to within 1/u
  Value near = cabs_c99(b, omx, ay);
  Value close = b.compare(Compare::LT, near, k(b, x.type.elem == ElemType::F32 ? 1e-4 : 1e-8, x));
  Value re_near = b.mul(k(b, 0.25, x), b.sub(b.unary("log", b.mul(k(b, 4, x), ax)),
                                             b.mul(k(b, 2, x), b.unary("log", near))));
  re = b.select(close, re_near, re);
  Value im = b.mul(k(b, 0.5, x), b.binary("atan2", b.mul(k(b, 2, x), y),
                                          b.sub(b.mul(omx, b.add(one, ax)), b.mul(ay, ay))));
  // parts too large to square: Re(1/z) = x / (x^2 + y^2), scaled by the larger part
  double limit = std::sqrt(x.type.elem == ElemType::F32 ? FLT_MAX : DBL_MAX) / 4;
  Value big = b.max(ax, ay);
  Value large = b.compare(Compare::GT, big, k(b, limit, x));
  Value x_major = b.compare(Compare::GE, ax, ay);
  Value safe_ax = b.select(b.compare(Compare::EQ, ax, zero), one, ax);
  Value safe_ay = b.select(b.compare(Compare::EQ, ay, zero), one, ay);
  Value q = b.select(x_major, b.div(ay, safe_ax), b.div(ax, safe_ay));
  Value recip = b.select(x_major, b.div(one, b.add(ax, b.mul(ay, q))), b.div(q, b.add(ay, b.mul(ax, q))));
  re = b.select(large, recip, re), im = b.select(large, copysign(b, half_pi, y), im);
  re = sign_x(re);
  // infinite parts: ±0 + i pi/2 (y NaN: ±0 + i NaN)
  Value x_inf = isinf(b, x), y_inf = isinf(b, y), x_nan = isnan(b, x), y_nan = isnan(b, y);
  Value any_inf = either(b, x_inf, y_inf);
  re = b.select(any_inf, copysign(b, zero, x), re);
  im = b.select(any_inf, b.select(y_nan, nan, copysign(b, half_pi, y)), im);
  // NaN parts without an infinite one: NaN + i NaN, except ±0 + i NaN for x = ±0
  Value nan_only = both(b, either(b, x_nan, y_nan), b.unary("not", any_inf));
  Value x_zero = b.compare(Compare::EQ, x, zero);
  re = b.select(nan_only, b.select(x_zero, x, nan), re);
  im = b.select(nan_only, nan, im);
  return make(b, re, im, z.type);
}
// atan z = -i atanh(iz)
Value catan_c99(Builder& b, const Value& z) { return times_minus_i(b, catanh_c99(b, times_i(b, z))); }

namespace {

// 1 + z, 1 - z, z - 1 with signed zeros kept in the imaginary part
Value one_plus(Builder& b, const Parts& p, const TensorType& t) {
  return make(b, b.add(k(b, 1, p.re), p.re), p.im, t);
}
Value one_minus(Builder& b, const Parts& p, const TensorType& t) {
  return make(b, b.sub(k(b, 1, p.re), p.re), neg(b, p.im), t);
}
Value minus_one(Builder& b, const Parts& p, const TensorType& t) {
  return make(b, b.sub(p.re, k(b, 1, p.re)), p.im, t);
}

}  // namespace

// Kahan's formulas ("Branch cuts for complex elementary functions", 1987),
// from two principal square roots, so no square of z is formed and the
// branch cuts follow the signs of zero:
//   asin z = atan2(x, Re(s1 s2)) + i asinh(Im(conj(s1) s2)),  s1 = sqrt(1 - z), s2 = sqrt(1 + z)
//   acos z = 2 atan2(Re s1, Re s2) + i asinh(Im(conj(s2) s1))
//   acosh z = asinh(Re(conj(s1) s2)) + 2i atan2(Im s1, Re s2),  s1 = sqrt(z - 1), s2 = sqrt(z + 1)
//   asinh z = -i asin(iz)
// Past |z| = 1e9 (f32) / 1e17 (f64), and for infinite parts, the 1 is lost
// and the products would overflow: asin z = atan2(x, |y|) + i sign(y)(log 2
// + log|z|), acos z = pi/2 - that, acosh z = log 2 + log|z| + i arg z.
// NaN parts: glibc's values.
namespace {

struct Asymptotic {
  Value large, log2z;  // |z| past the threshold (or a part infinite); log 2|z|
};
Asymptotic asymptotic(Builder& b, const Parts& p, const TensorType& t) {
  double cut = p.re.type.elem == ElemType::F32 ? 1e9 : 1e17;
  Value big = b.max(b.unary("abs", p.re), b.unary("abs", p.im));
  Value large = b.compare(Compare::GT, big, k(b, cut, p.re));  // inf included, NaN not
  Parts l = parts(b, clog_c99(b, make(b, p.re, p.im, t)));
  return {large, b.add(l.re, k(b, std::log(2.0), p.re))};
}

}  // namespace

Value casin_kahan(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Parts s1 = parts(b, csqrt_c99(b, one_minus(b, p, z.type))), s2 = parts(b, csqrt_c99(b, one_plus(b, p, z.type)));
  Value re = b.binary("atan2", p.re, b.sub(b.mul(s1.re, s2.re), b.mul(s1.im, s2.im)));
  Value im = real_asinh(b, b.sub(b.mul(s1.re, s2.im), b.mul(s1.im, s2.re)));
  Asymptotic a = asymptotic(b, p, z.type);
  re = b.select(a.large, b.binary("atan2", p.re, b.unary("abs", p.im)), re);
  im = b.select(a.large, copysign(b, a.log2z, p.im), im);
  // NaN parts: x = ±0 keeps x; an infinite partner gives an infinite imaginary part
  Value nan = k(b, NAN, p.re), x_nan = isnan(b, p.re), y_nan = isnan(b, p.im);
  Value x_zero = b.compare(Compare::EQ, p.re, k(b, 0, p.re));
  re = b.select(y_nan, b.select(x_zero, p.re, nan), b.select(x_nan, nan, re));
  Value inf_im = either(b, both(b, y_nan, isinf(b, p.re)), both(b, x_nan, isinf(b, p.im)));
  im = b.select(either(b, x_nan, y_nan), b.select(inf_im, copysign(b, k(b, INFINITY, p.re), p.im), nan), im);
  return make(b, re, im, z.type);
}
Value cacos_kahan(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Parts s1 = parts(b, csqrt_c99(b, one_minus(b, p, z.type))), s2 = parts(b, csqrt_c99(b, one_plus(b, p, z.type)));
  Value re = b.mul(k(b, 2, p.re), b.binary("atan2", s1.re, s2.re));
  Value im = real_asinh(b, b.sub(b.mul(s2.re, s1.im), b.mul(s2.im, s1.re)));
  Asymptotic a = asymptotic(b, p, z.type);
  re = b.select(a.large, b.binary("atan2", b.unary("abs", p.im), p.re), re);  // pi/2 - atan2(x, |y|), no cancellation
  im = b.select(a.large, neg(b, copysign(b, a.log2z, p.im)), im);
  // NaN parts: acos(±0 + i NaN) = pi/2 + i NaN; an infinite partner: NaN -+ i inf
  Value nan = k(b, NAN, p.re), x_nan = isnan(b, p.re), y_nan = isnan(b, p.im);
  Value x_zero = b.compare(Compare::EQ, p.re, k(b, 0, p.re));
  re = b.select(y_nan, b.select(x_zero, k(b, M_PI / 2, p.re), nan), b.select(x_nan, nan, re));
  Value inf_im = either(b, both(b, y_nan, isinf(b, p.re)), both(b, x_nan, isinf(b, p.im)));
  Value minus_inf = neg(b, copysign(b, k(b, INFINITY, p.re), p.im));
  im = b.select(either(b, x_nan, y_nan), b.select(inf_im, minus_inf, nan), im);
  return make(b, re, im, z.type);
}
Value cacosh_kahan(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  Parts s1 = parts(b, csqrt_c99(b, minus_one(b, p, z.type))), s2 = parts(b, csqrt_c99(b, one_plus(b, p, z.type)));
  Value re = real_asinh(b, b.add(b.mul(s1.re, s2.re), b.mul(s1.im, s2.im)));
  Value im = b.mul(k(b, 2, p.re), b.binary("atan2", s1.im, s2.re));
  Asymptotic a = asymptotic(b, p, z.type);
  re = b.select(a.large, a.log2z, re);
  im = b.select(a.large, b.binary("atan2", p.im, p.re), im);
  // NaN parts: +inf + i NaN when the partner is infinite, else NaN + i NaN
  Value nan = k(b, NAN, p.re), x_nan = isnan(b, p.re), y_nan = isnan(b, p.im);
  Value any_nan = either(b, x_nan, y_nan);
  Value inf_re = either(b, both(b, y_nan, isinf(b, p.re)), both(b, x_nan, isinf(b, p.im)));
  re = b.select(any_nan, b.select(inf_re, k(b, INFINITY, p.re), nan), re);
  Value zero_x = both(b, y_nan, b.compare(Compare::EQ, p.re, k(b, 0, p.re)));  // acosh(±0 + i NaN) = NaN + i pi/2
  im = b.select(any_nan, b.select(zero_x, k(b, M_PI / 2, p.re), nan), im);
  return make(b, re, im, z.type);
}
Value casinh_kahan(Builder& b, const Value& z) { return times_minus_i(b, casin_kahan(b, times_i(b, z))); }

}  // namespace ttpu::ops::ew
