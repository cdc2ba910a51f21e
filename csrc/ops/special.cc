// Special functions (torch.special and friends): gamma-family functions,
// error-function relatives, Bessel functions, incomplete gamma, Hurwitz zeta
// and the classical orthogonal polynomials. Most are computed in f64 and
// rounded to the result type, so truncated power series and asymptotic
// expansions reach float32 accuracy over the whole range without tuned
// minimax coefficients: power series (all terms unrolled) for small
// arguments, Hankel-type asymptotic expansions for large ones. Where CHLO has
// the function (lgamma, digamma, polygamma, erf_inv, zeta, next_after) the
// plugin's own expansion is used, wrapped with PyTorch's edge-case rules.

#include <cmath>
#include <limits>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

constexpr double kEuler = 0.57721566490153286061;

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Value k(Builder& b, double v, const Value& like) { return b.constant(v, like.type.elem, like.type.dims); }

Value neg(Builder& b, const Value& x) { return b.unary("negate", x); }

Value abs(Builder& b, const Value& x) { return b.unary("abs", x); }

Value log(Builder& b, const Value& x) { return b.unary("log", x); }

Value exp(Builder& b, const Value& x) { return b.unary("exponential", x); }

Value sqrt(Builder& b, const Value& x) { return b.unary("sqrt", x); }

Value cmp(Builder& b, Compare d, const Value& x, double v) { return b.compare(d, x, k(b, v, x)); }

Value isnan(Builder& b, const Value& x) { return b.compare(Compare::NE, x, x); }

Value isinf(Builder& b, const Value& x) { return cmp(b, Compare::EQ, abs(b, x), kInf); }

Value both(Builder& b, const Value& p, const Value& q) { return b.binary("and", p, q); }

Value either(Builder& b, const Value& p, const Value& q) { return b.binary("or", p, q); }

Value where(Builder& b, const Value& p, double v, const Value& f) { return b.select(p, k(b, v, f), f); }

Value chlo(Builder& b, const char* name, const std::vector<Value>& xs) {
  return b.op(std::string("chlo.") + name, xs, xs[0].type);
}

// x is an integer (floor(x) == x; false for inf and NaN)
Value is_int(Builder& b, const Value& x) {
  return both(b, b.compare(Compare::EQ, b.unary("floor", x), x), cmp(b, Compare::NE, abs(b, x), kInf));
}

constexpr ElemType F64 = ElemType::F64;

// Input i as f64 broadcast to the result shape.
Value in64(LowerCtx& c, size_t i) { return ew_in(c, i, F64); }

// sum_k c[k] y^k (Horner)
Value poly(Builder& b, const std::vector<double>& cs, const Value& y) {
  Value r = k(b, cs.back(), y);
  for (size_t i = cs.size() - 1; i-- > 0;) r = b.add(b.mul(r, y), k(b, cs[i], y));
  return r;
}

// Power series sum_k t_k with t_{k+1} = t_k * q / ((k + 1)(k + 1 + nu)), and
// the weighted sum sum_k w[k] t_k when weights are given.
struct Sums {
  Value plain, weighted;
};

Sums series(Builder& b, Value t, const Value& q, int nu, int n, const std::vector<double>& w = {}) {
  Sums s{t, w.empty() ? Value{} : b.mul(t, k(b, w[0], t))};
  for (int i = 0; i + 1 < n; ++i) {
    t = b.mul(t, b.mul(q, k(b, 1.0 / ((i + 1.0) * (i + 1.0 + nu)), q)));
    s.plain = b.add(s.plain, t);
    if (!w.empty() && w[i + 1] != 0) s.weighted = b.add(s.weighted, b.mul(t, k(b, w[i + 1], t)));
  }
  return s;
}

// a_k(nu) = prod_{j=1..k} (4 nu^2 - (2j - 1)^2) / (k! 8^k): the coefficients
// of the large-argument expansions of I, K, J and Y.
std::vector<double> hankel_coefs(int nu, int n) {
  std::vector<double> a(n);
  double mu = 4.0 * nu * nu, p = 1;
  for (int i = 0; i < n; ++i) {
    a[i] = p;
    p *= (mu - (2.0 * i + 1) * (2.0 * i + 1)) / ((i + 1.0) * 8.0);
  }
  return a;
}

// psi(k + 1) = -gamma + H_k
double psi1(int k) {
  double h = -kEuler;
  for (int j = 1; j <= k; ++j) h += 1.0 / j;
  return h;
}

// I_nu(x) (nu = 0, 1), or e^-|x| I_nu(x) when scaled.
Value bessel_i(Builder& b, const Value& x, int nu, bool scaled) {
  const double cut = 30;
  Value ax = abs(b, x);
  Value q = b.mul(k(b, 0.25, ax), b.mul(ax, ax));
  Value s = series(b, nu == 0 ? k(b, 1, ax) : b.mul(ax, k(b, 0.5, ax)), q, nu, 80).plain;
  if (scaled) s = b.mul(s, exp(b, neg(b, ax)));
  // e^x / sqrt(2 pi x) sum_k (-1)^k a_k / x^k
  auto a = hankel_coefs(nu, 20);
  for (size_t i = 1; i < a.size(); i += 2) a[i] = -a[i];
  Value big = b.max(ax, k(b, cut, ax));
  Value l = b.div(poly(b, a, b.div(k(b, 1, big), big)), sqrt(b, b.mul(big, k(b, 2 * M_PI, big))));
  if (!scaled) l = b.select(isinf(b, big), big, b.mul(l, exp(b, big)));
  Value r = b.select(cmp(b, Compare::LE, ax, cut), s, l);
  if (nu == 1) r = b.mul(r, b.unary("sign", x));
  // CPU's I0 and I1 are NaN at +-inf (its expansion divides inf by inf); the scaled ones are not
  return scaled ? r : where(b, isinf(b, x), kNaN, r);
}

