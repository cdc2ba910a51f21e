// Sorting, selection and scans: sort/topk/kthvalue/median/mode, cumulative
// sum/prod/max/min and logcumsumexp, searchsorted/bucketize, isin, histc,
// histogram and histogramdd.
// NaN sorts above everything and -0.0 equals 0.0, as on CPU.

#include <climits>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

std::vector<Value> sort(LowerCtx& c, size_t dim_arg, size_t desc_arg) {
  Value x = c.t(0);
  if (x.type.rank() == 0) return {x, c.b.constant_int(0, ElemType::S64)};
  int64_t dim = wrap_dim(c.i(dim_arg), x.type.rank());
  auto [v, i] = sort_with_indices(c.b, x, dim, c.flag(desc_arg));
  return {v, i};
}

std::vector<Value> topk(LowerCtx& c) {
  // topk(self, k, dim, largest, sorted) -> (values, indices)
  Builder& b = c.b;
  Value x = c.t(0);
  int64_t k = c.i(1);
  if (x.type.rank() == 0) return {x, b.constant_int(0, ElemType::S64)};
  int64_t dim = wrap_dim(c.i(2), x.type.rank());
  auto [v, i] = sort_with_indices(b, x, dim, c.flag(3));
  std::vector<int64_t> start(x.type.rank(), 0), limit = x.type.dims, stride(x.type.rank(), 1);
  limit[dim] = k;
  return {b.slice(v, start, limit, stride), b.slice(i, start, limit, stride)};
}

std::vector<Value> scan(LowerCtx& c, bool product) {
  // cumsum/cumprod(self, dim, dtype?)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  if (acc == ElemType::Pred) acc = ElemType::S64;
  Value x = b.convert(c.t(0), acc);
  if (x.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  if (x.type.rank() == 0) return {b.convert(x, out.elem)};
  int64_t dim = wrap_dim(c.i(1), x.type.rank());
  return {b.convert(prefix_scan(b, x, dim, product), out.elem)};
}

// Prefix scans that need more than one accumulator (cummax/cummin,
// logcumsumexp) compare every position with every earlier one along the
// scanned dim, moved last: [rest..., i, j] with j <= i.

struct Pairs {
  std::vector<int64_t> perm, inv;  // dim to last and back
  Value xt;                        // [rest..., n]
  Value xj;                        // [rest..., n(i), n(j)]: x at j
  Value mask;                      // j <= i
  Value jpos;                      // s64 iota over j
  std::vector<int64_t> grid;
};

Pairs pairs(Builder& b, const Value& x, int64_t dim) {
  Pairs p;
  int64_t rank = x.type.rank();
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) p.perm.push_back(d);
  p.perm.push_back(dim);
  p.inv.assign(rank, 0);
  for (int64_t d = 0; d < rank; ++d) p.inv[p.perm[d]] = d;
  p.xt = b.transpose(x, p.perm);
  p.grid = p.xt.type.dims;
  int64_t n = p.grid.back();
  p.grid.push_back(n);
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d + 1 < rank; ++d) mapping.push_back(d);
  mapping.push_back(rank);
  p.xj = b.broadcast_in_dim(p.xt, p.grid, mapping);
  TensorType it{ElemType::S64, p.grid};
  p.jpos = b.iota(it, rank);
  p.mask = b.compare(shlo::Compare::LE, p.jpos, b.iota(it, rank - 1));
  return p;
}

Value is_nan(Builder& b, const Value& x) {
  if (!shlo::is_float(x.type.elem)) return b.constant_int(0, ElemType::Pred, x.type.dims);
  return b.compare(shlo::Compare::NE, x, x);
}

Value extreme(Builder& b, ElemType t, bool lowest, const std::vector<int64_t>& dims) {
  if (shlo::is_float(t)) return b.constant(lowest ? -INFINITY : INFINITY, t, dims);
  if (t == ElemType::Pred) return b.constant_int(lowest ? 0 : 1, t, dims);
  int bits = shlo::byte_size(t) * 8;
  if (shlo::is_signed_int(t)) {
    int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
    return b.constant_int(lowest ? lo : hi, t, dims);
  }
  uint64_t hi = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
  return lowest ? b.constant_int(0, t, dims) : b.constant_bits(hi, t, dims);
}

// (values, indices) ops along a dim (cummax/cummin, mode): the results for an
// empty or 0-d input, which need no pair grid.
std::optional<std::vector<Value>> trivial_value_index(LowerCtx& c, const Value& x) {
  Builder& b = c.b;
  if (x.type.numel() == 0)
    return std::vector<Value>{b.constant(0, c.out(0).elem, c.out(0).dims),
                              b.constant_int(0, ElemType::S64, c.out(1).dims)};
  if (x.type.rank() == 0) return std::vector<Value>{x, b.constant_int(0, ElemType::S64)};
  return std::nullopt;
}

