// Reductions: sum/mean/prod/amax/amin/max/min/argmax/argmin/any/all, norms
// and moments (vector_norm, var/std), nansum, count_nonzero, aminmax, trace
// and segment_reduce. Reduced-precision floats accumulate in f32 (XLA CPU
// would otherwise accumulate a bf16 reduce in bf16).

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise.h"
#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

// segment_reduce along `axis`: segments given by lengths [lead..., S] or
// offsets [lead..., S+1]; membership mask [lead..., S, n].

struct Segments {
  int64_t a, s, n;
  Value member;  // pred [lead..., S, n]
  Value count;   // s64 [lead..., S]
  std::vector<int64_t> grid;  // lead + [S, n] + rest
};

Segments segments(Builder& b, const Value& data, const Value* lengths, const Value* offsets, int64_t axis) {
  Segments g;
  int64_t rank = data.type.rank();
  g.a = wrap_dim(axis, rank);
  g.n = data.type.dims[g.a];
  Value starts, ends;
  if (lengths) {
    Value l = b.convert(*lengths, ElemType::S64);
    g.s = l.type.dims.back();
    int64_t lr = l.type.rank();
    std::vector<int64_t> sq = l.type.dims;
    sq.push_back(g.s);
    std::vector<int64_t> map_t;
    for (int64_t d = 0; d + 1 < lr; ++d) map_t.push_back(d);
    map_t.push_back(lr);
    TensorType it{ElemType::S64, sq};
    Value le = b.compare(shlo::Compare::LE, b.iota(it, lr), b.iota(it, lr - 1));  // t <= s
    Value lt = b.select(le, b.broadcast_in_dim(l, sq, map_t), b.constant_int(0, ElemType::S64, sq));
    ends = b.reduce(lt, b.constant_int(0, ElemType::S64), {lr}, Reducer::Add);
    starts = b.sub(ends, l);
  } else {
    Value o = b.convert(*offsets, ElemType::S64);
    int64_t orank = o.type.rank();
    g.s = o.type.dims.back() - 1;
    std::vector<int64_t> st(orank, 0), lim = o.type.dims, str(orank, 1);
    lim.back() = g.s;
    starts = b.slice(o, st, lim, str);
    st.back() = 1;
    lim.back() = g.s + 1;
    ends = b.slice(o, st, lim, str);
  }
  std::vector<int64_t> mdims = starts.type.dims;
  mdims.push_back(g.n);
  std::vector<int64_t> smap;
  for (int64_t d = 0; d < starts.type.rank(); ++d) smap.push_back(d);
  Value j = b.iota(TensorType{ElemType::S64, mdims}, starts.type.rank());
  g.member = b.binary("and", b.compare(shlo::Compare::LE, b.broadcast_in_dim(starts, mdims, smap), j),
                      b.compare(shlo::Compare::LT, j, b.broadcast_in_dim(ends, mdims, smap)));
  g.count = b.reduce(b.convert(g.member, ElemType::S64), b.constant_int(0, ElemType::S64), {starts.type.rank()},
                     Reducer::Add);
  g.grid = std::vector<int64_t>(data.type.dims.begin(), data.type.dims.begin() + g.a);
  g.grid.push_back(g.s);
  g.grid.push_back(g.n);
  for (int64_t d = g.a + 1; d < rank; ++d) g.grid.push_back(data.type.dims[d]);
  return g;
}

// Broadcasts into the segment grid: data-like [lead, n, rest], out-like [lead, S, rest], mask [lead, S, n].
Value from_data(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d < g.a ? d : d + 1);
  return b.broadcast_in_dim(v, g.grid, m);
}

Value from_out(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d <= g.a ? d : d + 1);
  return b.broadcast_in_dim(v, g.grid, m);
}

Value from_mask(Builder& b, const Value& v, const Segments& g) {
  std::vector<int64_t> m;
  for (int64_t d = 0; d < v.type.rank(); ++d) m.push_back(d);
  return b.broadcast_in_dim(v, g.grid, m);
}