Value bessel_k(Builder& b, const Value& x, int nu, bool scaled) {
  const double cut = 9;
  const int n = 50;
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) w[i] = nu == 0 ? psi1(i) + kEuler : psi1(i) + psi1(i + 1);
  Value sx = b.min(x, k(b, cut, x));
  Value q = b.mul(k(b, 0.25, sx), b.mul(sx, sx));
  Value lh = log(b, b.mul(sx, k(b, 0.5, sx)));
  Value s;
  if (nu == 0) {
    // -(ln(x/2) + gamma) I0(x) + sum_k H_k (x^2/4)^k / (k!)^2
    Sums z = series(b, k(b, 1, sx), q, 0, n, w);
    s = b.sub(z.weighted, b.mul(b.add(lh, k(b, kEuler, lh)), z.plain));
  } else {
    // 1/x + ln(x/2) I1(x) - 1/2 sum_k (psi(k+1) + psi(k+2)) (x/2)^(2k+1) / (k! (k+1)!)
    Sums z = series(b, b.mul(sx, k(b, 0.5, sx)), q, 1, n, w);
    s = b.add(b.div(k(b, 1, sx), sx), b.sub(b.mul(lh, z.plain), b.mul(k(b, 0.5, sx), z.weighted)));
  }
  if (scaled) s = b.mul(s, exp(b, sx));
  // sqrt(pi / 2x) e^-x sum_k a_k / x^k
  Value big = b.max(x, k(b, cut, x));
  Value l = b.mul(poly(b, hankel_coefs(nu, 20), b.div(k(b, 1, big), big)),
                  sqrt(b, b.div(k(b, M_PI / 2, big), big)));
  if (!scaled) l = b.mul(l, exp(b, neg(b, big)));
  Value r = b.select(cmp(b, Compare::LE, x, cut), s, l);
  r = where(b, cmp(b, Compare::EQ, x, 0), kInf, r);
  r = where(b, cmp(b, Compare::LT, x, 0), kNaN, r);
  return r;
}

// J_nu(x) (second = false) or Y_nu(x), nu = 0, 1.
Value bessel_jy(Builder& b, const Value& x, int nu, bool second) {
  const double cut = 12;
  const int n = 48;
  Value ax = abs(b, x);
  Value sx = b.min(ax, k(b, cut, ax));
  Value q = neg(b, b.mul(k(b, 0.25, sx), b.mul(sx, sx)));
  std::vector<double> w;
  if (second) {
    w.resize(n);
    for (int i = 0; i < n; ++i) w[i] = nu == 0 ? psi1(i) + kEuler : psi1(i) + psi1(i + 1);
  }
  Sums z = series(b, nu == 0 ? k(b, 1, sx) : b.mul(sx, k(b, 0.5, sx)), q, nu, n, w);
  Value s = z.plain;
  if (second) {
    Value lh = log(b, b.mul(sx, k(b, 0.5, sx)));
    if (nu == 0) {
      // (2/pi) ((ln(x/2) + gamma) J0(x) - sum_k H_k t_k)
      s = b.mul(k(b, 2 / M_PI, sx), b.sub(b.mul(b.add(lh, k(b, kEuler, lh)), z.plain), z.weighted));
    } else {
      // -2/(pi x) + (2/pi) ln(x/2) J1(x) - (1/pi) sum_k (psi(k+1) + psi(k+2)) t_k
      s = b.sub(b.mul(k(b, 2 / M_PI, sx), b.mul(lh, z.plain)),
                b.add(b.div(k(b, 2 / M_PI, sx), sx), b.mul(k(b, 1 / M_PI, sx), z.weighted)));
    }
  }
  // Hankel: sqrt(2 / (pi x)) (P cos w - Q sin w) for J, (P sin w + Q cos w) for Y,
  // w = x - (nu/2 + 1/4) pi, P = sum (-1)^k a_2k / x^2k, Q = sum (-1)^k a_2k+1 / x^2k+1
  auto a = hankel_coefs(nu, 20);
  std::vector<double> pc, qc;
  for (int i = 0; i < 10; ++i) {
    pc.push_back((i % 2 ? -1 : 1) * a[2 * i]);
    qc.push_back((i % 2 ? -1 : 1) * a[2 * i + 1]);
  }
  Value big = b.max(ax, k(b, cut, ax));
  Value y = b.div(k(b, 1, big), big);
  Value y2 = b.mul(y, y);
  Value P = poly(b, pc, y2), Q = b.mul(poly(b, qc, y2), y);
  Value wv = b.sub(big, k(b, (nu / 2.0 + 0.25) * M_PI, big));
  Value cw = b.unary("cosine", wv), sw = b.unary("sine", wv);
  Value h = second ? b.add(b.mul(P, sw), b.mul(Q, cw)) : b.sub(b.mul(P, cw), b.mul(Q, sw));
  Value l = b.mul(h, sqrt(b, b.mul(y, k(b, 2 / M_PI, y))));
  Value r = b.select(cmp(b, Compare::LE, ax, cut), s, l);
  if (second) {
    r = where(b, cmp(b, Compare::EQ, x, 0), -kInf, r);
    r = where(b, cmp(b, Compare::LT, x, 0), kNaN, r);
    r = where(b, isnan(b, x), kNaN, r);
  } else if (nu == 1) {
    r = b.mul(r, b.unary("sign", x));
  }
  return r;
}