std::vector<Value> cummaxmin(LowerCtx& c, bool is_max) {
  // cummax/cummin(self, dim) -> (values, indices)
  Builder& b = c.b;
  Value x = c.t(0);
  if (auto r = trivial_value_index(c, x)) return *r;
  int64_t rank = x.type.rank();
  int64_t dim = wrap_dim(c.i(1), rank);
  Pairs p = pairs(b, x, dim);
  ElemType t = x.type.elem;
  Value masked = b.select(p.mask, p.xj, extreme(b, t, is_max, p.grid));
  Value v = b.reduce(masked, extreme(b, t, is_max, {}), {rank}, is_max ? shlo::Reducer::Max : shlo::Reducer::Min);
  // NaN propagates (and stays): the running value is NaN from the first NaN on.
  Value nan_seen;
  if (shlo::is_float(t)) {
    Value nanj = b.select(p.mask, is_nan(b, p.xj), b.constant_int(0, ElemType::Pred, p.grid));
    nan_seen = b.reduce(nanj, b.constant_int(0, ElemType::Pred), {rank}, shlo::Reducer::Or);
    v = b.select(nan_seen, b.constant(NAN, t, v.type.dims), v);
  }
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d < rank; ++d) mapping.push_back(d);
  Value vi = b.broadcast_in_dim(v, p.grid, mapping);
  Value eq = b.compare(shlo::Compare::EQ, p.xj, vi);
  if (shlo::is_float(t)) eq = b.binary("or", eq, b.binary("and", is_nan(b, p.xj), is_nan(b, vi)));
  Value cand = b.select(b.binary("and", p.mask, eq), p.jpos, b.constant_int(-1, ElemType::S64, p.grid));
  Value idx = b.reduce(cand, b.constant_int(-1, ElemType::S64), {rank}, shlo::Reducer::Max);
  return {b.transpose(v, p.inv), b.transpose(idx, p.inv)};
}

std::vector<Value> logcumsumexp(LowerCtx& c) {
  // _logcumsumexp(self, dim)
  Builder& b = c.b;
  const TensorType& out = c.out();
  ElemType acc = accumulate_type(out.elem);
  Value x = b.convert(c.t(0), acc);
  int64_t rank = x.type.rank();
  int64_t dim = wrap_dim(c.i(1), rank);  // CPU's IndexError first, empty and 0-d inputs included
  if (x.type.numel() == 0) return {b.constant(0, out.elem, out.dims)};
  if (x.type.rank() == 0) return {b.convert(x, out.elem)};
  Pairs p = pairs(b, x, dim);
  // Shifted by the running maximum (of the real parts, for complex input):
  // log(sum_j<=i exp(x_j - m_i)) + m_i.
  bool cplx = shlo::is_complex(acc);
  ElemType part = !cplx ? acc : part_type(acc);
  Value re = cplx ? b.op("real", {p.xj}, TensorType{part, p.grid}) : p.xj;
  Value masked = b.select(p.mask, re, b.constant(-INFINITY, part, p.grid));
  Value m = b.reduce(masked, b.constant(-INFINITY, part), {rank}, shlo::Reducer::Max);
  Value finite = b.op("is_finite", {m}, TensorType{ElemType::Pred, m.type.dims});
  Value ms = b.convert(b.select(finite, m, b.constant(0, part, m.type.dims)), acc);
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d < rank; ++d) mapping.push_back(d);
  Value e = b.unary("exponential", b.sub(cplx ? p.xj : masked, b.broadcast_in_dim(ms, p.grid, mapping)));
  if (cplx) e = b.select(p.mask, e, b.constant(0, acc, p.grid));
  Value s = b.reduce(e, b.constant(0, acc), {rank}, shlo::Reducer::Add);
  Value r = b.add(b.unary("log", s), ms);
  return {b.convert(b.transpose(r, p.inv), out.elem)};
}

// Order statistics: kthvalue, median, nanmedian. Sorted ascending (NaN last),
// the value at a per-row position is picked with a one-hot mask.

// x moved so dim is last; `pos` [rest...] s64; returns (values, indices) [rest...].
std::pair<Value, Value> pick_sorted(Builder& b, const Value& sorted, const Value& sidx, const Value& pos) {
  int64_t rank = sorted.type.rank();
  TensorType it{ElemType::S64, sorted.type.dims};
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d + 1 < rank; ++d) mapping.push_back(d);
  Value hit = b.compare(shlo::Compare::EQ, b.iota(it, rank - 1), b.broadcast_in_dim(pos, sorted.type.dims, mapping));
  ElemType t = sorted.type.elem;
  Value v = b.reduce(b.select(hit, sorted, b.constant(0, t, sorted.type.dims)), b.constant(0, t), {rank - 1},
                     t == ElemType::Pred ? shlo::Reducer::Or : shlo::Reducer::Add);
  Value i = b.reduce(b.select(hit, sidx, b.constant_int(0, ElemType::S64, sorted.type.dims)),
                     b.constant_int(0, ElemType::S64), {rank - 1}, shlo::Reducer::Add);
  return {v, i};
}

