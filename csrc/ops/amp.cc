// Gradient scaling for mixed precision (torch.amp.GradScaler("tpu")): the two
// ops GradScaler calls, as device computations, so unscaling and the scale
// update never read a value back to the host. Semantics are CPU's kernels'
// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp), checked against them
// in tests/test_amp.py.

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Compare;
using shlo::Reducer;

// _amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale)
// Every gradient is multiplied by inv_scale (in float32 for half types, as
// CPU's opmath); found_inf becomes 1 if any element of any gradient is inf or
// NaN, and keeps its value otherwise (it accumulates across calls).
std::vector<Value> unscale(LowerCtx& c) {
  Builder& b = c.b;
  const std::vector<Value>& grads = c.list(0);
  Value found = b.reshape(c.t(1), {});
  Value inv = b.reshape(c.t(2), {});
  std::vector<Value> out;
  Value any_bad = b.constant_int(0, ElemType::Pred);
  for (const Value& g : grads) {
    ElemType compute = accumulate_type(g.type.elem);
    Value x = b.convert(g, compute);
    out.push_back(b.convert(b.mul(x, b.broadcast_to(b.convert(inv, compute), g.type.dims)), g.type.elem));
    if (g.type.numel() == 0) continue;
    Value finite = b.op("is_finite", {g}, TensorType{ElemType::Pred, g.type.dims});
    std::vector<int64_t> all;
    for (int d = 0; d < g.type.rank(); ++d) all.push_back(d);
    Value all_finite = b.reduce(finite, b.constant_int(1, ElemType::Pred), all, Reducer::And);
    any_bad = b.binary("or", any_bad, b.unary("not", all_finite));
  }
  Value flagged = b.select(any_bad, b.constant(1.0, found.type.elem), found);
  out.push_back(b.reshape(flagged, c.t(1).type.dims));
  return out;
}

// _amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf,
//                    float scale_growth_factor, float scale_backoff_factor, int growth_interval)
// found_inf != 0: scale *= backoff, tracker = 0. Otherwise tracker + 1; when it
// reaches growth_interval the scale grows (only if the grown value is finite)
// and the tracker restarts at 0. Products are taken in double and stored as
// float, as CPU does (float * double).
std::vector<Value> update_scale(LowerCtx& c) {
  Builder& b = c.b;
  const TensorType scale_t = c.t(0).type, tracker_t = c.t(1).type;
  Value scale = b.reshape(c.t(0), {});
  Value tracker = b.reshape(c.t(1), {});
  Value found = b.reshape(c.t(2), {});
  const double growth = c.d(3), backoff = c.d(4);
  const int64_t interval = c.i(5);
  Value inf_seen = b.compare(Compare::NE, found, b.constant(0, found.type.elem));
  Value scale64 = b.convert(scale, ElemType::F64);
  Value backed_off = b.convert(b.mul(scale64, b.constant(backoff, ElemType::F64)), scale.type.elem);
  Value grown = b.convert(b.mul(scale64, b.constant(growth, ElemType::F64)), scale.type.elem);
  Value grown_ok = b.op("is_finite", {grown}, TensorType{ElemType::Pred, {}});
  Value successful = b.add(tracker, b.constant_int(1, tracker.type.elem));
  Value at_interval = b.compare(Compare::EQ, successful, b.constant_int(interval, tracker.type.elem));
  Value zero = b.constant_int(0, tracker.type.elem);
  Value clean_scale = b.select(at_interval, b.select(grown_ok, grown, scale), scale);
  Value clean_tracker = b.select(at_interval, zero, successful);
  Value new_scale = b.select(inf_seen, backed_off, clean_scale);
  Value new_tracker = b.select(inf_seen, zero, clean_tracker);
  return {b.reshape(new_scale, scale_t.dims), b.reshape(new_tracker, tracker_t.dims)};
}

}  // namespace

void append_amp(std::vector<Lowering>& t) {
  t.push_back({"amp_unscale", unscale, {"_amp_foreach_non_finite_check_and_unscale_"}});
  t.push_back({"amp_update_scale", update_scale, {"_amp_update_scale_"}});
}

}  // namespace ttpu::ops