std::vector<Value> segment_reduce(LowerCtx& c) {
  // segment_reduce(data, reduce, lengths?, indices?, offsets?, axis, unsafe, initial?)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value data = b.convert(c.t(0), acc);
  const std::string& red = c.str(1);
  Value lengths, offsets;
  if (c.has(2)) lengths = c.t(2);
  else offsets = c.t(4);
  if (out.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Segments g = segments(b, data, c.has(2) ? &lengths : nullptr, c.has(2) ? nullptr : &offsets, c.i(5));
  Value mb = from_mask(b, g.member, g), db = from_data(b, data, g);
  bool has_init = c.has(7);
  Reducer r = red == "max" ? Reducer::Max : red == "min" ? Reducer::Min : red == "prod" ? Reducer::Mul : Reducer::Add;
  double ident = red == "max" ? -INFINITY : red == "min" ? INFINITY : red == "prod" ? 1.0 : 0.0;
  Value v = b.reduce(b.select(mb, db, b.constant(ident, acc, g.grid)), b.constant(ident, acc), {g.a + 1}, r);
  std::vector<int64_t> od = v.type.dims;
  if (has_init) {
    Value init = b.broadcast_in_dim(c.scalar(7, acc), od, {});
    v = red == "max" ? b.max(v, init) : red == "min" ? b.min(v, init) : red == "prod" ? b.mul(v, init) : b.add(v, init);
  }
  std::vector<int64_t> cmap;
  for (int64_t d = 0; d <= g.a; ++d) cmap.push_back(d);
  Value cnt = b.broadcast_in_dim(b.convert(g.count, acc), od, cmap);
  Value empty = b.compare(shlo::Compare::EQ, cnt, b.constant(0, acc, od));
  if (red == "mean") {
    v = b.div(v, b.max(cnt, b.constant(1, acc, od)));
    if (!has_init) v = b.select(empty, b.constant(NAN, acc, od), v);
  }
  return {b.convert(v, out.elem)};
}

std::vector<Value> segment_reduce_backward(LowerCtx& c) {
  // _segment_reduce_backward(grad, output, data, reduce, lengths?, offsets?, axis, initial?)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value grad = b.convert(c.t(0), acc), res = b.convert(c.t(1), acc), data = b.convert(c.t(2), acc);
  const std::string& red = c.str(3);
  Value lengths, offsets;
  if (c.has(4)) lengths = c.t(4);
  else offsets = c.t(5);
  if (out.numel() == 0 || grad.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  Segments g = segments(b, data, c.has(4) ? &lengths : nullptr, c.has(4) ? nullptr : &offsets, c.i(6));
  Value mb = from_mask(b, g.member, g), db = from_data(b, data, g), gb = from_out(b, grad, g);
  Value zero = b.constant(0, acc, g.grid);
  std::vector<int64_t> od = grad.type.dims, cmap;
  for (int64_t d = 0; d <= g.a; ++d) cmap.push_back(d);
  Value cnt = b.broadcast_in_dim(b.convert(g.count, acc), od, cmap);
  Value contrib;
  if (red == "sum") {
    contrib = b.select(mb, gb, zero);
  } else if (red == "mean") {
    contrib = b.select(mb, from_out(b, b.div(grad, b.max(cnt, b.constant(1, acc, od))), g), zero);
  } else if (red == "max" || red == "min") {
    Value ob = from_out(b, res, g);
    Value eq = b.compare(shlo::Compare::EQ, db, ob);
    eq = b.binary("or", eq, b.binary("and", b.compare(shlo::Compare::NE, db, db), b.compare(shlo::Compare::NE, ob, ob)));
    eq = b.binary("and", eq, mb);
    Value ties = b.reduce(b.convert(eq, acc), b.constant(0, acc), {g.a + 1}, Reducer::Add);
    Value share = b.div(grad, b.max(ties, b.constant(1, acc, od)));
    contrib = b.select(eq, from_out(b, share, g), zero);
  } else {  // prod: product of the other members (times initial)
    Value isz = b.compare(shlo::Compare::EQ, db, zero);
    Value nzp = b.reduce(b.select(b.binary("and", mb, b.unary("not", isz)), db, b.constant(1, acc, g.grid)),
                         b.constant(1, acc), {g.a + 1}, Reducer::Mul);
    if (c.has(7)) nzp = b.mul(nzp, b.broadcast_in_dim(c.scalar(7, acc), od, {}));
    Value zc = b.reduce(b.convert(b.binary("and", mb, isz), acc), b.constant(0, acc), {g.a + 1}, Reducer::Add);
    Value ob = from_out(b, res, g);
    Value safe = b.select(isz, b.constant(1, acc, g.grid), db);
    Value others = b.select(isz,
                            b.select(b.compare(shlo::Compare::EQ, from_out(b, zc, g), b.constant(1, acc, g.grid)),
                                     from_out(b, nzp, g), zero),
                            b.div(ob, safe));
    contrib = b.select(mb, b.mul(gb, others), zero);
  }
  Value r = b.reduce(contrib, b.constant(0, acc), {g.a}, Reducer::Add);
  return {b.convert(r, out.elem)};
}

// Reduce `x` over `dims` and reshape to the output (keepdim handled by the
// output type from the meta function).
Value reduce_to_out(LowerCtx& c, const Value& x, const std::vector<int64_t>& dims, shlo::Reducer r,
                    double init_value) {
  Builder& b = c.b;
  Value init = b.constant(init_value, x.type.elem);
  Value red = b.reduce(x, init, dims, r);
  return b.reshape(red, c.out().dims);
}

std::vector<int64_t> reduce_dims(LowerCtx& c, size_t dim_arg, int rank) {
  if (!c.has(dim_arg)) return wrap_dims({}, rank);
  const Arg& a = c.args[dim_arg];
  if (a.kind == Arg::Int) return wrap_dims({a.i}, rank);
  return wrap_dims(a.ints, rank);
}

std::vector<Value> sum(LowerCtx& c) {
  Value x = c.t(0);
  ElemType acc = accumulate_type(c.out().elem);
  // A bool sum (dtype=torch.bool or out= bool) reads each element as != 0
  // first, as CPU casts to bool: 0.3 is true, not truncated to 0.
  if (acc == ElemType::Pred) x = c.b.convert(x, ElemType::Pred), acc = ElemType::S64;
  Value xc = c.b.convert(x, acc);
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = c.b.reshape(sum_dims(c.b, xc, dims), c.out().dims);
  return {c.b.convert(r, c.out().elem)};
}

std::vector<Value> mean(LowerCtx& c) {
  Value x = c.t(0);
  ElemType acc = accumulate_type(c.out().elem);
  Value xc = c.b.convert(x, acc);
  auto dims = reduce_dims(c, 1, x.type.rank());
  int64_t count = 1;
  for (auto d : dims) count *= x.type.dims[d];
  Value r = reduce_to_out(c, xc, dims, shlo::Reducer::Add, 0);
  r = c.b.div(r, c.b.constant(static_cast<double>(count), acc, r.type.dims));
  return {c.b.convert(r, c.out().elem)};
}

std::vector<Value> prod(LowerCtx& c) {
  Value x = c.t(0);
  ElemType acc = accumulate_type(c.out().elem);
  if (acc == ElemType::Pred) acc = ElemType::S64;
  Value xc = c.b.convert(x, acc);
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = reduce_to_out(c, xc, dims, shlo::Reducer::Mul, 1);
  // CPU's complex product starts its accumulator at 1 + 0i and multiplies
  // naively, so a lone infinite factor's other part becomes NaN (prod of a
  // 0-d -inf + 0i is -inf + nan i). Matched where one factor is all there
  // is; for longer products the lanes CPU's vectorised loop starts at 1 are
  // its own (finite values are exact either way).
  int64_t factors = 1;
  for (int64_t d : dims) factors *= x.type.dims[d];
  if (shlo::is_complex(r.type.elem) && factors == 1)
    r = ew::cmul_naive(c.b, c.b.constant(1.0, r.type.elem, r.type.dims), r);
  return {c.b.convert(r, c.out().elem)};
}

Value extreme_init(Builder& b, ElemType t, bool is_max) {
  if (shlo::is_float(t)) return b.constant(is_max ? -INFINITY : INFINITY, t);
  if (t == ElemType::Pred) return b.constant_int(is_max ? 0 : 1, t);
  int bits = shlo::byte_size(t) * 8;
  if (shlo::is_unsigned_int(t)) {
    uint64_t hi = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return is_max ? b.constant_int(0, t) : b.constant_bits(hi, t);
  }
  int64_t lo = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  int64_t hi = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return b.constant_int(is_max ? lo : hi, t);
}

std::vector<Value> extreme(LowerCtx& c, bool is_max) {
  Value x = c.t(0);
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = c.b.reduce(x, extreme_init(c.b, x.type.elem, is_max), dims,
                       is_max ? shlo::Reducer::Max : shlo::Reducer::Min);
  return {c.b.reshape(r, c.out().dims)};
}

std::vector<Value> extreme_all(LowerCtx& c, bool is_max) {
  Value x = c.t(0);
  auto dims = wrap_dims({}, x.type.rank());
  Value r = c.b.reduce(x, extreme_init(c.b, x.type.elem, is_max), dims,
                       is_max ? shlo::Reducer::Max : shlo::Reducer::Min);
  return {c.b.reshape(r, c.out().dims)};
}

// max.dim / min.dim: (values, indices)
std::vector<Value> extreme_dim(LowerCtx& c, bool is_max) {
  Value x = c.t(0);
  int64_t rank = x.type.rank();
  if (rank == 0) return {x, c.b.constant_int(0, ElemType::S64)};
  int64_t dim = wrap_dim(c.i(1), rank);
  auto [v, i] = c.b.reduce_arg(x, dim, is_max, ElemType::S64);
  return {c.b.reshape(v, c.out(0).dims), c.b.reshape(i, c.out(1).dims)};
}

std::vector<Value> arg_extreme(LowerCtx& c, bool is_max) {
  Value x = c.t(0);
  if (x.type.rank() == 0) return {c.b.constant_int(0, ElemType::S64)};
  int64_t dim = 0;
  if (c.has(1)) {
    dim = wrap_dim(c.i(1), x.type.rank());
  } else {
    x = c.b.reshape(x, {x.type.numel()});
  }
  auto vi = c.b.reduce_arg(x, dim, is_max, ElemType::S64);
  return {c.b.reshape(vi.second, c.out().dims)};
}

std::vector<Value> any_all(LowerCtx& c, bool is_any) {
  Value x = c.b.convert(c.t(0), ElemType::Pred);
  // all/any(dim=[]) reduce nothing on CPU (each element as a bool), unlike
  // sum(dim=[]), which reduces every dim.
  if (c.has(1) && c.args[1].kind == Arg::IntList && c.args[1].ints.empty())
    return {c.b.convert(c.b.reshape(x, c.out().dims), c.out().elem)};
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = c.b.reduce(x, c.b.constant_int(is_any ? 0 : 1, ElemType::Pred), dims,
                       is_any ? shlo::Reducer::Or : shlo::Reducer::And);
  return {c.b.convert(c.b.reshape(r, c.out().dims), c.out().elem)};
}

// hash_tensor(self, dim=[], keepdim, mode=0): the xor of every element's
// 64-bit pattern, after widening floats to f64 and integers (bool too) to
// int64 as CPU does; complex has no CPU kernel (the type check refuses it).
std::vector<Value> hash_tensor(LowerCtx& c) {
  Builder& b = c.b;
  Value x = c.t(0);
  if (shlo::is_complex(x.type.elem))
    throw shlo::ElementTypeError(std::string("hash_tensor does not take ") + shlo::mlir_name(x.type.elem));
  if (c.i("mode") != 0) throw std::invalid_argument("hash_tensor: only mode=0 (xor of the bits) is supported");
  ElemType wide = shlo::is_float(x.type.elem) ? ElemType::F64
                  : shlo::is_unsigned_int(x.type.elem) ? ElemType::U64 : ElemType::S64;
  Value bits = b.bitcast(b.convert(x, wide), TensorType{ElemType::U64, x.type.dims});
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = b.reduce(bits, b.constant_bits(0, ElemType::U64, {}), dims, shlo::Reducer::Xor);
  return {b.reshape(r, c.out().dims)};
}

std::vector<Value> vector_norm(LowerCtx& c) {
  // linalg_vector_norm(self, ord, dim?, keepdim, dtype?); ord's value is part of the key.
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value in = c.t(0);
  if (shlo::is_complex(in.type.elem)) {  // |z| before widening (converting to the real type keeps Re z)
    ew::Parts p = ew::parts(b, in);
    in = ew::cabs_c99(b, p.re, p.im);  // hypot: NaN for a NaN part (XLA's complex abs drops it)
  }
  Value x = b.unary("abs", b.convert(in, acc));
  auto dims = reduce_dims(c, 2, x.type.rank());
  double ord = c.has(1) ? c.args[1].scalar_value : 2.0;  // norm(p=None) is the 2-norm
  Value r;
  if (std::isinf(ord)) {
    r = b.reduce(x, b.constant(ord > 0 ? 0.0 : INFINITY, acc), dims, ord > 0 ? shlo::Reducer::Max : shlo::Reducer::Min);
  } else if (ord == 0) {
    Value nz = b.convert(b.compare(shlo::Compare::NE, x, b.constant(0, acc, x.type.dims)), acc);
    r = b.reduce(nz, b.constant(0, acc), dims, shlo::Reducer::Add);
  } else if (ord == 1) {
    r = b.reduce(x, b.constant(0, acc), dims, shlo::Reducer::Add);
  } else if (ord == 2) {
    r = b.unary("sqrt", b.reduce(b.mul(x, x), b.constant(0, acc), dims, shlo::Reducer::Add));
  } else {
    Value p = b.constant(ord, acc, x.type.dims);
    Value s = b.reduce(b.binary("power", x, p), b.constant(0, acc), dims, shlo::Reducer::Add);
    r = b.binary("power", s, b.constant(1.0 / ord, acc, s.type.dims));
  }
  return {b.convert(b.reshape(r, c.out().dims), c.out().elem)};
}

// var/std(self, dim?, *, correction?, keepdim) and var_mean/std_mean:
// sum(|x - mean|^2) / max(N - correction, 0), correction a runtime Scalar.
// Complex inputs: the mean is complex, the variance real (|d|^2 = re^2 + im^2;
// converting x to the real result type first would drop the imaginary part).
template <bool Std, bool WithMean>
std::vector<Value> variance(LowerCtx& c) {
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out(0).elem);
  bool cplx = shlo::is_complex(c.t(0).type.elem);
  ElemType xt = cplx ? c.t(0).type.elem : acc;
  Value x = b.convert(c.t(0), xt);
  auto dims = reduce_dims(c, 1, x.type.rank());
  int64_t n = 1;
  for (auto d : dims) n *= x.type.dims[d];
  Value s = b.reduce(x, b.constant(0, xt), dims, shlo::Reducer::Add);
  Value m = b.div(s, b.constant(static_cast<double>(n), xt, s.type.dims));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < x.type.rank(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(i);
  Value d = b.sub(x, b.broadcast_in_dim(m, x.type.dims, kept));
  Value sq;
  if (cplx) {
    TensorType pt{acc, d.type.dims};
    Value re = b.op("real", {d}, pt), im = b.op("imag", {d}, pt);
    sq = b.add(b.mul(re, re), b.mul(im, im));
  } else {
    sq = b.mul(d, d);
  }
  Value ss = b.reduce(sq, b.constant(0, acc), dims, shlo::Reducer::Add);
  Value corr = c.has(2) ? c.scalar_like(2, ss) : b.constant(1, acc, ss.type.dims);
  Value den = b.max(b.sub(b.constant(static_cast<double>(n), acc, ss.type.dims), corr), b.constant(0, acc, ss.type.dims));
  Value v = b.div(ss, den);
  if (Std) v = b.unary("sqrt", v);
  std::vector<Value> r{b.convert(b.reshape(v, c.out(0).dims), c.out(0).elem)};
  if (WithMean) r.push_back(b.convert(b.reshape(m, c.out(1).dims), c.out(1).elem));
  return r;
}

std::vector<Value> nansum(LowerCtx& c) {
  // nansum(self, dim?, keepdim, dtype?): NaNs count as zero
  ElemType acc = accumulate_type(c.out().elem);
  Value x = c.b.convert(c.t(0), acc);
  if (shlo::is_float(acc))
    x = c.b.select(c.b.compare(shlo::Compare::NE, x, x), c.b.constant(0, acc, x.type.dims), x);
  auto dims = reduce_dims(c, 1, x.type.rank());
  return {c.b.convert(reduce_to_out(c, x, dims, shlo::Reducer::Add, 0), c.out().elem)};
}

std::vector<Value> count_nonzero(LowerCtx& c) {
  Value x = c.t(0);
  Value nz = c.b.convert(c.b.compare(shlo::Compare::NE, x, c.b.constant(0, x.type.elem, x.type.dims)), ElemType::S64);
  auto dims = reduce_dims(c, 1, x.type.rank());
  return {reduce_to_out(c, nz, dims, shlo::Reducer::Add, 0)};
}

std::vector<Value> aminmax(LowerCtx& c) {
  // aminmax(self, *, dim?, keepdim) -> (min, max)
  Value x = c.t(0);
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value lo = c.b.reduce(x, extreme_init(c.b, x.type.elem, false), dims, shlo::Reducer::Min);
  Value hi = c.b.reduce(x, extreme_init(c.b, x.type.elem, true), dims, shlo::Reducer::Max);
  return {c.b.reshape(lo, c.out(0).dims), c.b.reshape(hi, c.out(1).dims)};
}

std::vector<Value> trace(LowerCtx& c) {
  // sum of the main diagonal of a matrix
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  if (acc == ElemType::Pred) acc = ElemType::S64;
  Value x = b.convert(c.t(0), acc);
  TensorType it{ElemType::S64, x.type.dims};
  Value diag = b.compare(shlo::Compare::EQ, b.iota(it, 0), b.iota(it, 1));
  Value masked = b.select(diag, x, b.constant(0, acc, x.type.dims));
  return {b.convert(reduce_to_out(c, masked, {0, 1}, shlo::Reducer::Add, 0), c.out().elem)};
}

}  // namespace

void append_reductions(std::vector<Lowering>& t) {
  t.push_back({"segment_reduce", segment_reduce, {"segment_reduce+"}});
  t.push_back({"segment_reduce_backward", segment_reduce_backward,
               {"_segment_reduce_backward+"}});
  t.push_back({"vector_norm", vector_norm, {"linalg_vector_norm+", "norm.Scalar+", "norm.ScalarOpt_dim+", "norm.ScalarOpt_dim_dtype+"},
               kScalarValuesInKey});
  t.push_back({"var", variance<false, false>, {"var.correction+"}});
  t.push_back({"std", variance<true, false>, {"std.correction+"}});
  t.push_back({"var_mean", variance<false, true>, {"var_mean.correction+"}});
  t.push_back({"std_mean", variance<true, true>, {"std_mean.correction+"}});
  t.push_back({"nansum", nansum, {"nansum+"}});
  t.push_back({"count_nonzero", count_nonzero, {"count_nonzero.dim_IntList+", "count_nonzero+"}});
  t.push_back({"aminmax", aminmax, {"aminmax+"}});
  t.push_back({"trace", trace, {"trace+"}});
  t.push_back({"sum", sum, {"sum.dim_IntList+", "sum"}});
  t.push_back({"mean", mean, {"mean.dim+", "mean"}});
  t.push_back({"prod", prod, {"prod.dim_int+", "prod"}});
  t.push_back({"amax", [](LowerCtx& c) { return extreme(c, true); }, {"amax+"}});
  t.push_back({"amin", [](LowerCtx& c) { return extreme(c, false); }, {"amin+"}});
  t.push_back({"max", [](LowerCtx& c) { return extreme_all(c, true); }, {"max+"}});
  t.push_back({"min", [](LowerCtx& c) { return extreme_all(c, false); }, {"min+"}});
  t.push_back({"max.dim", [](LowerCtx& c) { return extreme_dim(c, true); }, {"max.dim+"}});
  t.push_back({"min.dim", [](LowerCtx& c) { return extreme_dim(c, false); }, {"min.dim+"}});
  t.push_back({"argmax", [](LowerCtx& c) { return arg_extreme(c, true); }, {"argmax+"}});
  t.push_back({"argmin", [](LowerCtx& c) { return arg_extreme(c, false); }, {"argmin+"}});
  t.push_back({"any", [](LowerCtx& c) { return any_all(c, true); }, {"any", "any.dim+", "any.dims+"}});
  t.push_back({"all", [](LowerCtx& c) { return any_all(c, false); }, {"all", "all.dim+", "all.dims+"}});
  t.push_back({"hash_tensor", hash_tensor, {"hash_tensor+"}});
}

}  // namespace ttpu::ops
