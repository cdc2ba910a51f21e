// Recurrent cells: the fused LSTM and GRU cell kernels (and their backward)
// that nn.LSTM / nn.GRU / LSTMCell / GRUCell call on accelerators. The matmuls
// stay outside (addmm/linear lowerings); these take the pre-activation gates.
// Gate layouts and workspaces follow ATen's fused cell kernels, so autograd's
// formulas (derivatives.yaml) pair our forward with our backward:
//   LSTM gates [i, f, g, o], workspace = activated gates [i, f, g, o];
//   GRU gates [r, z, n],     workspace = [r, z, n, hx, hidden n-gate].

#include "ops/lowering.h"

namespace ttpu::ops {

namespace {

using shlo::Reducer;

Value sigmoid(Builder& b, const Value& x) { return b.unary("logistic", x); }

Value one_like(Builder& b, const Value& x) { return b.constant(1, x.type.elem, x.type.dims); }

// d sigmoid = s (1 - s); d tanh = 1 - t^2, both from the activated value.
Value dsigmoid(Builder& b, const Value& s) { return b.mul(s, b.sub(one_like(b, s), s)); }

Value dtanh(Builder& b, const Value& t) { return b.sub(one_like(b, t), b.mul(t, t)); }

// Chunk k of n along dim 1 of a [B, n*H] value.
Value chunk(Builder& b, const Value& x, int k, int n) {
  int64_t batch = x.type.dims[0], h = x.type.dims[1] / n;
  return b.slice(x, {0, k * h}, {batch, (k + 1) * h}, {1, 1});
}

// x (+ bias broadcast over the batch), in the compute type.
Value with_bias(LowerCtx& c, Value x, size_t bias_arg, ElemType ct) {
  Builder& b = c.b;
  x = b.convert(x, ct);
  if (c.has(bias_arg)) x = b.add(x, b.broadcast_in_dim(b.convert(c.t(bias_arg), ct), x.type.dims, {1}));
  return x;
}

Value batch_sum(Builder& b, const Value& x) {
  return b.reduce(x, b.constant(0, x.type.elem), {0}, shlo::Reducer::Add);
}

// PyTorch's meta function for the LSTM cell fails on absent biases (it reads
// None.device), so the result types are ours.
std::vector<TensorType> lstm_cell_types(LowerCtx& c) {
  const TensorType& cx = c.t(2).type;
  return {cx, cx, c.t(0).type};
}

std::vector<TensorType> lstm_cell_backward_types(LowerCtx& c) {
  const TensorType& ws = c.t(4).type;  // [B, 4H]
  c.present = {true, true, c.flag(5)};
  return {ws, c.t(2).type, TensorType{ws.elem, {ws.dims[1]}}};
}

// _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias?, hidden_bias?) -> (hy, cy, workspace)
std::vector<Value> lstm_cell(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = accumulate_type(c.out(0).elem);
  Value gates = b.add(with_bias(c, c.t(0), 3, ct), with_bias(c, c.t(1), 4, ct));
  Value i = sigmoid(b, chunk(b, gates, 0, 4)), f = sigmoid(b, chunk(b, gates, 1, 4));
  Value g = b.unary("tanh", chunk(b, gates, 2, 4)), o = sigmoid(b, chunk(b, gates, 3, 4));
  Value cx = b.convert(c.t(2), ct);
  Value cy = b.add(b.mul(f, cx), b.mul(i, g));
  Value hy = b.mul(o, b.unary("tanh", cy));
  return {hy, cy, b.concatenate({i, f, g, o}, 1)};
}

// _thnn_fused_lstm_cell_backward_impl(grad_hy?, grad_cy?, cx, cy, workspace, has_bias)
//   -> (grad_gates, grad_cx, grad_bias)
std::vector<Value> lstm_cell_backward(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = accumulate_type(c.out(0).elem);
  Value ws = b.convert(c.t(4), ct);
  Value i = chunk(b, ws, 0, 4), f = chunk(b, ws, 1, 4), g = chunk(b, ws, 2, 4), o = chunk(b, ws, 3, 4);
  Value cx = b.convert(c.t(2), ct), cy = b.convert(c.t(3), ct);
  Value zero = b.constant(0, ct, cy.type.dims);
  Value ghy = c.has(0) ? b.convert(c.t(0), ct) : zero;
  Value gcy = c.has(1) ? b.convert(c.t(1), ct) : zero;
  Value tcy = b.unary("tanh", cy);
  Value gc = b.add(b.mul(b.mul(ghy, o), dtanh(b, tcy)), gcy);  // total gradient reaching cy
  Value di = b.mul(b.mul(gc, g), dsigmoid(b, i));
  Value df = b.mul(b.mul(gc, cx), dsigmoid(b, f));
  Value dg = b.mul(b.mul(gc, i), dtanh(b, g));
  Value d_o = b.mul(b.mul(ghy, tcy), dsigmoid(b, o));
  Value grad_gates = b.concatenate({di, df, dg, d_o}, 1);
  Value grad_cx = b.mul(gc, f);
  // Without bias the third result is undefined (not present) and dropped.
  return {grad_gates, grad_cx, batch_sum(b, grad_gates)};
}

std::vector<TensorType> gru_cell_types(LowerCtx& c) {
  const TensorType& ig = c.t(0).type;
  const TensorType& hx = c.t(2).type;
  return {hx, TensorType{ig.elem, {ig.dims[0], ig.dims[1] / 3 * 5}}};
}

// _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias?, hidden_bias?) -> (hy, workspace)
std::vector<Value> gru_cell(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = accumulate_type(c.out(0).elem);
  Value ig = with_bias(c, c.t(0), 3, ct), hg = with_bias(c, c.t(1), 4, ct);
  Value hx = b.convert(c.t(2), ct);
  Value r = sigmoid(b, b.add(chunk(b, ig, 0, 3), chunk(b, hg, 0, 3)));
  Value z = sigmoid(b, b.add(chunk(b, ig, 1, 3), chunk(b, hg, 1, 3)));
  Value hn = chunk(b, hg, 2, 3);
  Value n = b.unary("tanh", b.add(chunk(b, ig, 2, 3), b.mul(r, hn)));
  Value hy = b.add(b.mul(b.sub(one_like(b, z), z), n), b.mul(z, hx));
  return {hy, b.concatenate({r, z, n, hx, hn}, 1)};
}

std::vector<TensorType> gru_cell_backward_types(LowerCtx& c) {
  const TensorType& gh = c.t(0).type;  // [B, H]
  int64_t batch = gh.dims[0], h = gh.dims[1];
  TensorType gates{gh.elem, {batch, 3 * h}}, bias{gh.elem, {3 * h}};
  bool has_bias = c.flag(2);
  c.present = {true, true, true, has_bias, has_bias};
  return {gates, gates, gh, bias, bias};
}

// _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias)
//   -> (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)
std::vector<Value> gru_cell_backward(LowerCtx& c) {
  Builder& b = c.b;
  ElemType ct = accumulate_type(c.out(0).elem);
  Value ws = b.convert(c.t(1), ct);
  Value r = chunk(b, ws, 0, 5), z = chunk(b, ws, 1, 5), n = chunk(b, ws, 2, 5);
  Value hx = chunk(b, ws, 3, 5), hn = chunk(b, ws, 4, 5);
  Value gh = b.convert(c.t(0), ct);
  Value grad_hx = b.mul(gh, z);
  Value dn = b.mul(b.mul(gh, b.sub(one_like(b, z), z)), dtanh(b, n));
  Value dz = b.mul(b.mul(gh, b.sub(hx, n)), dsigmoid(b, z));
  Value dr = b.mul(b.mul(dn, hn), dsigmoid(b, r));
  Value grad_ig = b.concatenate({dr, dz, dn}, 1);
  Value grad_hg = b.concatenate({dr, dz, b.mul(dn, r)}, 1);
  return {grad_ig, grad_hg, grad_hx, batch_sum(b, grad_ig), batch_sum(b, grad_hg)};
}

}  // namespace

void append_rnn(std::vector<Lowering>& t) {
  t.push_back({"lstm_cell", lstm_cell, {"_thnn_fused_lstm_cell"}, 0, lstm_cell_types});
  t.push_back({"lstm_cell_backward", lstm_cell_backward, {"_thnn_fused_lstm_cell_backward_impl"}, 0,
               lstm_cell_backward_types});
  t.push_back({"gru_cell", gru_cell, {"_thnn_fused_gru_cell"}, 0, gru_cell_types});
  t.push_back({"gru_cell_backward", gru_cell_backward, {"_thnn_fused_gru_cell_backward"}, 0, gru_cell_backward_types});
}

}  // namespace ttpu::ops