// -10 <= x <= 6: Ai(x) = Ai(0) f(x) + Ai'(0) g(x) with the power series
// f = sum x^3k prod_j (3j-2) / (3k)!, g = sum x^(3k+1) prod_j (3j-1) / (3k+1)!.
// x > 6: e^-z / (2 sqrt(pi) x^1/4) sum (-1)^k u_k / z^k, z = 2/3 x^3/2;
// x < -10: (sin(z + pi/4) sum (-1)^k u_2k / z^2k - cos(z + pi/4) sum (-1)^k u_2k+1 / z^2k+1) / (sqrt(pi) |x|^1/4),
// u_0 = 1, u_k = u_{k-1} (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k).
Value airy_ai_(Builder& b, const Value& x) {
  const double lo = -10, hi = 6;
  const double ai0 = 0.355028053887817239, dai0 = -0.258819403792806798;
  std::vector<double> u{1.0};
  for (int i = 1; i < 32; ++i) u.push_back(u.back() * (6 * i - 5) * (6 * i - 3) * (6 * i - 1) / ((2 * i - 1) * 216.0 * i));
  Value sx = b.clamp(k(b, lo, x), x, k(b, hi, x));
  Value z3 = b.mul(sx, b.mul(sx, sx));
  Value tf = k(b, 1, sx), tg = sx, f = tf, g = tg;
  for (int i = 1; i < 45; ++i) {
    tf = b.mul(tf, b.mul(z3, k(b, 1.0 / ((3.0 * i) * (3.0 * i - 1)), sx)));
    tg = b.mul(tg, b.mul(z3, k(b, 1.0 / ((3.0 * i + 1) * (3.0 * i)), sx)));
    f = b.add(f, tf);
    g = b.add(g, tg);
  }
  Value ser = b.add(b.mul(k(b, ai0, f), f), b.mul(k(b, dai0, g), g));
  // right tail
  Value xp = b.max(x, k(b, hi, x));
  Value zp = b.mul(k(b, 2.0 / 3, xp), b.mul(xp, sqrt(b, xp)));
  std::vector<double> alt(u.begin(), u.begin() + 16);
  for (size_t i = 1; i < alt.size(); i += 2) alt[i] = -alt[i];
  Value right = b.div(b.mul(exp(b, neg(b, zp)), poly(b, alt, b.div(k(b, 1, zp), zp))),
                      b.mul(k(b, 2 * std::sqrt(M_PI), xp), sqrt(b, sqrt(b, xp))));
  // left tail
  Value y = b.max(neg(b, x), k(b, -lo, x));
  Value zn = b.mul(k(b, 2.0 / 3, y), b.mul(y, sqrt(b, y)));
  Value r = b.div(k(b, 1, zn), zn), r2 = b.mul(r, r);
  std::vector<double> pc, qc;
  for (int i = 0; i < 8; ++i) {
    pc.push_back((i % 2 ? -1 : 1) * u[2 * i]);
    qc.push_back((i % 2 ? -1 : 1) * u[2 * i + 1]);
  }
  Value ph = b.add(zn, k(b, M_PI / 4, zn));
  Value left = b.div(b.sub(b.mul(b.unary("sine", ph), poly(b, pc, r2)), b.mul(b.unary("cosine", ph), b.mul(r, poly(b, qc, r2)))),
                     b.mul(k(b, std::sqrt(M_PI), y), sqrt(b, sqrt(b, y))));
  Value res = b.select(cmp(b, Compare::GT, x, hi), right, b.select(cmp(b, Compare::LT, x, lo), left, ser));
  return where(b, isinf(b, x), kNaN, res);  // as on CPU
}

using Fn64 = Value (*)(Builder&, const Value&);

template <Fn64 F>
std::vector<Value> unary64(LowerCtx& c) {
  return as_out(c, F(c.b, in64(c, 0)));
}

Value i0_(Builder& b, const Value& x) { return bessel_i(b, x, 0, false); }

Value i0e_(Builder& b, const Value& x) { return bessel_i(b, x, 0, true); }

Value i1_(Builder& b, const Value& x) { return bessel_i(b, x, 1, false); }

Value i1e_(Builder& b, const Value& x) { return bessel_i(b, x, 1, true); }

Value k0_(Builder& b, const Value& x) { return bessel_k(b, x, 0, false); }

Value k1_(Builder& b, const Value& x) { return bessel_k(b, x, 1, false); }

Value k0e_(Builder& b, const Value& x) { return bessel_k(b, x, 0, true); }

Value k1e_(Builder& b, const Value& x) { return bessel_k(b, x, 1, true); }

Value j0_(Builder& b, const Value& x) { return bessel_jy(b, x, 0, false); }

Value j1_(Builder& b, const Value& x) { return bessel_jy(b, x, 1, false); }

Value y0_(Builder& b, const Value& x) { return bessel_jy(b, x, 0, true); }

Value y1_(Builder& b, const Value& x) { return bessel_jy(b, x, 1, true); }

Value spherical_j0_(Builder& b, const Value& x) {
  // sin(x) / x; 1 at 0, 0 at +-inf
  Value zero = cmp(b, Compare::EQ, x, 0);
  Value safe = where(b, zero, 1, x);
  Value r = b.div(b.unary("sine", safe), safe);
  r = where(b, zero, 1, r);
  return where(b, isinf(b, x), 0, r);
}

Value lgamma_(Builder& b, const Value& x) {
  // +inf at the poles (non-positive integers) and at -inf
  Value r = chlo(b, "lgamma", {x});
  Value pole = both(b, is_int(b, x), cmp(b, Compare::LE, x, 0));
  return where(b, either(b, pole, isinf(b, x)), kInf, r);
}

Value digamma_(Builder& b, const Value& x) {
  // digamma(+-0) = -+inf; NaN at negative integers and -inf
  Value r = chlo(b, "digamma", {x});
  Value zero = cmp(b, Compare::EQ, x, 0);
  Value negzero = cmp(b, Compare::LT, b.div(k(b, 1, x), x), 0);
  r = b.select(zero, b.select(negzero, k(b, kInf, x), k(b, -kInf, x)), r);
  Value bad = either(b, both(b, is_int(b, x), cmp(b, Compare::LT, x, 0)), cmp(b, Compare::EQ, x, -kInf));
  r = where(b, bad, kNaN, r);
  return where(b, cmp(b, Compare::EQ, x, kInf), kInf, r);
}

Value erfinv_(Builder& b, const Value& x) {
  Value r = chlo(b, "erf_inv", {x});
  r = where(b, cmp(b, Compare::EQ, x, 1), kInf, r);
  r = where(b, cmp(b, Compare::EQ, x, -1), -kInf, r);
  return where(b, cmp(b, Compare::GT, abs(b, x), 1), kNaN, r);
}

Value ndtri_(Builder& b, const Value& p) {
  // sqrt(2) erfinv(2p - 1)
  return b.mul(k(b, M_SQRT2, p), erfinv_(b, b.sub(b.mul(k(b, 2, p), p), k(b, 1, p))));
}

Value erfc64(Builder& b, const Value& x) { return b.op("chlo.erfc", {x}, x.type); }

Value log_ndtr_(Builder& b, const Value& x) {
  // log(erfc(-x / sqrt 2) / 2); far in the left tail from the asymptotic series
  // log Phi(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + ...)
  Value direct = log(b, b.mul(k(b, 0.5, x), erfc64(b, b.mul(x, k(b, -M_SQRT1_2, x)))));
  Value t = b.min(x, k(b, -20, x));
  Value y = b.div(k(b, 1, t), b.mul(t, t));
  Value ser = poly(b, {1, -1, 3, -15, 105, -945, 10395}, y);
  Value tail = b.sub(b.sub(b.mul(k(b, -0.5, t), b.mul(t, t)), log(b, neg(b, t))),
                     b.sub(k(b, 0.5 * std::log(2 * M_PI), t), log(b, ser)));
  return b.select(cmp(b, Compare::LT, x, -20), tail, direct);
}

