// Checks CPU's kernels make that PyTorch's meta functions do not, so that a
// 'tpu' op refuses what CPU refuses (found by tests/test_fuzz.py). Some depend
// on Scalar values, which are runtime inputs of a cached executable, so the
// table kernel looks its op's check up once and runs it on every call; ops
// without one pay nothing. The in-place cast check (int32.mul_(1.1)) lives in
// the table kernel, next to the out= one.
#include <ATen/Dispatch_v2.h>

#include "aten/common.h"

namespace ttpu::aten {

namespace {

bool is_bool_tensor(const c10::IValue& v) { return v.isTensor() && v.toTensor().scalar_type() == at::kBool; }

void sub_check(const std::vector<c10::IValue>& args) {
  // sub/rsub(self, other, alpha): meta refuses two bool tensors, CPU also one.
  if (args.size() < 2) return;
  bool a = is_bool_tensor(args[0]), b = is_bool_tensor(args[1]) || (args[1].isScalar() && args[1].isBool());
  TORCH_CHECK_NOT_IMPLEMENTED(!(a && b),
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                              "or `logical_xor()` operator instead.");
  TORCH_CHECK_NOT_IMPLEMENTED(!(a || b),
                              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                              "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

void arg_reduce_check(const char* name, const std::vector<c10::IValue>& args) {
  TORCH_CHECK(args.empty() || !is_bool_tensor(args[0]), name, "(): does not support bool input");
  // complex has no order; the lowering refuses it too, but not a 0-d input (nothing to compare)
  TORCH_CHECK(args.empty() || !args[0].isTensor() || !args[0].toTensor().is_complex(), name,
              "(): does not support complex input");
}

bool is_integral_tensor(const c10::IValue& v, bool include_bool) {
  return v.isTensor() && at::isIntegralType(v.toTensor().scalar_type(), include_bool);
}

// fill_/masked_fill_ value: c10's checked conversion of the Scalar into self's
// dtype ("value cannot be converted to type uint8_t without overflow").
// A 0-d value tensor (masked_fill.Tensor) is read only when it is complex and
// self is not, where CPU's conversion refuses a nonzero imaginary part (the
// meta function says it in other words); reading it otherwise would cost a
// sync on a hot path (attention masks) for a check CPU rarely fails.
void fill_value_check(const std::vector<c10::IValue>& args, size_t value_arg) {
  if (args.size() <= value_arg || !args[0].isTensor()) return;
  const c10::IValue& arg = args[value_arg];
  if (arg.isTensor()) {
    const at::Tensor& value = arg.toTensor();
    if (!value.defined() || value.dim() != 0 || !value.is_complex() || args[0].toTensor().is_complex()) return;
  } else if (!arg.isScalar()) {
    return;
  }
  at::Scalar v = arg.isTensor() ? arg.toTensor().item() : arg.toScalar();
  AT_DISPATCH_V2(args[0].toTensor().scalar_type(), "fill_", AT_WRAP([&] { (void)v.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool, at::kComplexHalf, at::kBComplex32,
                 AT_EXPAND(AT_FLOAT8_TYPES));
}

void pow_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2) return;
  // pow.Tensor_Tensor of two bools (a bool result): no CPU kernel
  TORCH_CHECK_NOT_IMPLEMENTED(!(is_bool_tensor(args[0]) && is_bool_tensor(args[1])),
                              "\"pow\" not implemented for 'Bool'");
  // pow.Tensor_Scalar(self, exponent): integer (or bool) base, negative integer exponent
  if (!is_integral_tensor(args[0], true) || !args[1].isInt()) return;
  TORCH_CHECK(args[1].toInt() >= 0, "Integers to negative integer powers are not allowed.");
}

void floor_divide_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK_NOT_IMPLEMENTED(args.size() < 2 || !(is_bool_tensor(args[0]) && is_bool_tensor(args[1])),
                              "\"div_floor_cpu\" not implemented for 'Bool'");
}

void alpha_check(const std::vector<c10::IValue>& args) {
  // add/sub(self, other, alpha): a float alpha with integral tensors
  if (args.size() < 3 || !args[2].isDouble()) return;
  bool integral = is_integral_tensor(args[0], true) && is_integral_tensor(args[1], true);
  TORCH_CHECK(!integral, "For integral input tensors, argument alpha must not be a floating point number.");
}

// cumsum/cumprod(self, dim, *, dtype=None[, out]): CPU's scan kernels have no
// Bool instance. The result dtype is bool when dtype=torch.bool, out= is
// bool, or an in-place scan of a bool tensor (a bool input alone promotes
// to int64). Our lowering used to return a silent all-False result.
void scan_bool_check(const char* kernel, const std::vector<c10::IValue>& args, bool inplace) {
  bool to_bool = args.size() > 2 && args[2].isInt() && static_cast<at::ScalarType>(args[2].toInt()) == at::kBool;
  to_bool = to_bool || (args.size() > 3 && is_bool_tensor(args[3])) ||
            (inplace && args.size() > 0 && is_bool_tensor(args[0]) && (args.size() < 3 || args[2].isNone()));
  TORCH_CHECK_NOT_IMPLEMENTED(!to_bool, "\"", kernel, "\" not implemented for 'Bool'");
}

void heaviside_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2 || !args[0].isTensor() || !args[1].isTensor()) return;
  const at::Tensor &x = args[0].toTensor(), &v = args[1].toTensor();
  TORCH_CHECK(!x.is_complex() && !v.is_complex(), "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(x.scalar_type() == v.scalar_type(), "heaviside is not yet implemented for tensors with different dtypes.");
}

// var/std(_mean).correction(self, dim?, *, correction?, keepdim): CPU refuses
// integer and bool inputs, and warns when the correction leaves no degrees of
// freedom (the result is NaN/inf).
template <const char* Name>
void variance_dof_check(const std::vector<c10::IValue>& args) {
  if (args.empty() || !args[0].isTensor()) return;
  const at::Tensor& x = args[0].toTensor();
  // CPU's dtype check, in its wording (var and std share one message).
  bool mean = std::string(Name).find("_mean") != std::string::npos;
  TORCH_CHECK(at::isFloatingType(x.scalar_type()) || at::isComplexType(x.scalar_type()),
              mean ? Name : "std and var", " only support floating point and complex dtypes");
  int64_t n = x.numel();
  if (args.size() > 1 && args[1].isIntList() && !args[1].toIntVector().empty()) {
    n = 1;
    for (int64_t d : args[1].toIntVector()) n *= x.dim() == 0 ? 1 : x.size(at::maybe_wrap_dim(d, x.dim()));
  }
  double correction = args.size() > 2 && args[2].isScalar() ? args[2].toScalar().toDouble() : 1.0;
  if (n - correction <= 0)
    TORCH_WARN(Name, "(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
               "(input numel divided by output numel).");
}
constexpr char kVar[] = "var", kStd[] = "std", kVarMean[] = "var_mean", kStdMean[] = "std_mean";

void rrelu_check(const std::vector<c10::IValue>& args) {
  // rrelu_with_noise_functional(self, noise, lower, upper, training, generator)
  if (args.size() < 5 || !args[2].isScalar() || !args[3].isScalar() || !args[4].toBool()) return;
  TORCH_CHECK(args[2].toScalar().toDouble() <= args[3].toScalar().toDouble(),
              "Lower bound should be less than or equal to the upper bound");
}

void sub_checks(const std::vector<c10::IValue>& args) {
  sub_check(args);
  alpha_check(args);
}
void argmax_check(const std::vector<c10::IValue>& args) { arg_reduce_check("argmax", args); }
void argmin_check(const std::vector<c10::IValue>& args) { arg_reduce_check("argmin", args); }
void relu_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK_NOT_IMPLEMENTED(args.empty() || !is_bool_tensor(args[0]), "Boolean inputs not supported for relu");
}
void topk_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK(args.empty() || !is_bool_tensor(args[0]), "topk does not support bool dtypes on CPU");
}
void fill_check(const std::vector<c10::IValue>& args) { fill_value_check(args, 1); }
void cumsum_check(const std::vector<c10::IValue>& args) { scan_bool_check("cumsum_out_cpu", args, false); }
void cumsum_inplace_check(const std::vector<c10::IValue>& args) { scan_bool_check("cumsum_out_cpu", args, true); }
void cumprod_check(const std::vector<c10::IValue>& args) { scan_bool_check("cumprod_out_cpu", args, false); }
void cumprod_inplace_check(const std::vector<c10::IValue>& args) { scan_bool_check("cumprod_out_cpu", args, true); }
// CPU's masked_fill kernel has no float8 instantiation.
void masked_fill_check(const std::vector<c10::IValue>& args) {
  if (!args.empty() && args[0].isTensor()) {
    at::ScalarType t = args[0].toTensor().scalar_type();
    TORCH_CHECK_NOT_IMPLEMENTED(!at::isFloat8Type(t), "\"masked_fill\" not implemented for '", c10::toString(t), "'");
  }
  fill_value_check(args, 2);
}