// kind: 0 kthvalue (k from arg 1), 1 median, 2 nanmedian. `all`: over every element.
std::vector<Value> order_stat(LowerCtx& c, int kind, bool all) {
  Builder& b = c.b;
  Value x = c.t(0);
  if (all) {
    x = b.reshape(x, {x.type.numel()});
  } else if (x.type.rank() == 0) {
    x = b.reshape(x, {1});
  }
  int64_t rank = x.type.rank();
  int64_t dim = all ? 0 : wrap_dim(c.i(kind == 0 ? 2 : 1), rank);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  Value xt = b.transpose(x, perm);
  int64_t n = xt.type.dims.back();
  std::vector<int64_t> rest(xt.type.dims.begin(), xt.type.dims.end() - 1);
  if (n == 0) {
    std::vector<Value> r{b.constant(NAN, c.out(0).elem, c.out(0).dims)};
    if (!all) r.push_back(b.constant_int(0, ElemType::S64, c.out(1).dims));
    return r;
  }
  auto [sorted, sidx] = sort_with_indices(b, xt, rank - 1, false);
  Value nans = b.reduce(b.convert(is_nan(b, xt), ElemType::S64), b.constant_int(0, ElemType::S64), {rank - 1},
                        shlo::Reducer::Add);
  Value pos;
  Value nn = b.constant_int(n, ElemType::S64, rest);
  Value one = b.constant_int(1, ElemType::S64, rest), zero = b.constant_int(0, ElemType::S64, rest);
  Value two = b.constant_int(2, ElemType::S64, rest);
  if (kind == 0) {
    pos = b.constant_int(c.i(1) - 1, ElemType::S64, rest);
  } else if (kind == 1) {
    Value mid = b.constant_int((n - 1) / 2, ElemType::S64, rest);
    pos = b.select(b.compare(shlo::Compare::GT, nans, zero), b.sub(nn, nans), mid);
  } else {
    Value valid = b.sub(nn, nans);
    pos = b.select(b.compare(shlo::Compare::GT, valid, zero), b.div(b.sub(valid, one), two), zero);
  }
  auto [v, i] = pick_sorted(b, sorted, sidx, pos);
  std::vector<Value> r{b.reshape(v, c.out(0).dims)};
  if (!all) r.push_back(b.reshape(i, c.out(1).dims));
  return r;
}

// searchsorted / bucketize: the insertion point is how many sequence
// elements lie before the value (< for left, <= for right).

Value count_before(Builder& b, const Value& seq_in, const Value& v_in, bool right, bool nd) {
  ElemType ct = (shlo::is_float(seq_in.type.elem) || shlo::is_float(v_in.type.elem)) ? ElemType::F64 : ElemType::S64;
  Value seq = b.convert(seq_in, ct), v = b.convert(v_in, ct);
  int64_t m = seq.type.dims.back();
  std::vector<int64_t> grid = v.type.dims;
  grid.push_back(m);
  int64_t r = v.type.rank();
  std::vector<int64_t> vmap, smap;
  for (int64_t d = 0; d < r; ++d) vmap.push_back(d);
  if (nd) {
    for (int64_t d = 0; d + 1 < r; ++d) smap.push_back(d);
    smap.push_back(r);
  } else {
    smap.push_back(r);
  }
  Value sg = b.broadcast_in_dim(seq, grid, smap), vg = b.broadcast_in_dim(v, grid, vmap);
  // NaN sorts last: a NaN value is after every number, a NaN boundary after every value.
  Value before = b.compare(right ? shlo::Compare::LE : shlo::Compare::LT, sg, vg);
  if (ct == ElemType::F64) {
    Value vnan = b.compare(shlo::Compare::NE, vg, vg), snan = b.compare(shlo::Compare::NE, sg, sg);
    Value nan_before = right ? vnan : b.binary("and", vnan, b.unary("not", snan));
    before = b.binary("or", b.binary("and", before, b.unary("not", snan)), nan_before);
  }
  return b.reduce(b.convert(before, ElemType::S64), b.constant_int(0, ElemType::S64), {r}, shlo::Reducer::Add);
}

std::vector<Value> searchsorted(LowerCtx& c, bool scalar_self) {
  // searchsorted.Tensor(sorted_sequence, self, out_int32, right, side, sorter)
  Builder& b = c.b;
  Value seq = c.t(0);
  Value v = scalar_self ? c.args.at(1).values.at(0) : c.t(1);
  bool right = c.flag(3) || (c.has(4) && c.str(4) == "right");
  if (c.out().numel() == 0) return {b.constant(0, c.out().elem, c.out().dims)};
  if (seq.type.dims.back() == 0) return {b.constant(0, c.out().elem, c.out().dims)};
  if (c.has(5)) {  // sorter: seq[..., i] = seq[..., sorter[..., i]]
    Value sorter = b.convert(c.t(5), ElemType::S64);
    int64_t r = seq.type.rank(), m = seq.type.dims.back();
    std::vector<int64_t> grid = seq.type.dims;
    grid.push_back(m);
    std::vector<int64_t> imap, jmap;
    for (int64_t d = 0; d < r; ++d) imap.push_back(d);
    for (int64_t d = 0; d + 1 < r; ++d) jmap.push_back(d);
    jmap.push_back(r);
    Value hit = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(sorter, grid, imap), b.iota(TensorType{ElemType::S64, grid}, r));
    Value sj = b.broadcast_in_dim(seq, grid, jmap);
    seq = b.reduce(b.select(hit, sj, b.constant(0, seq.type.elem, grid)), b.constant(0, seq.type.elem), {r},
                   seq.type.elem == ElemType::Pred ? shlo::Reducer::Or : shlo::Reducer::Add);
  }
  bool nd = seq.type.rank() > 1;
  if (v.type.rank() == 0) v = b.reshape(v, {1});
  return {b.reshape(b.convert(count_before(b, seq, v, right, nd), c.out().elem), c.out().dims)};
}

std::vector<Value> bucketize(LowerCtx& c, bool scalar_self) {
  // bucketize.Tensor(self, boundaries, out_int32, right)
  Builder& b = c.b;
  Value v = scalar_self ? c.args.at(0).values.at(0) : c.t(0);
  Value seq = c.t(1);
  if (c.out().numel() == 0 || seq.type.numel() == 0) return {b.constant(0, c.out().elem, c.out().dims)};
  if (v.type.rank() == 0) v = b.reshape(v, {1});
  return {b.reshape(b.convert(count_before(b, seq, v, c.flag(3), false), c.out().elem), c.out().dims)};
}