Value erfcx_(Builder& b, const Value& x) {
  // e^(x^2) erfc(x); for large x the asymptotic series
  // 1/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - 15/(2x^2)^3 + ...)
  Value xs = b.min(x, k(b, 25, x));
  Value direct = b.mul(exp(b, b.mul(xs, xs)), erfc64(b, xs));
  Value big = b.max(x, k(b, 25, x));
  Value y = b.div(k(b, 0.5, big), b.mul(big, big));
  Value tail = b.div(poly(b, {1, -1, 3, -15, 105, -945}, y), b.mul(big, k(b, std::sqrt(M_PI), big)));
  Value r = b.select(cmp(b, Compare::LT, x, 25), direct, tail);
  return where(b, cmp(b, Compare::EQ, x, kInf), 0, r);
}

Value entr_(Builder& b, const Value& x) {
  // -x log x; 0 at 0, -inf for x < 0, NaN stays NaN
  Value pos = cmp(b, Compare::GT, x, 0);
  Value safe = b.select(pos, x, k(b, 1, x));
  Value r = b.select(pos, neg(b, b.mul(x, log(b, safe))), k(b, 0, x));
  r = where(b, cmp(b, Compare::LT, x, 0), -kInf, r);
  r = where(b, cmp(b, Compare::EQ, x, kInf), -kInf, r);
  return b.select(isnan(b, x), x, r);
}

// Three-term recurrence Y_{k+1} = (a(k) x + b(k)) Y_k - c(k) Y_{k-1} from
// Y_0 = 1 and Y_1 = y1(x), run in a stablehlo.while in x's type (as CPU runs
// it in the tensor's type, so overflow gives CPU's inf and NaN) with an f64
// degree n and counter. Each element keeps its own Y_n and stops, as CPU's
// loop does, at its degree or when Y_k is NaN; the loop ends when every
// element has stopped or at max_degree.
enum class Family { ChebT, ChebU, ChebV, ChebW, HermiteH, HermiteHe, Laguerre, Legendre };

// Elements where `closed` holds take no part in the loop.
Value recurrence(Builder& b, Family f, const Value& x, const Value& n, double max_degree, const Value* closed) {
  TensorType full = x.type;
  auto bc = [&](const Value& s) { return b.broadcast_in_dim(s, full.dims, {}); };
  std::vector<int64_t> all(full.rank());
  for (int i = 0; i < full.rank(); ++i) all[i] = i;
  Value y1;
  switch (f) {
    case Family::ChebT: case Family::HermiteHe: case Family::Legendre: y1 = x; break;
    case Family::ChebU: case Family::HermiteH: y1 = b.add(x, x); break;
    case Family::ChebV: y1 = b.sub(b.add(x, x), k(b, 1, x)); break;
    case Family::ChebW: y1 = b.add(b.add(x, x), k(b, 1, x)); break;
    case Family::Laguerre: y1 = b.sub(k(b, 1, x), x); break;
  }
  Value nl = closed ? b.select(*closed, k(b, 0, n), n) : n;
  Value kmax = b.min(b.reduce(nl, b.constant(0, F64), all, shlo::Reducer::Max), b.constant(max_degree, F64));
  std::vector<Value> init{x, nl, b.constant(1, full.elem, full.dims), y1, b.constant(1, F64), kmax};
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
  // an element runs while k < n and Y_k is not NaN
  auto running = [&](const Value& kk, const Value& nn, const Value& q) {
    return both(b, b.compare(Compare::LT, kk, nn), b.compare(Compare::EQ, q, q));
  };
  // condition: k < kmax and some element still runs
  std::vector<Value> ca;
  std::string cond = block(ca);
  std::string saved = b.swap_body("");
  Value any = b.reduce(running(bc(ca[4]), ca[1], ca[3]), b.constant_int(0, ElemType::Pred), all, shlo::Reducer::Or);
  Value go = both(b, b.compare(Compare::LT, ca[4], ca[5]), any);
  cond += b.swap_body(saved) + ret({go});
  // body
  std::vector<Value> ba;
  std::string body = block(ba);
  saved = b.swap_body("");
  {
    const Value &xx = ba[0], &nn = ba[1], &p = ba[2], &q = ba[3], &ks = ba[4];
    Value kd = bc(ks), kk = b.convert(kd, full.elem);
    Value one = k(b, 1, xx), kp1 = b.add(kk, one), two_k1 = b.add(b.add(kk, kk), one);
    // Y_{k+1} in CPU's order of operations (over millions of steps in f32 any other
    // rounding drifts apart): Laguerre ((2k + (1 - x)) Y_k - k Y_{k-1}) / (k + 1),
    // Legendre ((2k + 1) x Y_k - k Y_{k-1}) / (k + 1), the others A Y_k - C Y_{k-1}
    Value r;
    switch (f) {
      case Family::ChebT: case Family::ChebU: case Family::ChebV: case Family::ChebW:
        r = b.sub(b.mul(b.add(xx, xx), q), p); break;
      case Family::HermiteH: r = b.sub(b.mul(b.add(xx, xx), q), b.mul(b.add(kk, kk), p)); break;
      case Family::HermiteHe: r = b.sub(b.mul(xx, q), b.mul(kk, p)); break;
      case Family::Laguerre:
        r = b.div(b.sub(b.mul(b.add(b.add(kk, kk), b.sub(one, xx)), q), b.mul(kk, p)), kp1); break;
      case Family::Legendre:
        r = b.div(b.sub(b.mul(b.mul(two_k1, xx), q), b.mul(kk, p)), kp1); break;
    }
    Value active = running(kd, nn, q);
    Value np = b.select(active, q, p), nq = b.select(active, r, q);
    Value nk = b.add(ks, b.constant(1, F64));
    body += b.swap_body(saved) + ret({xx, nn, np, nq, nk, ba[5]});
  }
  auto res = b.op_multi("while", init, types, "", cond + ", " + body);
  Value y = res[3];
  y = b.select(cmp(b, Compare::EQ, n, 0), k(b, 1, x), y);
  return b.select(cmp(b, Compare::LT, n, 0), k(b, 0, x), y);
}

