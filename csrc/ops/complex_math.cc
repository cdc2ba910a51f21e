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

Value copysign(Builder& b, const Value& mag, const Value& sign) {
  return b.select(signbit(b, sign), neg(b, b.unary("abs", mag)), b.unary("abs", mag));
}
Value either(Builder& b, const Value& p, const Value& q) { return b.binary("or", p, q); }
Value finite(Builder& b, const Value& x) { return b.unary("not", either(b, isinf(b, x), isnan(b, x))); }
Value both(Builder& b, const Value& p, const Value& q) { return b.binary("and", p, q); }

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
  Value cos_y = b.select(y_zero, one, b.unary("cosine", y)), sin_y = b.select(y_zero, y, b.unary("sine", y));
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
  return make(b, b.unary("log", cabs_c99(b, p.re, p.im)), b.binary("atan2", p.im, p.re), z.type);
}

// csqrt(x + iy) as glibc: the principal root, real part >= 0, imaginary part
// with y's sign (-0 included: sqrt(-4 - 0i) = -2i), and Annex G's values for
// infinite and NaN parts.
Value csqrt_c99(Builder& b, const Value& z) {
  Parts p = parts(b, z);
  const Value &x = p.re, &y = p.im;
  Value zero = k(b, 0, x), half = k(b, 0.5, x), inf = k(b, INFINITY, x), nan = k(b, NAN, x);
  Value d = cabs_c99(b, x, y);
  Value x_pos = b.compare(Compare::GT, x, zero);
  // x > 0: r = sqrt((d + x) / 2), s = y / 2r;  x <= 0: s = sqrt((d - x) / 2), r = |y| / 2s
  Value big_pos = b.unary("sqrt", b.add(b.mul(half, d), b.mul(half, x)));
  Value big_neg = b.unary("sqrt", b.sub(b.mul(half, d), b.mul(half, x)));
  Value re = b.select(x_pos, big_pos, b.unary("abs", b.mul(half, b.div(y, big_neg))));
  Value im = b.select(x_pos, b.mul(half, b.div(y, big_pos)), copysign(b, big_neg, y));
  // y = ±0: a real root, on the axis y's sign picks
  Value y_zero = b.compare(Compare::EQ, y, zero);
  Value x_neg = b.compare(Compare::LT, x, zero);
  Value root = b.unary("sqrt", b.unary("abs", x));
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

}  // namespace ttpu::ops::ew
