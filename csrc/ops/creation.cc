// Tensor creation and filling: fill_, zero_, arange, linspace, eye,
// tril/triu_indices.
// Start/end/step are runtime scalars, so a new range reuses the executable.

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;

std::vector<Value> fill(LowerCtx& c) {
  return {broadcast_convert(c.b, c.t(1), c.out())};
}

std::vector<Value> zero(LowerCtx& c) { return {c.b.constant(0, c.out().elem, c.out().dims)}; }

ElemType range_compute(ElemType out) { return shlo::is_float(out) ? ElemType::F64 : ElemType::S64; }

std::vector<Value> arange(LowerCtx& c) {
  // arange.start_out(start, end, step, out): value[i] = start + i * step
  Builder& b = c.b;
  ElemType ct = range_compute(c.out().elem);
  int64_t n = c.out().numel();
  Value i = b.iota(TensorType{ct, {n}}, 0);
  Value start = c.scalar(0, ct), step = c.scalar(2, ct);
  Value r = b.add(b.broadcast_in_dim(start, {n}, {}), b.mul(i, b.broadcast_in_dim(step, {n}, {})));
  return {b.convert(r, c.out().elem)};
}

std::vector<Value> linspace(LowerCtx& c) {
  // linspace.out(start, end, steps, out). PyTorch fills the first half from
  // start and the second half backwards from end; we do the same.
  // A complex range is the real rule on each part (the step's parts are the
  // parts' steps; i * step with a real i multiplies each part).
  Builder& b = c.b;
  ElemType out = c.out().elem;
  int64_t n = c.out().numel();
  if (n == 0) return {b.constant(0, out, {0})};
  bool cplx = shlo::is_complex(out);
  ElemType ct = cplx ? part_type(out) : range_compute(out);
  if (shlo::is_integral(out)) ct = ElemType::F64;
  auto line = [&](const Value& start, const Value& end) { return linspace_values(b, start, end, n); };
  if (cplx) {
    Value s = c.scalar(0, out), e = c.scalar(1, out);
    TensorType pt{ct, {}};
    return {b.op("complex", {line(b.op("real", {s}, pt), b.op("real", {e}, pt)),
                             line(b.op("imag", {s}, pt), b.op("imag", {e}, pt))},
                 c.out())};
  }
  // integers: the conversion truncates toward zero, as CPU's cast does (-3.3 is -3)
  return {b.convert(line(c.scalar(0, ct), c.scalar(1, ct)), out)};
}

std::vector<Value> logspace(LowerCtx& c) {
  // logspace.out(start, end, steps, base, out): base ** linspace(start, end, steps)
  Builder& b = c.b;
  int64_t n = c.out().numel();
  ElemType ct = ElemType::F64;
  if (n == 0) return {b.constant(0, c.out().elem, {0})};
  Value start = b.broadcast_in_dim(c.scalar(0, ct), {n}, {});
  Value end = b.broadcast_in_dim(c.scalar(1, ct), {n}, {});
  Value base = b.constant(c.d(3), ct, {n});
  Value e = start;
  if (n > 1) {
    Value step = b.div(b.sub(end, start), b.constant(static_cast<double>(n - 1), ct, {n}));
    Value i = b.iota(TensorType{ct, {n}}, 0);
    Value from_start = b.add(start, b.mul(i, step));
    Value from_end = b.sub(end, b.mul(b.sub(b.constant(static_cast<double>(n - 1), ct, {n}), i), step));
    Value half = b.constant(static_cast<double>(n / 2), ct, {n});
    e = b.select(b.compare(shlo::Compare::LT, i, half), from_start, from_end);
  }
  Value r = b.binary("power", base, e);
  if (shlo::is_integral(c.out().elem)) r = b.unary("floor", r);
  return {b.convert(r, c.out().elem)};
}

std::vector<Value> eye(LowerCtx& c) {
  const TensorType& out = c.out();
  TensorType it{ElemType::S64, out.dims};
  if (out.numel() == 0) return {c.b.constant(0, out.elem, out.dims)};
  Value diag = c.b.compare(shlo::Compare::EQ, c.b.iota(it, 0), c.b.iota(it, 1));
  return {c.b.convert(diag, out.elem)};
}

// tril_indices / triu_indices(row, col, offset): the (row, col) coordinates
// of the lower (upper) triangle in row-major order, as a [2, N] tensor (N
// from PyTorch's meta function). Each cell of the row x col grid that is kept
// goes to the position its prefix count gives; the others are dropped.
std::vector<Value> triangle_indices(LowerCtx& c, bool lower) {
  Builder& b = c.b;
  const TensorType& out = c.out();
  const int64_t rows = c.i(0), cols = c.i(1), offset = c.i(2), n = out.dims[1];
  if (n == 0) return {b.constant(0, out.elem, out.dims)};
  const int64_t cells = rows * cols;
  TensorType it{ElemType::S64, {cells}};
  Value cell = b.iota(it, 0);
  Value col_count = b.constant_int(cols, ElemType::S64, {cells});
  Value r = b.div(cell, col_count), col = b.binary("remainder", cell, col_count);
  Value diag = b.sub(col, r);  // column minus row
  Value bound = b.constant_int(offset, ElemType::S64, {cells});
  Value keep = b.compare(lower ? shlo::Compare::LE : shlo::Compare::GE, diag, bound);
  Value pos = b.sub(prefix_sum(b, b.convert(keep, ElemType::S64), 0), b.constant_int(1, ElemType::S64, {cells}));
  pos = b.select(keep, pos, b.constant_int(n, ElemType::S64, {cells}));  // out of range: dropped
  Value base = b.constant_int(0, ElemType::S64, {n});
  Value rr = b.scatter_flat(base, pos, r), cc = b.scatter_flat(base, pos, col);
  Value both = b.concatenate({b.reshape(rr, {1, n}), b.reshape(cc, {1, n})}, 0);
  return {b.convert(both, out.elem)};
}

std::vector<Value> tril_indices(LowerCtx& c) { return triangle_indices(c, true); }

std::vector<Value> triu_indices(LowerCtx& c) { return triangle_indices(c, false); }

}  // namespace

void append_creation(std::vector<Lowering>& t) {
  t.push_back({"fill", fill, {"fill_.Scalar", "fill_.Tensor", "fill.Scalar", "fill.Tensor"}, kNoReadSelf});
  t.push_back({"zero", zero, {"zero_", "zero"}, kNoReadSelf});
  t.push_back({"arange", arange, {"arange.start_out"}, kRangeSizeInKey});
  t.push_back({"linspace", linspace, {"linspace.out"}});
  t.push_back({"logspace", logspace, {"logspace.out"}});
  t.push_back({"eye", eye, {"eye.out", "eye.m_out"}});
  t.push_back({"tril_indices", tril_indices, {"tril_indices", "tril_indices.out"}});
  t.push_back({"triu_indices", triu_indices, {"triu_indices", "triu_indices.out"}});
}

}  // namespace ttpu::ops