template <Family F, bool Shifted>
std::vector<Value> orth_poly(LowerCtx& c) {
  // (x, n): n truncated toward zero; degree < 0 gives 0. x's arithmetic runs
  // in the result type (f32 for f32 and integer inputs), as on CPU.
  Builder& b = c.b;
  ElemType ft = c.out().elem == F64 ? F64 : ElemType::F32;
  Value x = ew_in(c, 0, ft), n = in64(c, 1);
  Value nt = b.select(cmp(b, Compare::LT, n, 0), b.unary("ceil", n), b.unary("floor", n));
  // CPU casts n to int64: a NaN or a degree outside int64's range becomes INT64_MIN (x86), a negative degree
  nt = where(b, b.unary("not", cmp(b, Compare::LT, abs(b, n), 9223372036854775808.0)), -1, nt);
  if (Shifted) x = b.sub(b.add(x, x), k(b, 1, x));
  double limit = 1e18;
  bool hermite = F == Family::HermiteH || F == Family::HermiteHe;
  if (hermite) limit = c.out().elem == F64 ? 512 : 128;  // CPU returns NaN above these degrees
  bool cheb = F == Family::ChebT || F == Family::ChebU || F == Family::ChebV || F == Family::ChebW;
  Value inside;
  if (cheb) inside = cmp(b, Compare::LT, abs(b, x), 1);
  Value r = recurrence(b, F, x, nt, limit, cheb ? &inside : nullptr);
  if (cheb) {
    // |x| < 1, x = cos(t): T_n = cos(n t), U_n = sin((n+1) t) / sin t,
    // V_n = cos((n+1/2) t) / cos(t/2), W_n = sin((n+1/2) t) / sin(t/2)
    Value t = b.binary("atan2", sqrt(b, b.mul(b.sub(k(b, 1, x), x), b.add(k(b, 1, x), x))), x);
    nt = b.convert(nt, ft);
    Value cf;
    switch (F) {
      case Family::ChebT: cf = b.unary("cosine", b.mul(nt, t)); break;
      case Family::ChebU:
        cf = b.div(b.unary("sine", b.mul(b.add(nt, k(b, 1, nt)), t)), b.unary("sine", t));
        break;
      case Family::ChebV:
        cf = b.div(b.unary("cosine", b.mul(b.add(nt, k(b, 0.5, nt)), t)), b.unary("cosine", b.mul(k(b, 0.5, t), t)));
        break;
      default:
        cf = b.div(b.unary("sine", b.mul(b.add(nt, k(b, 0.5, nt)), t)), b.unary("sine", b.mul(k(b, 0.5, t), t)));
        break;
    }
    r = b.select(both(b, inside, cmp(b, Compare::GE, nt, 0)), cf, r);
  }
  if (hermite) r = where(b, cmp(b, Compare::GT, nt, limit), kNaN, r);
  return as_out(c, r);
}

// Temme's uniform asymptotic expansion of the incomplete gamma function (DLMF 8.12), for
// large a near x, where the power series and the continued fraction need about sqrt(a) terms:
//   Q(a, x) = erfc(eta sqrt(a/2)) / 2 + e^(-a eta^2/2) / sqrt(2 pi a) sum_k c_k(eta) a^-k,
//   lambda = x / a, eta^2 / 2 = lambda - 1 - ln(lambda), eta with the sign of lambda - 1.
// The c_k are derived here as Taylor series in eta, in double-precision series arithmetic:
// mu = lambda - 1 as a series in eta (Newton reversion of eta(mu) = mu sqrt(2 (mu - ln(1+mu)) / mu^2)),
// c_0 = 1/mu - 1/eta and c_k = (1/eta) c_{k-1}'(eta) + (-1)^k g_k / mu, g_k the coefficients of
// Stirling's series Gamma(a) / (sqrt(2 pi) a^(a - 1/2) e^-a) = sum g_k a^-k.
class TemmeCoefs {
 public:
  static constexpr int N = 24, K = 6;
  using S = std::vector<double>;
  static const std::vector<S>& get() {
    static const std::vector<S> cs = build();
    return cs;
  }

 private:
  static S mul(const S& a, const S& b) {
    S r(N, 0.0);
    for (int i = 0; i < N; ++i)
      for (int j = 0; i + j < N; ++j) r[i + j] += a[i] * b[j];
    return r;
  }
  static S inv(const S& a) {
    S r(N, 0.0);
    r[0] = 1 / a[0];
    for (int n = 1; n < N; ++n) {
      double v = 0;
      for (int k = 1; k <= n; ++k) v += a[k] * r[n - k];
      r[n] = -v / a[0];
    }
    return r;
  }
  static S compose(const S& a, const S& b) {  // a(b(t)), b[0] = 0
    S r(N, 0.0), p(N, 0.0);
    p[0] = 1;
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) r[j] += a[i] * p[j];
      p = mul(p, b);
    }
    return r;
  }
  static std::vector<S> build() {
    // h(mu) = 2 (mu - ln(1 + mu)) / mu^2, s = sqrt(h), eta(mu) = mu s(mu)
    S h(N), sq(N, 0.0), eta(N, 0.0);
    for (int n = 0; n < N; ++n) h[n] = 2.0 * (n % 2 ? -1 : 1) / (n + 2);
    sq[0] = 1;
    for (int n = 1; n < N; ++n) {
      double v = h[n];
      for (int k = 1; k < n; ++k) v -= sq[k] * sq[n - k];
      sq[n] = v / 2;
    }
    for (int n = 1; n < N; ++n) eta[n] = sq[n - 1];
    S deta(N, 0.0);
    for (int n = 0; n + 1 < N; ++n) deta[n] = (n + 1) * eta[n + 1];
    S mu(N, 0.0);
    mu[1] = 1;
    for (int it = 0; it < 8; ++it) {  // Newton: mu -= (eta(mu) - t) / eta'(mu)
      S f = compose(eta, mu);
      f[1] -= 1;
      S corr = mul(f, inv(compose(deta, mu)));
      for (int n = 0; n < N; ++n) mu[n] -= corr[n];
    }
    S mu_over_t(N, 0.0);
    for (int n = 0; n + 1 < N; ++n) mu_over_t[n] = mu[n + 1];
    S q = inv(mu_over_t);  // 1/mu = q(eta) / eta
    // Stirling coefficients: ln Gamma* = sum_j B_2j / (2j (2j - 1)) a^-(2j-1), g = exp of it
    const double bern[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730};
    std::vector<double> lg(K + 1, 0.0), g(K + 1, 0.0);
    for (int j = 1; 2 * j - 1 <= K; ++j) lg[2 * j - 1] = bern[j - 1] / (2.0 * j * (2 * j - 1));
    g[0] = 1;
    for (int n = 1; n <= K; ++n) {
      double v = 0;
      for (int k = 1; k <= n; ++k) v += k * lg[k] * g[n - k];
      g[n] = v / n;
    }
    std::vector<S> cs;
    S c0(N - 1);
    for (int i = 0; i + 1 < N; ++i) c0[i] = q[i + 1];
    cs.push_back(c0);
    for (int k = 1; k < K; ++k) {
      const S& prev = cs.back();
      S c;
      // eta^j: (j + 2) prev[j + 2] + (-1)^k g_k q[j + 1]; the eta^-1 terms cancel
      for (size_t j = 0; j + 2 < prev.size(); ++j) c.push_back((j + 2) * prev[j + 2] + (k % 2 ? -1 : 1) * g[k] * q[j + 1]);
      cs.push_back(c);
    }
    return cs;
  }
};