// Ops CPU refuses for complex inputs (found by tests/fuzz), in CPU's words.
bool is_complex_tensor(const c10::IValue& v) { return v.isTensor() && v.toTensor().is_complex(); }
void sign_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK_NOT_IMPLEMENTED(args.empty() || !is_complex_tensor(args[0]),
                              "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                              "torch.sgn instead.");
}
void trunc_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK_NOT_IMPLEMENTED(args.empty() || !is_complex_tensor(args[0]), "trunc is not supported for complex inputs");
}
void nansum_check(const std::vector<c10::IValue>& args) {
  TORCH_CHECK(args.empty() || !is_complex_tensor(args[0]), "nansum on CPU does not support complex inputs");
}
void hypot_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2 || !args[0].isTensor() || !args[1].isTensor()) return;
  if (!is_complex_tensor(args[0]) && !is_complex_tensor(args[1])) return;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"hypot_cpu\" not implemented for '",
                              c10::toString(at::result_type(args[0].toTensor(), args[1].toTensor())), "'");
}

// Found by OpInfo's error inputs (tools/conformance.py --errors).
void uniform_check(const std::vector<c10::IValue>& args) {
  // uniform_(self, from, to, generator)
  if (args.size() < 3 || !args[1].isDouble() || !args[2].isDouble()) return;
  double from = args[1].toDouble(), to = args[2].toDouble();
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
}