std::vector<Value> isin(LowerCtx& c, int variant) {
  // isin.Tensor_Tensor(elements, test_elements, assume_unique, invert); 1: Tensor_Scalar; 2: Scalar_Tensor
  Builder& b = c.b;
  Value e = variant == 2 ? c.args.at(0).values.at(0) : c.t(0);
  Value t = variant == 1 ? c.args.at(1).values.at(0) : c.t(1);
  bool invert = c.flag(3);
  const TensorType& out = c.out();
  if (e.type.numel() == 0) return {b.constant_int(0, ElemType::Pred, out.dims)};
  int64_t n = t.type.numel();
  if (n == 0) return {b.constant_int(invert ? 1 : 0, ElemType::Pred, out.dims)};
  ElemType ct = (shlo::is_float(e.type.elem) || shlo::is_float(t.type.elem)) ? ElemType::F64 : ElemType::S64;
  if (e.type.elem == t.type.elem) ct = e.type.elem;
  Value tv = b.convert(b.reshape(t, {n}), ct);
  Value ev = b.convert(e, ct);
  std::vector<int64_t> grid = ev.type.dims;
  grid.push_back(n);
  std::vector<int64_t> emap;
  for (int64_t d = 0; d < ev.type.rank(); ++d) emap.push_back(d);
  Value eq = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(ev, grid, emap),
                       b.broadcast_in_dim(tv, grid, {ev.type.rank()}));
  Value any = b.reduce(eq, b.constant_int(0, ElemType::Pred), {ev.type.rank()}, shlo::Reducer::Or);
  if (invert) any = b.unary("not", any);
  return {b.reshape(any, out.dims)};
}

std::vector<Value> histc(LowerCtx& c) {
  // histc(self, bins, min, max)
  Builder& b = c.b;
  const TensorType& out = c.out();
  int64_t bins = c.i(1);
  ElemType ct = out.elem == ElemType::F64 ? ElemType::F64 : ElemType::F32;
  Value x = b.convert(c.t(0), ct);
  int64_t n = x.type.numel();
  x = b.reshape(x, {n});
  Value lo = c.scalar(2, ct), hi = c.scalar(3, ct);
  if (n > 0) {  // min == max: the data's range
    Value same = b.compare(shlo::Compare::EQ, lo, hi);
    Value dmin = b.reduce(x, b.constant(INFINITY, ct), {0}, shlo::Reducer::Min);
    Value dmax = b.reduce(x, b.constant(-INFINITY, ct), {0}, shlo::Reducer::Max);
    lo = b.select(same, dmin, lo);
    hi = b.select(same, dmax, hi);
  }
  Value same = b.compare(shlo::Compare::EQ, lo, hi);
  lo = b.select(same, b.sub(lo, b.constant(1, ct)), lo);
  hi = b.select(same, b.add(hi, b.constant(1, ct)), hi);
  if (n == 0) return {b.constant(0, out.elem, out.dims)};
  Value lov = b.broadcast_in_dim(lo, {n}, {}), hiv = b.broadcast_in_dim(hi, {n}, {});
  Value pos = b.unary("floor", b.div(b.mul(b.sub(x, lov), b.constant((double)bins, ct, {n})), b.sub(hiv, lov)));
  Value posi = b.convert(b.min(pos, b.constant((double)(bins - 1), ct, {n})), ElemType::S64);
  Value inside = b.binary("and", b.compare(shlo::Compare::GE, x, lov), b.compare(shlo::Compare::LE, x, hiv));
  posi = b.select(inside, posi, b.constant_int(-1, ElemType::S64, {n}));
  TensorType grid{ElemType::S64, {n, bins}};
  Value hit = b.compare(shlo::Compare::EQ, b.broadcast_in_dim(posi, grid.dims, {0}), b.iota(grid, 1));
  Value counts = b.reduce(b.convert(hit, ct), b.constant(0, ct), {0}, shlo::Reducer::Add);
  return {b.convert(counts, out.elem)};
}