// Q(a, x) (upper) or P(a, x) by Temme's expansion; meant for a > 20 and |x/a - 1| < 0.3.
Value igamma_temme(Builder& b, const Value& a, const Value& x, bool upper) {
  Value m = b.sub(b.div(x, a), k(b, 1, a));
  // m - ln(1 + m), by its series where the difference cancels
  Value m2 = b.mul(m, m), pw = m2, ser = k(b, 0, m);
  for (int n = 2; n <= 18; ++n) {
    ser = b.add(ser, b.mul(pw, k(b, (n % 2 ? -1.0 : 1.0) / n, m)));
    pw = b.mul(pw, m);
  }
  Value d = b.select(cmp(b, Compare::LT, abs(b, m), 0.1), ser, b.sub(m, b.unary("log_plus_one", m)));
  Value eta = b.mul(b.unary("sign", m), sqrt(b, b.add(d, d)));
  Value ainv = b.div(k(b, 1, a), a), scale = k(b, 1, a), sum = k(b, 0, a);
  for (const auto& c : TemmeCoefs::get()) {
    sum = b.add(sum, b.mul(poly(b, c, eta), scale));
    scale = b.mul(scale, ainv);
  }
  Value r = b.div(b.mul(exp(b, b.mul(k(b, -0.5, a), b.mul(a, b.mul(eta, eta)))), sum),
                  sqrt(b, b.mul(a, k(b, 2 * M_PI, a))));
  Value s = b.mul(eta, sqrt(b, b.mul(a, k(b, 0.5, a))));
  return upper ? b.add(b.mul(k(b, 0.5, s), erfc64(b, s)), r)
               : b.sub(b.mul(k(b, 0.5, s), erfc64(b, neg(b, s))), r);
}

// P(a, x) (upper = false) or Q(a, x) = 1 - P(a, x), for a > 0, x >= 0:
// x < a + 1: P = x^a e^-x / Gamma(a) * sum_k x^k / (a (a+1) ... (a+k));
// otherwise Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1(1-a)/(x + 3 - a - 2(2-a)/(x + 5 - a - ...)))
// (Legendre's continued fraction, evaluated forward with the modified Lentz method).
Value igamma_(Builder& b, const Value& a, const Value& x, bool upper) {
  const double tiny = 1e-300;
  Value one = k(b, 1, a);
  Value sx = b.max(x, k(b, tiny, x));
  Value lpre = b.sub(b.sub(b.mul(a, log(b, sx)), x), chlo(b, "lgamma", {a}));
  Value pre = exp(b, lpre);
  // series
  Value t = b.div(one, a), sum = t;
  for (int i = 1; i < 120; ++i) {
    t = b.mul(t, b.div(x, b.add(a, k(b, i, a))));
    sum = b.add(sum, t);
  }
  Value ps = b.mul(pre, sum);
  // continued fraction
  auto guard = [&](const Value& v) {
    return b.select(cmp(b, Compare::LT, abs(b, v), tiny), k(b, tiny, v), v);
  };
  Value f = guard(b.add(b.sub(x, a), one));
  Value C = f, D = k(b, 0, a);
  for (int i = 1; i < 80; ++i) {
    Value an = b.mul(k(b, -i, a), b.sub(k(b, i, a), a));
    Value bn = b.add(b.sub(x, a), k(b, 2.0 * i + 1, a));
    D = b.div(one, guard(b.add(bn, b.mul(an, D))));
    C = guard(b.add(bn, b.div(an, C)));
    f = b.mul(f, b.mul(C, D));
  }
  Value qc = b.div(pre, f);
  Value use_series = b.compare(Compare::LT, x, b.add(a, one));
  Value r = upper ? b.select(use_series, b.sub(one, ps), qc) : b.select(use_series, ps, b.sub(one, qc));
  Value temme = both(b, cmp(b, Compare::GT, a, 20), cmp(b, Compare::LT, abs(b, b.sub(b.div(x, a), one)), 0.3));
  r = b.select(temme, igamma_temme(b, a, x, upper), r);
  r = b.min(b.max(r, k(b, 0, r)), one);
  // CPU's rules, first match wins: x < 0 or a < 0 -> NaN; a = 0 -> P = 1 if x > 0 else NaN;
  // x = 0 -> P = 0; a = inf -> NaN if x = inf else P = 0; x = inf -> P = 1; otherwise the value
  // (NaN for a NaN operand). Applied last rule first, so earlier rules override.
  Value lo = upper ? one : k(b, 0, a), hi = upper ? k(b, 0, a) : one;
  r = where(b, either(b, isnan(b, a), isnan(b, x)), kNaN, r);
  r = b.select(isinf(b, x), hi, r);
  r = b.select(isinf(b, a), where(b, isinf(b, x), kNaN, lo), r);
  r = b.select(cmp(b, Compare::EQ, x, 0), lo, r);
  r = b.select(cmp(b, Compare::EQ, a, 0), where(b, b.unary("not", cmp(b, Compare::GT, x, 0)), kNaN, hi), r);
  return where(b, either(b, cmp(b, Compare::LT, a, 0), cmp(b, Compare::LT, x, 0)), kNaN, r);
}

template <bool Upper>
std::vector<Value> igamma(LowerCtx& c) {
  return as_out(c, igamma_(c.b, in64(c, 0), in64(c, 1), Upper));
}