void masked_scatter_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2 || !args[1].isTensor()) return;
  TORCH_CHECK(args[1].toTensor().scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ", args[1].toTensor().scalar_type());
}

void complex_parts_check(const std::vector<c10::IValue>& args) {
  // complex/polar(real, imag): CPU's kernel takes two parts of one dtype
  if (args.size() < 2 || !args[0].isTensor() || !args[1].isTensor()) return;
  at::ScalarType a = args[0].toTensor().scalar_type(), b = args[1].toTensor().scalar_type();
  TORCH_CHECK(a == b, "Expected object of scalar type ", a, " but got scalar type ", b, " for second argument");
}

void bucketize_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2 || !args[1].isTensor()) return;
  TORCH_CHECK(args[1].toTensor().dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              args[1].toTensor().dim(), ")");
}

// multinomial(self, num_samples, replacement): CPU's host-side checks, in its order.
void multinomial_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 3 || !args[0].isTensor() || !args[1].isInt()) return;
  const at::Tensor& self = args[0].toTensor();
  int64_t n_sample = args[1].toInt();
  bool replacement = args[2].isBool() && args[2].toBool();
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  if (args.size() >= 5 && args[4].isTensor()) {  // multinomial.out(..., generator, out)
    at::ScalarType out = args[4].toTensor().scalar_type();
    TORCH_CHECK(out == at::kLong, "multinomial expects Long tensor out, got: ", out);
  }
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(replacement || n_sample <= self.size(-1),
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  // CPU draws category indices as float32
  TORCH_CHECK(self.size(-1) <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
}

// bernoulli_(p: float): CPU checks the probability on the host.
void bernoulli_float_check(const std::vector<c10::IValue>& args) {
  if (args.size() < 2 || !args[1].isDouble()) return;
  double p = args[1].toDouble();
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
}

}  // namespace

CpuCheck cpu_kernel_check(const std::string& op) {
  static const std::map<std::string, CpuCheck> table = {
      {"sub", sub_checks},        {"sub_", sub_checks},       {"rsub", sub_checks},
      {"add", alpha_check},       {"add_", alpha_check},      {"argmax", argmax_check},
      {"argmin", argmin_check},   {"relu", relu_check},       {"relu_", relu_check},
      {"topk", topk_check},       {"fill_", fill_check},      {"masked_fill", masked_fill_check},
      {"masked_fill_", masked_fill_check}, {"pow", pow_check}, {"pow_", pow_check},
      {"floor_divide", floor_divide_check}, {"floor_divide_", floor_divide_check},
      {"cumsum", cumsum_check},   {"cumsum_", cumsum_inplace_check},
      {"cumprod", cumprod_check}, {"cumprod_", cumprod_inplace_check},
      {"heaviside", heaviside_check}, {"heaviside_", heaviside_check},
      {"rrelu_with_noise_functional", rrelu_check},
      {"var", variance_dof_check<kVar>}, {"std", variance_dof_check<kStd>},
      {"var_mean", variance_dof_check<kVarMean>}, {"std_mean", variance_dof_check<kStdMean>},
      {"sign", sign_check},       {"sign_", sign_check},      {"trunc", trunc_check},
      {"trunc_", trunc_check},    {"nansum", nansum_check},   {"hypot", hypot_check},
      {"hypot_", hypot_check},
      {"uniform", uniform_check}, {"uniform_", uniform_check},
      {"masked_scatter", masked_scatter_check}, {"masked_scatter_", masked_scatter_check},
      {"complex", complex_parts_check}, {"polar", complex_parts_check},
      {"bucketize", bucketize_check}, {"multinomial", multinomial_check},
      {"bernoulli_", bernoulli_float_check},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace ttpu::aten