// histogram / histogramdd as CPU computes them. An input [..., D] is a set of
// points with D coordinates (histogram: every element is a point, D = 1).
// Dimension k's edges are bins[k] + 1 values of linspace(left, right) in the
// input dtype, where (left, right) is the given range, else the data's
// minimum and maximum (0 and 1 without data), widened by 0.5 each way when
// equal; a non-finite range is refused (a device-side check when it comes
// from the data). A point counts in the bin with edges[j] <= x < edges[j+1]
// (the last bin keeps its right edge) when all its coordinates lie within
// the edges; a weight replaces the count of one; density divides by the
// total and by each dimension's bin widths. Edge tensors given by the caller
// are used as they are.
std::string fmt_double(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

using shlo::fmt_dims;

const char* dtype_word(ElemType t) { return t == ElemType::F64 ? "double" : t == ElemType::F32 ? "float" : "other"; }

// CPU's argument checks (histogramdd_check_inputs and friends); `histogram`:
// the 1-D op, whose input is flattened into points and whose bins must be
// positive under its own name.
void hist_check_inputs(LowerCtx& c, bool histogram, const std::vector<int64_t>* bin_ct,
                       const std::vector<Value>* bin_edges) {
  const TensorType& x = c.t("self").type;
  if (!histogram && x.rank() < 2)
    throw std::runtime_error("torch.histogramdd: input tensor should have at least 2 dimensions");
  int64_t dims = histogram ? 1 : x.dims.back();
  size_t given = bin_ct ? bin_ct->size() : bin_edges->size();
  if (bin_ct && static_cast<int64_t>(given) != dims)
    throw std::runtime_error("histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  if (static_cast<int64_t>(given) != dims)
    throw std::runtime_error("torch.histogramdd: expected " + std::to_string(dims) +
                             " sequences of bin edges for a " + std::to_string(dims) +
                             "-dimensional histogram but got " + std::to_string(given));
  for (int64_t k = 0; bin_edges && k < dims; ++k) {
    const TensorType& e = (*bin_edges)[k].type;
    std::string kk = std::to_string(k);
    if (e.elem != x.elem)
      throw std::runtime_error(std::string("torch.histogramdd: input tensor and bins tensors should have the same "
                                           "dtype, but got input with dtype ") + dtype_word(x.elem) +
                               " and bins for dimension " + kk + " with dtype " + dtype_word(e.elem));
    if (e.rank() != 1)
      throw std::runtime_error("torch.histogramdd: bins tensor should have one dimension, but got " +
                               std::to_string(e.rank()) + " dimensions in the bins tensor for dimension " + kk);
    if (e.numel() == 0)
      throw std::runtime_error("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                               "in the bins tensor for dimension " + kk);
  }
  if (c.has("weight")) {
    const TensorType& w = c.t("weight").type;
    if (w.elem != x.elem)
      throw std::runtime_error(std::string("torch.histogramdd: if weight tensor is provided, input tensor and weight "
                                           "tensor should have the same dtype, but got input(") + dtype_word(x.elem) +
                               "), and weight(" + dtype_word(w.elem) + ")");
    bool ok = histogram ? w.numel() == x.numel()
                        : std::vector<int64_t>(x.dims.begin(), x.dims.end() - 1) == w.dims;
    if (!ok) {
      std::vector<int64_t> xd = histogram ? std::vector<int64_t>{x.numel(), 1} : x.dims;
      std::vector<int64_t> wd = histogram ? std::vector<int64_t>{w.numel()} : w.dims;
      throw std::runtime_error("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               "input tensor excluding its innermost dimension, but got input with shape " +
                               fmt_dims(xd) + " and weight with shape " + fmt_dims(wd));
    }
  }
  for (int64_t k = 0; k < dims; ++k) {
    int64_t bins = bin_ct ? (*bin_ct)[k] : (*bin_edges)[k].type.numel() - 1;
    if (bins <= 0)
      throw std::runtime_error("torch.histogram(): bins must be > 0, but got " + std::to_string(bins) +
                               " for dimension " + std::to_string(k));
  }
  if (bin_ct && c.has("range")) {
    const auto& r = c.args[c.at("range")].doubles;
    if (static_cast<int64_t>(r.size()) != 2 * dims)
      throw std::runtime_error("torch.histogramdd: for a " + std::to_string(dims) +
                               "-dimensional histogram range should have " + std::to_string(2 * dims) +
                               " elements, but got " + std::to_string(r.size()));
    for (int64_t k = 0; k < dims; ++k) {
      double lo = r[2 * k], hi = r[2 * k + 1];
      if (!std::isfinite(lo) || !std::isfinite(hi))
        throw std::runtime_error("torch.histogramdd: dimension " + std::to_string(k) + "'s range [" + fmt_double(lo) +
                                 ", " + fmt_double(hi) + "] is not finite");
      if (lo > hi)
        throw std::runtime_error("torch.histogramdd: min should not exceed max, but got min " + fmt_double(lo) +
                                 " max " + fmt_double(hi) + " for dimension " + std::to_string(k));
    }
  }
}

// The input as points [N, D]; CPU computes histograms for float and double only.
Value hist_points(LowerCtx& c, bool histogram) {
  const Value& x = c.t("self");
  if (x.type.elem != ElemType::F32 && x.type.elem != ElemType::F64)
    throw shlo::ElementTypeError("histogram of " + x.type.str());
  int64_t d = histogram ? 1 : x.type.dims.back();
  return c.b.reshape(x, {x.type.numel() / std::max<int64_t>(d, 1), d});
}

// Edges of each dimension from bin counts (see above).
std::vector<Value> hist_edges_from_counts(LowerCtx& c, const Value& pts, const std::vector<int64_t>& bins) {
  Builder& b = c.b;
  ElemType et = pts.type.elem;
  int64_t n = pts.type.dims[0], dims = pts.type.dims[1];
  std::vector<Value> out;
  bool ranged = c.has("range");
  Value bad_dim = b.constant_int(kCheckPassed, ElemType::S64);
  std::vector<Value> lefts, rights;
  for (int64_t k = 0; k < dims; ++k) {
    Value lo, hi;
    if (ranged) {
      lo = b.constant(c.args[c.at("range")].doubles[2 * k], ElemType::F64);
      hi = b.constant(c.args[c.at("range")].doubles[2 * k + 1], ElemType::F64);
    } else if (n == 0) {
      lo = b.constant(0, ElemType::F64);
      hi = b.constant(1, ElemType::F64);
    } else {
      Value col = b.reshape(b.slice(pts, {0, k}, {n, k + 1}, {1, 1}), {n});
      Value finite = b.reduce(b.op("is_finite", {col}, TensorType{ElemType::Pred, {n}}), b.constant_int(1, ElemType::Pred), {0}, Reducer::And);
      bad_dim = b.select(finite, bad_dim, b.constant_int(k, ElemType::S64));
      lo = b.convert(b.reduce(col, b.constant(INFINITY, et), {0}, Reducer::Min), ElemType::F64);
      hi = b.convert(b.reduce(col, b.constant(-INFINITY, et), {0}, Reducer::Max), ElemType::F64);
    }
    Value same = b.compare(Compare::EQ, lo, hi);
    lo = b.select(same, b.sub(lo, b.constant(0.5, ElemType::F64)), lo);
    hi = b.select(same, b.add(hi, b.constant(0.5, ElemType::F64)), hi);
    out.push_back(linspace_values(b, b.convert(lo, et), b.convert(hi, et), bins[k] + 1));
  }
  if (!ranged && n > 0)
    c.check(b.compare(Compare::EQ, bad_dim, b.constant_int(kCheckPassed, ElemType::S64)), bad_dim,
            {false, "torch.histogramdd: dimension {}'s range is not finite (the input holds inf or nan)"});
  return out;
}

Value hist_scatter(LowerCtx& c, const Value& pts, const std::vector<Value>& edges, int64_t total);

// The histogram [bins_0, ..., bins_{D-1}] of the points over the given edges.
Value hist_count(LowerCtx& c, const Value& pts, const std::vector<Value>& edges, const TensorType& out) {
  Builder& b = c.b;
  ElemType et = pts.type.elem;
  int64_t n = pts.type.dims[0], dims = pts.type.dims[1];
  int64_t total = out.numel();
  Value hist = b.constant(0, et, out.dims);
  if (n > 0 && total > 0) hist = b.reshape(hist_scatter(c, pts, edges, total), out.dims);
  if (c.flag("density")) {
    std::vector<int64_t> all;
    for (int64_t k = 0; k < hist.type.rank(); ++k) all.push_back(k);
    Value sum = b.reduce(hist, b.constant(0, et), all, Reducer::Add);
    hist = b.div(hist, b.broadcast_in_dim(sum, out.dims, {}));
    for (int64_t k = 0; k < dims; ++k) {
      const Value& e = edges[k];
      int64_t m = e.type.dims[0];
      if (m < 2) continue;
      Value width = b.sub(b.slice(e, {1}, {m}, {1}), b.slice(e, {0}, {m - 1}, {1}));
      hist = b.div(hist, b.broadcast_in_dim(width, out.dims, {k}));
    }
  }
  return hist;
}

// Weights (or ones) of the points within the edges, added into their bins: [total].
Value hist_scatter(LowerCtx& c, const Value& pts, const std::vector<Value>& edges, int64_t total) {
  Builder& b = c.b;
  ElemType et = pts.type.elem;
  int64_t n = pts.type.dims[0], dims = pts.type.dims[1];
  Value flat = b.constant_int(0, ElemType::S64, {n});
  Value inside = b.constant_int(1, ElemType::Pred, {n});
  int64_t stride = total;
  for (int64_t k = 0; k < dims; ++k) {
    const Value& e = edges[k];
    int64_t m = e.type.dims[0], bins = std::max<int64_t>(m - 1, 1);
    stride /= bins;
    Value col = b.reshape(b.slice(pts, {0, k}, {n, k + 1}, {1, 1}), {n});
    Value first = b.broadcast_in_dim(b.reshape(b.slice(e, {0}, {1}, {1}), {}), {n}, {});
    Value last = b.broadcast_in_dim(b.reshape(b.slice(e, {m - 1}, {m}, {1}), {}), {n}, {});
    inside = b.binary("and", inside, b.binary("and", b.compare(Compare::GE, col, first), b.compare(Compare::LE, col, last)));
    Value idx = b.constant_int(0, ElemType::S64, {n});
    if (m > 2) {  // the interior edges at or below x
      Value interior = b.slice(e, {1}, {m - 1}, {1});
      std::vector<int64_t> grid{n, m - 2};
      Value ge = b.compare(Compare::GE, b.broadcast_in_dim(col, grid, {0}), b.broadcast_in_dim(interior, grid, {1}));
      idx = b.reduce(b.convert(ge, ElemType::S64), b.constant_int(0, ElemType::S64), {1}, Reducer::Add);
    }
    flat = b.add(flat, b.mul(idx, b.constant_int(stride, ElemType::S64, {n})));
  }
  Value w = c.has("weight") ? b.reshape(c.t("weight"), {n}) : b.constant(1, et, {n});
  w = b.select(inside, w, b.constant(0, et, {n}));
  Reducer add = Reducer::Add;
  std::string dn = "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1";
  return b.scatter(b.constant(0, et, {total}), b.reshape(flat, {n, 1}), w, dn, &add);
}

std::vector<int64_t> hist_bins(LowerCtx& c, bool histogram) {
  return histogram ? std::vector<int64_t>{c.i("bins")} : c.ints("bins");
}

std::vector<Value> histogram_bin_ct(LowerCtx& c) {
  // histogram.bin_ct(self, bins, *, range?, weight?, density) -> (hist, bin_edges)
  Value pts = hist_points(c, true);
  std::vector<Value> edges = hist_edges_from_counts(c, pts, hist_bins(c, true));
  return {hist_count(c, pts, edges, c.out(0)), edges[0]};
}

std::vector<Value> histogram_bins_tensor(LowerCtx& c) {
  // histogram.bins_tensor(self, bins, *, weight?, density) -> (hist, bin_edges)
  Value pts = hist_points(c, true);
  std::vector<Value> edges{c.t("bins")};
  return {hist_count(c, pts, edges, c.out(0)), edges[0]};
}

std::vector<Value> histogramdd_bin_edges(LowerCtx& c) {
  // _histogramdd_bin_edges(self, bins, *, range?, weight?, density) -> Tensor[]
  return hist_edges_from_counts(c, hist_points(c, false), hist_bins(c, false));
}

std::vector<Value> histogramdd_from_bin_cts(LowerCtx& c) {
  // _histogramdd_from_bin_cts(self, bins, *, range?, weight?, density)
  Value pts = hist_points(c, false);
  return {hist_count(c, pts, hist_edges_from_counts(c, pts, hist_bins(c, false)), c.out(0))};
}

std::vector<Value> histogramdd_from_bin_tensors(LowerCtx& c) {
  // _histogramdd_from_bin_tensors(self, bins: Tensor[], *, weight?, density)
  Value pts = hist_points(c, false);
  return {hist_count(c, pts, c.list(c.at("bins")), c.out(0))};
}

// Result types (PyTorch has no meta functions for these), after CPU's checks.
std::vector<TensorType> histogram_bin_ct_infer(LowerCtx& c) {
  std::vector<int64_t> bins = hist_bins(c, true);
  hist_check_inputs(c, true, &bins, nullptr);
  ElemType et = c.t("self").type.elem;
  return {TensorType{et, {bins[0]}}, TensorType{et, {bins[0] + 1}}};
}

std::vector<TensorType> histogram_bins_tensor_infer(LowerCtx& c) {
  std::vector<Value> edges{c.t("bins")};
  hist_check_inputs(c, true, nullptr, &edges);
  ElemType et = c.t("self").type.elem;
  int64_t m = edges[0].type.dims[0];
  return {TensorType{et, {m - 1}}, TensorType{et, {m}}};
}

std::vector<TensorType> histogramdd_bin_edges_infer(LowerCtx& c) {
  std::vector<int64_t> bins = hist_bins(c, false);
  hist_check_inputs(c, false, &bins, nullptr);
  std::vector<TensorType> r;
  for (int64_t k : bins) r.push_back(TensorType{c.t("self").type.elem, {k + 1}});
  return r;
}

std::vector<TensorType> histogramdd_from_bin_cts_infer(LowerCtx& c) {
  std::vector<int64_t> bins = hist_bins(c, false);
  hist_check_inputs(c, false, &bins, nullptr);
  return {TensorType{c.t("self").type.elem, bins}};
}

std::vector<TensorType> histogramdd_from_bin_tensors_infer(LowerCtx& c) {
  const std::vector<Value>& edges = c.list(c.at("bins"));
  hist_check_inputs(c, false, nullptr, &edges);
  std::vector<int64_t> dims;
  for (const Value& e : edges) dims.push_back(e.type.dims[0] - 1);
  return {TensorType{c.t("self").type.elem, dims}};
}

std::vector<Value> mode(LowerCtx& c) {
  // mode(self, dim, keepdim) -> (values, indices): the smallest of the most
  // frequent values and the last position holding it.
  Builder& b = c.b;
  Value x = c.t(0);
  if (auto r = trivial_value_index(c, x)) return *r;
  int64_t rank = x.type.rank();
  int64_t dim = wrap_dim(c.i(1), rank);
  Pairs p = pairs(b, x, dim);  // xj: x at j over [rest..., i, j]
  std::vector<int64_t> imap;
  for (int64_t d = 0; d < rank; ++d) imap.push_back(d);
  Value xi = b.broadcast_in_dim(p.xt, p.grid, imap);
  Value counts = b.reduce(b.convert(b.compare(shlo::Compare::EQ, xi, p.xj), ElemType::S64),
                          b.constant_int(0, ElemType::S64), {rank}, shlo::Reducer::Add);  // [rest..., i]
  std::vector<int64_t> rest(p.xt.type.dims.begin(), p.xt.type.dims.end() - 1), rmap;
  for (int64_t d = 0; d + 1 < rank; ++d) rmap.push_back(d);
  Value maxc = b.reduce(counts, b.constant_int(0, ElemType::S64), {rank - 1}, shlo::Reducer::Max);
  Value cand = b.compare(shlo::Compare::EQ, counts, b.broadcast_in_dim(maxc, counts.type.dims, rmap));
  ElemType t = x.type.elem;
  Value v = b.reduce(b.select(cand, p.xt, extreme(b, t, false, p.xt.type.dims)), extreme(b, t, false, {}), {rank - 1},
                     shlo::Reducer::Min);
  Value at = b.compare(shlo::Compare::EQ, p.xt, b.broadcast_in_dim(v, p.xt.type.dims, rmap));
  TensorType it{ElemType::S64, p.xt.type.dims};
  Value idx = b.reduce(b.select(at, b.iota(it, rank - 1), b.constant_int(-1, ElemType::S64, it.dims)),
                       b.constant_int(-1, ElemType::S64), {rank - 1}, shlo::Reducer::Max);
  return {b.reshape(v, c.out(0).dims), b.reshape(idx, c.out(1).dims)};
}

}  // namespace

// Sorts `x` along `dim` with its positions; returns (values, indices).
std::pair<Value, Value> sort_with_indices(Builder& b, const Value& x, int64_t dim, bool descending) {
  TensorType it{ElemType::S64, x.type.dims};
  Value idx = b.iota(it, dim);
  TensorType s{x.type.elem, {}}, si{ElemType::S64, {}};
  Value a{b.fresh(), s}, c{b.fresh(), s};
  std::string ai = b.fresh(), ci = b.fresh();
  std::string saved = b.swap_body("");
  Value before = b.compare(descending ? shlo::Compare::GT : shlo::Compare::LT, a, c);
  if (shlo::is_float(x.type.elem)) {
    // PyTorch orders NaN above everything, whatever its sign bit, and -0.0
    // equal to 0.0 (a stable sort keeps their order); XLA's TOTALORDER does
    // neither. So: a before c if a < c (a > c), or c (a) is NaN and a (c) not.
    Value na = b.compare(shlo::Compare::NE, a, a), nc = b.compare(shlo::Compare::NE, c, c);
    Value nan_rule = descending ? b.binary("and", na, b.unary("not", nc)) : b.binary("and", b.unary("not", na), nc);
    before = b.binary("or", before, nan_rule);
  }
  std::string body = b.swap_body(saved);
  std::string region = "{\n    ^bb0(" + a.name + ": " + s.str() + ", " + c.name + ": " + s.str() + ", " + ai + ": " +
                       si.str() + ", " + ci + ": " + si.str() + "):\n" + body + "      \"stablehlo.return\"(" +
                       before.name + ") : (tensor<i1>) -> ()\n  }";
  auto res = b.op_multi("sort", {x, idx}, {x.type, it},
                        "dimension = " + std::to_string(dim) + " : i64, is_stable = true", region);
  return {res[0], res[1]};
}

void append_sort_scan(std::vector<Lowering>& t) {
  t.push_back({"sort", [](LowerCtx& c) { return sort(c, 1, 2); }, {"sort+"}});
  t.push_back({"sort_stable", [](LowerCtx& c) { return sort(c, 2, 3); }, {"sort.stable+"}});
  t.push_back({"topk", topk, {"topk+"}});
  t.push_back({"cumsum", [](LowerCtx& c) { return scan(c, false); }, {"cumsum+"}});
  t.push_back({"cumprod", [](LowerCtx& c) { return scan(c, true); }, {"cumprod+"}});
  t.push_back({"cummax", [](LowerCtx& c) { return cummaxmin(c, true); }, {"cummax+"}});
  t.push_back({"cummin", [](LowerCtx& c) { return cummaxmin(c, false); }, {"cummin+"}});
  t.push_back({"logcumsumexp", logcumsumexp, {"_logcumsumexp+"}, 0,
               [](LowerCtx& c) { return std::vector<TensorType>{c.t(0).type}; }});
  t.push_back({"kthvalue", [](LowerCtx& c) { return order_stat(c, 0, false); }, {"kthvalue+"}});
  t.push_back({"median", [](LowerCtx& c) { return order_stat(c, 1, true); }, {"median+"}});
  t.push_back({"median_dim", [](LowerCtx& c) { return order_stat(c, 1, false); }, {"median.dim+"}});
  t.push_back({"nanmedian", [](LowerCtx& c) { return order_stat(c, 2, true); }, {"nanmedian+"}});
  t.push_back({"nanmedian_dim", [](LowerCtx& c) { return order_stat(c, 2, false); },
               {"nanmedian.dim+"}});
  t.push_back({"searchsorted", [](LowerCtx& c) { return searchsorted(c, false); },
               {"searchsorted.Tensor+"}});
  t.push_back({"searchsorted_scalar", [](LowerCtx& c) { return searchsorted(c, true); },
               {"searchsorted.Scalar+"}});
  t.push_back({"bucketize", [](LowerCtx& c) { return bucketize(c, false); }, {"bucketize.Tensor+"}});
  t.push_back({"bucketize_scalar", [](LowerCtx& c) { return bucketize(c, true); }, {"bucketize.Scalar+"}});
  t.push_back({"isin", [](LowerCtx& c) { return isin(c, 0); }, {"isin.Tensor_Tensor+"}});
  t.push_back({"isin_ts", [](LowerCtx& c) { return isin(c, 1); }, {"isin.Tensor_Scalar+"}});
  t.push_back({"isin_st", [](LowerCtx& c) { return isin(c, 2); }, {"isin.Scalar_Tensor+"}});
  t.push_back({"histc", histc, {"histc+"}});
  t.push_back({"histogram", histogram_bin_ct, {"histogram.bin_ct+"}, 0, histogram_bin_ct_infer});
  t.push_back({"histogram", histogram_bins_tensor, {"histogram.bins_tensor+"}, 0, histogram_bins_tensor_infer});
  t.push_back({"histogramdd_bin_edges", histogramdd_bin_edges, {"_histogramdd_bin_edges+"}, 0,
               histogramdd_bin_edges_infer});
  t.push_back({"histogramdd", histogramdd_from_bin_cts, {"_histogramdd_from_bin_cts+"}, 0,
               histogramdd_from_bin_cts_infer});
  t.push_back({"histogramdd", histogramdd_from_bin_tensors, {"_histogramdd_from_bin_tensors+"}, 0,
               histogramdd_from_bin_tensors_infer});
  t.push_back({"mode", mode, {"mode+"}});
}

}  // namespace ttpu::ops