std::vector<Value> frexp(LowerCtx& c) {
  // x = m 2^e with 0.5 <= |m| < 1, in the integer domain (the CPU plugin
  // flushes subnormal floats in arithmetic): f32 and f64 bit patterns, f16 and
  // bf16 widened to f32 exactly; 0, inf and NaN give m = x, e = 0.
  Builder& b = c.b;
  bool wide = c.t(0).type.elem == F64;
  ElemType ft = wide ? F64 : ElemType::F32, it = wide ? ElemType::S64 : ElemType::S32;
  const int W = wide ? 64 : 32, M = wide ? 52 : 23, B = wide ? 1022 : 126;
  const int64_t fmax = wide ? 0x7ff : 0xff;
  Value x = ew_in(c, 0, ft);
  auto dims = x.type.dims;
  auto ik = [&](int64_t v) { return b.constant_int(v, it, dims); };
  auto band = [&](const Value& u, int64_t m) { return b.binary("and", u, ik(m)); };
  Value bits = b.bitcast(x, TensorType{it, dims});
  int64_t mant_mask = (int64_t{1} << M) - 1;
  int64_t sign_mask = wide ? static_cast<int64_t>(0x8000000000000000ULL) : static_cast<int64_t>(static_cast<int32_t>(0x80000000u));
  Value field = band(b.binary("shift_right_logical", bits, ik(M)), fmax);
  Value mant = band(bits, mant_mask);
  // subnormal: leading mantissa bit at p = W - 1 - clz(mant)
  Value p = b.sub(ik(W - 1), b.unary("count_leading_zeros", mant));
  Value sub_e = b.sub(p, ik(B + M - 1));
  Value sub_mant = band(b.binary("shift_left", mant, b.sub(ik(M), p)), mant_mask);
  Value is_sub = b.compare(Compare::EQ, field, ik(0));
  Value e = b.select(is_sub, sub_e, b.sub(field, ik(B)));
  Value mm = b.select(is_sub, sub_mant, mant);
  Value mbits = b.binary("or", b.binary("or", band(bits, sign_mask), ik(int64_t{B} << M)), mm);
  Value special = either(b, b.compare(Compare::EQ, band(bits, ~sign_mask), ik(0)), b.compare(Compare::EQ, field, ik(fmax)));
  Value m = b.bitcast(b.select(special, bits, mbits), x.type);
  e = b.select(special, ik(0), e);
  return {b.convert(m, c.out(0).elem), b.convert(e, c.out(1).elem)};
}

std::vector<Value> polygamma(LowerCtx& c) {
  // polygamma(int n, Tensor self)
  Builder& b = c.b;
  int64_t n = c.i(0);
  Value x = in64(c, 1);
  if (n == 0) return as_out(c, digamma_(b, x));
  // x > 0: CHLO; x < 0: reflection
  // psi_n(x) = (-1)^n psi_n(1 - x) - pi d^n/dx^n cot(pi x), where
  // d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)), P_0(c) = c, P_{m+1}(c) = -(1 + c^2) P_m'(c).
  std::vector<double> pc{0, 1};
  for (int64_t m = 0; m < n; ++m) {
    std::vector<double> d(pc.size() > 1 ? pc.size() - 1 : 1, 0.0);
    for (size_t i = 1; i < pc.size(); ++i) d[i - 1] = pc[i] * static_cast<double>(i);
    std::vector<double> nx(d.size() + 2, 0.0);
    for (size_t i = 0; i < d.size(); ++i) {
      nx[i] -= d[i];
      nx[i + 2] -= d[i];
    }
    pc = nx;
  }
  Value nk = k(b, static_cast<double>(n), x);
  Value pos = cmp(b, Compare::GE, x, 0);
  Value xr = b.select(pos, x, b.sub(k(b, 1, x), x));
  Value direct = b.op("chlo.polygamma", {nk, xr}, x.type);
  Value px = b.mul(x, k(b, M_PI, x));
  Value cot = b.div(b.unary("cosine", px), b.unary("sine", px));
  Value refl = b.sub(n % 2 ? neg(b, direct) : direct, b.mul(k(b, std::pow(M_PI, n + 1), x), poly(b, pc, cot)));
  Value r = b.select(pos, direct, refl);
  // n >= 2: CPU computes (-1)^(n+1) n! zeta(n + 1, x), infinite at x = 0, -1, -2, ... and -inf
  if (n >= 2) {
    Value pole = both(b, cmp(b, Compare::LE, x, 0), b.compare(Compare::EQ, b.unary("floor", x), x));
    r = where(b, pole, n % 2 ? kInf : -kInf, r);
  }
  return as_out(c, r);
}

// CPU's (Cephes') rules around the series, in its order: x = 1 -> inf; x < 1 -> NaN;
// q a non-positive integer (-inf too) -> inf (a pole); other q <= 0 with x not an integer -> NaN.
Value zeta_edges(Builder& b, const Value& x, const Value& q, const Value& r) {
  Value qneg = cmp(b, Compare::LE, q, 0);
  Value qint = b.compare(Compare::EQ, b.unary("floor", q), q);  // -inf included
  Value v = where(b, both(b, qneg, both(b, b.unary("not", qint), b.compare(Compare::NE, b.unary("floor", x), x))), kNaN, r);
  v = where(b, both(b, qneg, qint), kInf, v);
  v = where(b, cmp(b, Compare::LT, x, 1), kNaN, v);
  return where(b, cmp(b, Compare::EQ, x, 1), kInf, v);
}

std::vector<Value> zeta(LowerCtx& c) {
  // Hurwitz zeta(x, q)
  Builder& b = c.b;
  Value x = in64(c, 0), q = in64(c, 1);
  Value r = b.op("chlo.zeta", {x, q}, x.type);
  return as_out(c, zeta_edges(b, x, q, r));
}

std::vector<Value> nextafter(LowerCtx& c) {
  // In the integer domain (the CPU plugin flushes subnormals in float compares):
  // map sign-magnitude bits to a monotone key (-|bits| for negatives), step the
  // key by one towards y, map back. x == y gives y; a NaN operand gives NaN.
  Builder& b = c.b;
  ElemType t = c.out().elem;
  int w = shlo::byte_size(t) * 8;
  ElemType it = w == 64 ? ElemType::S64 : w == 32 ? ElemType::S32 : ElemType::S16;
  Value x = ew_in(c, 0, t), y = ew_in(c, 1, t);
  auto dims = x.type.dims;
  auto ik = [&](int64_t v) { return b.constant_int(v, it, dims); };
  int64_t sign = w == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (w - 1));
  auto key = [&](const Value& v) {
    Value bits = b.bitcast(v, TensorType{it, dims});
    Value mag = b.binary("and", bits, ik(~sign));
    return b.select(b.compare(Compare::LT, bits, ik(0)), neg(b, mag), mag);
  };
  Value kx = key(x), ky = key(y);
  Value step = b.select(b.compare(Compare::LT, kx, ky), ik(1), ik(-1));
  Value kn = b.add(kx, step);
  Value bits = b.select(b.compare(Compare::LT, kn, ik(0)), b.binary("or", neg(b, kn), ik(sign)), kn);
  Value r = b.bitcast(bits, x.type);
  r = b.select(b.compare(Compare::EQ, kx, ky), y, r);
  return {b.select(isnan(b, y), y, b.select(isnan(b, x), x, r))};
}

}  // namespace

