// Sorting and scans: sort, topk, cumsum/cumprod.
#include <stdexcept>

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

// Sorts `x` along `dim` with its positions; returns (values, indices).
std::pair<Value, Value> sort_with_indices(Builder& b, const Value& x, int64_t dim, bool descending) {
  TensorType it{ElemType::S64, x.type.dims};
  Value idx = b.iota(it, dim);
  TensorType s{x.type.elem, {}}, si{ElemType::S64, {}};
  std::string a = b.fresh(), c = b.fresh(), ai = b.fresh(), ci = b.fresh(), r = b.fresh();
  const char* cmp = x.type.elem == ElemType::Pred ? "UNSIGNED"
                    : shlo::is_float(x.type.elem) ? "TOTALORDER"
                    : shlo::is_unsigned_int(x.type.elem) ? "UNSIGNED" : "SIGNED";
  std::string ty = s.str(), tyi = si.str();
  std::string region = "{\n    ^bb0(" + a + ": " + ty + ", " + c + ": " + ty + ", " + ai + ": " + tyi + ", " + ci +
                       ": " + tyi + "):\n      " + r + " = \"stablehlo.compare\"(" + a + ", " + c +
                       ") {comparison_direction = #stablehlo<comparison_direction " + (descending ? "GT" : "LT") +
                       ">, compare_type = #stablehlo<comparison_type " + cmp + ">} : (" + ty + ", " + ty +
                       ") -> tensor<i1>\n      \"stablehlo.return\"(" + r + ") : (tensor<i1>) -> ()\n  }";
  auto res = b.op_multi("sort", {x, idx}, {x.type, it},
                        "dimension = " + std::to_string(dim) + " : i64, is_stable = true", region);
  return {res[0], res[1]};
}

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
  if (x.type.rank() == 0) return {b.convert(x, out.elem)};
  int64_t dim = wrap_dim(c.i(1), x.type.rank());
  int64_t n = x.type.dims[dim];
  std::vector<int64_t> window(x.type.rank(), 1), strides(x.type.rank(), 1);
  window[dim] = n;
  std::string pad = "padding = dense<[";
  for (int i = 0; i < x.type.rank(); ++i) pad += std::string(i ? ", " : "") + "[" + (i == dim ? std::to_string(n - 1) : "0") + ", 0]";
  pad += "]> : tensor<" + std::to_string(x.type.rank()) + "x2xi64>";
  TensorType s{acc, {}};
  std::string a = b.fresh(), bb = b.fresh(), r = b.fresh();
  std::string ty = s.str();
  std::string region = "{\n    ^bb0(" + a + ": " + ty + ", " + bb + ": " + ty + "):\n      " + r + " = \"stablehlo." +
                       (product ? "multiply" : "add") + "\"(" + a + ", " + bb + ") : (" + ty + ", " + ty + ") -> " + ty +
                       "\n      \"stablehlo.return\"(" + r + ") : (" + ty + ") -> ()\n  }";
  Value init = b.constant(product ? 1 : 0, acc);
  auto res = b.op_multi("reduce_window", {x, init}, {x.type},
                        "window_dimensions = " + shlo::int_array(window) + ", window_strides = " +
                            shlo::int_array(strides) + ", " + pad,
                        region);
  return {b.convert(res[0], out.elem)};
}

}  // namespace

void append_sort_scan(std::vector<Lowering>& t) {
  t.push_back({"sort", [](LowerCtx& c) { return sort(c, 1, 2); }, {"sort", "sort.values"}});
  t.push_back({"sort_stable", [](LowerCtx& c) { return sort(c, 2, 3); }, {"sort.stable", "sort.values_stable"}});
  t.push_back({"topk", topk, {"topk", "topk.values"}});
  t.push_back({"cumsum", [](LowerCtx& c) { return scan(c, false); }, {"cumsum", "cumsum_", "cumsum.out"}});
  t.push_back({"cumprod", [](LowerCtx& c) { return scan(c, true); }, {"cumprod", "cumprod_", "cumprod.out"}});
}

}  // namespace ttpu::ops
