// Reductions: sum/mean/prod/amax/amin/max/min/argmax/argmin/any/all.
// Reduced-precision floats accumulate in f32 (XLA CPU would otherwise
// accumulate a bf16 reduce in bf16).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

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
  return {c.b.convert(reduce_to_out(c, xc, dims, shlo::Reducer::Mul, 1), c.out().elem)};
}

double lowest(ElemType t) {
  if (shlo::is_float(t)) return -INFINITY;
  if (t == ElemType::Pred || shlo::is_unsigned_int(t)) return 0;
  return -std::ldexp(1.0, shlo::byte_size(t) * 8 - 1);
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
  auto dims = reduce_dims(c, 1, x.type.rank());
  Value r = c.b.reduce(x, c.b.constant_int(is_any ? 0 : 1, ElemType::Pred), dims,
                       is_any ? shlo::Reducer::Or : shlo::Reducer::And);
  return {c.b.convert(c.b.reshape(r, c.out().dims), c.out().elem)};
}

std::vector<Value> vector_norm(LowerCtx& c) {
  // linalg_vector_norm(self, ord, dim?, keepdim, dtype?); ord's value is part of the key.
  Builder& b = c.b;
  ElemType acc = accumulate_type(c.out().elem);
  Value x = b.unary("abs", b.convert(c.t(0), acc));
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
  t.push_back({"vector_norm", vector_norm, {"linalg_vector_norm", "linalg_vector_norm.out", "norm.Scalar", "norm.Scalar_out", "norm.ScalarOpt_dim",
                                            "norm.out", "norm.ScalarOpt_dim_dtype", "norm.dtype_out"},
               kScalarValuesInKey});
  t.push_back({"var", variance<false, false>, {"var.correction", "var.correction_out"}});
  t.push_back({"std", variance<true, false>, {"std.correction", "std.correction_out"}});
  t.push_back({"var_mean", variance<false, true>, {"var_mean.correction", "var_mean.correction_out"}});
  t.push_back({"std_mean", variance<true, true>, {"std_mean.correction", "std_mean.correction_out"}});
  t.push_back({"nansum", nansum, {"nansum", "nansum.out"}});
  t.push_back({"count_nonzero", count_nonzero, {"count_nonzero.dim_IntList", "count_nonzero.dim_IntList_out",
                                                "count_nonzero", "count_nonzero.out"}});
  t.push_back({"aminmax", aminmax, {"aminmax", "aminmax.out"}});
  t.push_back({"trace", trace, {"trace", "trace.out"}});
  t.push_back({"sum", sum, {"sum.dim_IntList", "sum.IntList_out", "sum"}});
  t.push_back({"mean", mean, {"mean.dim", "mean.out", "mean"}});
  t.push_back({"prod", prod, {"prod.dim_int", "prod.int_out", "prod"}});
  t.push_back({"amax", [](LowerCtx& c) { return extreme(c, true); }, {"amax", "amax.out"}});
  t.push_back({"amin", [](LowerCtx& c) { return extreme(c, false); }, {"amin", "amin.out"}});
  t.push_back({"max", [](LowerCtx& c) { return extreme_all(c, true); }, {"max", "max.unary_out"}});
  t.push_back({"min", [](LowerCtx& c) { return extreme_all(c, false); }, {"min", "min.unary_out"}});
  t.push_back({"max.dim", [](LowerCtx& c) { return extreme_dim(c, true); }, {"max.dim", "max.dim_max"}});
  t.push_back({"min.dim", [](LowerCtx& c) { return extreme_dim(c, false); }, {"min.dim", "min.dim_min"}});
  t.push_back({"argmax", [](LowerCtx& c) { return arg_extreme(c, true); }, {"argmax", "argmax.out"}});
  t.push_back({"argmin", [](LowerCtx& c) { return arg_extreme(c, false); }, {"argmin", "argmin.out"}});
  t.push_back({"any", [](LowerCtx& c) { return any_all(c, true); }, {"any", "any.dim", "any.dims", "any.out", "any.dims_out"}});
  t.push_back({"all", [](LowerCtx& c) { return any_all(c, false); }, {"all", "all.dim", "all.dims", "all.out", "all.dims_out"}});
}

}  // namespace ttpu::ops