void append_special(std::vector<Lowering>& t) {
  t.push_back({"i0", unary64<i0_>, {"i0+"}});
  t.push_back({"special_i0e", unary64<i0e_>, {"special_i0e+"}});
  t.push_back({"special_i1", unary64<i1_>, {"special_i1+"}});
  t.push_back({"special_i1e", unary64<i1e_>, {"special_i1e+"}});
  t.push_back({"modified_bessel_i0", unary64<i0_>, {"special_modified_bessel_i0+"}});
  t.push_back({"modified_bessel_i1", unary64<i1_>, {"special_modified_bessel_i1+"}});
  t.push_back({"modified_bessel_k0", unary64<k0_>, {"special_modified_bessel_k0+"}});
  t.push_back({"modified_bessel_k1", unary64<k1_>, {"special_modified_bessel_k1+"}});
  t.push_back({"scaled_modified_bessel_k0", unary64<k0e_>,
               {"special_scaled_modified_bessel_k0+"}});
  t.push_back({"scaled_modified_bessel_k1", unary64<k1e_>,
               {"special_scaled_modified_bessel_k1+"}});
  t.push_back({"bessel_j0", unary64<j0_>, {"special_bessel_j0+"}});
  t.push_back({"bessel_j1", unary64<j1_>, {"special_bessel_j1+"}});
  t.push_back({"bessel_y0", unary64<y0_>, {"special_bessel_y0+"}});
  t.push_back({"bessel_y1", unary64<y1_>, {"special_bessel_y1+"}});
  t.push_back({"spherical_bessel_j0", unary64<spherical_j0_>,
               {"special_spherical_bessel_j0+"}});
  t.push_back({"airy_ai", unary64<airy_ai_>, {"special_airy_ai+"}});
  t.push_back({"lgamma", unary64<lgamma_>, {"lgamma+"}});
  t.push_back({"digamma", unary64<digamma_>, {"digamma+"}});
  t.push_back({"erfinv", unary64<erfinv_>, {"erfinv+"}});
  t.push_back({"ndtri", unary64<ndtri_>, {"special_ndtri+"}});
  t.push_back({"log_ndtr", unary64<log_ndtr_>, {"special_log_ndtr+"}});
  t.push_back({"erfcx", unary64<erfcx_>, {"special_erfcx+"}});
  t.push_back({"entr", unary64<entr_>, {"special_entr+"}});
  t.push_back({"polygamma", polygamma, {"polygamma+"}});
  t.push_back({"zeta", zeta, {"special_zeta+", "special_zeta.self_scalar+", "special_zeta.other_scalar+"}});
  t.push_back({"chebyshev_polynomial_t", orth_poly<Family::ChebT, false>,
               {"special_chebyshev_polynomial_t+", "special_chebyshev_polynomial_t.x_scalar+", "special_chebyshev_polynomial_t.n_scalar+"}});
  t.push_back({"chebyshev_polynomial_u", orth_poly<Family::ChebU, false>,
               {"special_chebyshev_polynomial_u+", "special_chebyshev_polynomial_u.x_scalar+", "special_chebyshev_polynomial_u.n_scalar+"}});
  t.push_back({"chebyshev_polynomial_v", orth_poly<Family::ChebV, false>,
               {"special_chebyshev_polynomial_v+", "special_chebyshev_polynomial_v.x_scalar+", "special_chebyshev_polynomial_v.n_scalar+"}});
  t.push_back({"chebyshev_polynomial_w", orth_poly<Family::ChebW, false>,
               {"special_chebyshev_polynomial_w+", "special_chebyshev_polynomial_w.x_scalar+", "special_chebyshev_polynomial_w.n_scalar+"}});
  t.push_back({"shifted_chebyshev_polynomial_t", orth_poly<Family::ChebT, true>,
               {"special_shifted_chebyshev_polynomial_t+", "special_shifted_chebyshev_polynomial_t.x_scalar+", "special_shifted_chebyshev_polynomial_t.n_scalar+"}});
  t.push_back({"shifted_chebyshev_polynomial_u", orth_poly<Family::ChebU, true>,
               {"special_shifted_chebyshev_polynomial_u+", "special_shifted_chebyshev_polynomial_u.x_scalar+", "special_shifted_chebyshev_polynomial_u.n_scalar+"}});
  t.push_back({"shifted_chebyshev_polynomial_v", orth_poly<Family::ChebV, true>,
               {"special_shifted_chebyshev_polynomial_v+", "special_shifted_chebyshev_polynomial_v.x_scalar+", "special_shifted_chebyshev_polynomial_v.n_scalar+"}});
  t.push_back({"shifted_chebyshev_polynomial_w", orth_poly<Family::ChebW, true>,
               {"special_shifted_chebyshev_polynomial_w+", "special_shifted_chebyshev_polynomial_w.x_scalar+", "special_shifted_chebyshev_polynomial_w.n_scalar+"}});
  t.push_back({"hermite_polynomial_h", orth_poly<Family::HermiteH, false>,
               {"special_hermite_polynomial_h+", "special_hermite_polynomial_h.x_scalar+", "special_hermite_polynomial_h.n_scalar+"}});
  t.push_back({"hermite_polynomial_he", orth_poly<Family::HermiteHe, false>,
               {"special_hermite_polynomial_he+", "special_hermite_polynomial_he.x_scalar+", "special_hermite_polynomial_he.n_scalar+"}});
  t.push_back({"laguerre_polynomial_l", orth_poly<Family::Laguerre, false>,
               {"special_laguerre_polynomial_l+", "special_laguerre_polynomial_l.x_scalar+", "special_laguerre_polynomial_l.n_scalar+"}});
  t.push_back({"legendre_polynomial_p", orth_poly<Family::Legendre, false>,
               {"special_legendre_polynomial_p+", "special_legendre_polynomial_p.x_scalar+", "special_legendre_polynomial_p.n_scalar+"}});
  t.push_back({"igamma", igamma<false>, {"igamma+"}});
  t.push_back({"igammac", igamma<true>, {"igammac+"}});
  t.push_back({"frexp", frexp, {"frexp.Tensor+"}});
  t.push_back({"nextafter", nextafter, {"nextafter+"}});
}

}  // namespace ttpu::ops
