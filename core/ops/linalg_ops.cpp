// Matrix products: matmul (NumPy semantics) and linear (x @ weightᵀ + bias, fused activation).
#include <dlf/core/op.h>
#include <dlf/core/ops/linalg.h>

#include <algorithm>

#include "core/ops/linalg_common.h"

namespace dlf {
namespace {

void check_defined(const char* op, const Tensor& t, const char* name) {
  DLF_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
}

void check_dtypes(const char* op, const Tensor& a, const char* a_name, const Tensor& b,
                  const char* b_name) {
  DLF_CHECK(is_floating(a.dtype()), op, ": dtype ", dtype_name(a.dtype()), " of ", a_name,
            " (shape ", shape_str(a.shape()), ") is not supported (expected f32, f64 or bf16)");
  DLF_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: ", a_name, " is ", dtype_name(a.dtype()),
            shape_str(a.shape()), ", ", b_name, " is ", dtype_name(b.dtype()), shape_str(b.shape()),
            "; convert one with .to()");
}

// NumPy broadcast of matmul's batch dims, with an error that names both operands.
Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  const Shape a_batch(a.shape().begin(), a.shape().end() - std::min<int64_t>(a.dim(), 2));
  const Shape b_batch(b.shape().begin(), b.shape().end() - std::min<int64_t>(b.dim(), 2));
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a_batch.size() < rank ? 1 : a_batch[i + a_batch.size() - rank];
    const int64_t db = i + b_batch.size() < rank ? 1 : b_batch[i + b_batch.size() - rank];
    DLF_CHECK(da == db || da == 1 || db == 1, "matmul: batch dims ", shape_str(a_batch), " of ",
              shape_str(a.shape()), " and ", shape_str(b_batch), " of ", shape_str(b.shape()),
              " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<TensorMeta> infer_matmul(Inputs in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  check_defined("matmul", a, "a");
  check_defined("matmul", b, "b");
  DLF_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: operands need at least one dim, got shapes ",
            shape_str(a.shape()), " and ", shape_str(b.shape()));
  check_dtypes("matmul", a, "a", b, "b");
  const int64_t k_a = a.size(-1), k_b = b.dim() == 1 ? b.size(0) : b.size(-2);
  DLF_CHECK(k_a == k_b, "matmul: inner dimensions do not match: ", shape_str(a.shape()), " @ ",
            shape_str(b.shape()), " (", k_a, " vs ", k_b, ")");
  Shape out = broadcast_batch(a, b);
  if (a.dim() > 1) out.push_back(a.size(-2));
  if (b.dim() > 1) out.push_back(b.size(-1));
  return {{out, a.dtype()}};
}

Cost gemm_cost(Inputs in, std::span<const Tensor> out, int64_t inner, double epilogue_flops) {
  Cost c;
  const double outputs = static_cast<double>(out[0].numel());
  c.flops = 2 * outputs * static_cast<double>(inner) + epilogue_flops * outputs;
  for (const Tensor& t : in) c.bytes_read += t.defined() ? static_cast<double>(t.nbytes()) : 0;
  c.bytes_written = static_cast<double>(out[0].nbytes());
  return c;
}

const OpDef& matmul_op = register_op({
    .name = "matmul",
    .infer = infer_matmul,
    .kernel = [](Inputs in, const Attrs&,
                 Outputs out) { kernels::run_gemm(matmul_problem(in, out[0])); },
    .cost = [](Inputs in, const Attrs&,
               std::span<const Tensor> out) { return gemm_cost(in, out, in[0].size(-1), 0); },
});

// ---- linear ----

constexpr const char* kActivationNames[] = {"none", "relu", "gelu_tanh", "gelu_erf"};

Activation parse_activation(const std::string& name) {
  for (size_t i = 0; i < std::size(kActivationNames); ++i) {
    if (name == kActivationNames[i]) return static_cast<Activation>(i);
  }
  throw Error("linear: unknown activation '" + name + "' (none, relu, gelu_tanh, gelu_erf)");
}

// Approximate FLOPs per element (tanh and erf counted as one).
double activation_flops(Activation activation) {
  switch (activation) {
    case Activation::none:
      return 0;
    case Activation::relu:
      return 1;
    case Activation::gelu_tanh:
      return 9;
    case Activation::gelu_erf:
      return 5;
  }
  return 0;
}

std::vector<TensorMeta> infer_linear(Inputs in, const Attrs& attrs) {
  const Tensor &x = in[0], &weight = in[1], &bias = in[2];
  check_defined("linear", x, "input");
  check_defined("linear", weight, "weight");
  parse_activation(attrs.s("activation"));
  DLF_CHECK(x.dim() >= 1, "linear: input needs at least one dim, got shape ", shape_str(x.shape()));
  DLF_CHECK(weight.dim() == 2, "linear: weight must be [out, in], got shape ",
            shape_str(weight.shape()));
  check_dtypes("linear", x, "input", weight, "weight");
  DLF_CHECK(x.size(-1) == weight.size(1), "linear: input of shape ", shape_str(x.shape()), " has ",
            x.size(-1), " features, weight of shape ", shape_str(weight.shape()), " expects ",
            weight.size(1));
  if (bias.defined()) {
    check_dtypes("linear", x, "input", bias, "bias");
    DLF_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear: bias of shape ",
              shape_str(bias.shape()), " does not match weight of shape ",
              shape_str(weight.shape()), " (expected [", weight.size(0), "])");
  }
  Shape out = x.shape();
  out.back() = weight.size(0);
  return {{out, x.dtype()}};
}

const OpDef& linear_op = register_op({
    .name = "linear",
    .infer = infer_linear,
    .kernel = [](Inputs in, const Attrs& attrs,
                 Outputs out) { kernels::run_gemm(linear_problem(in, attrs, out[0])); },
    .cost =
        [](Inputs in, const Attrs& attrs, std::span<const Tensor> out) {
          const double epilogue =
              (in[2].defined() ? 1 : 0) + activation_flops(parse_activation(attrs.s("activation")));
          return gemm_cost(in, out, in[0].size(-1), epilogue);
        },
});

}  // namespace

kernels::GemmProblem matmul_problem(Inputs in, const Tensor& out) {
  return kernels::make_gemm_problem(kernels::lhs_operand(in[0]), kernels::rhs_operand(in[1]), out);
}

kernels::GemmProblem linear_problem(Inputs in, const Attrs& attrs, const Tensor& out) {
  kernels::GemmProblem p = kernels::make_gemm_problem(kernels::lhs_operand(in[0]),
                                                      kernels::transposed_weight(in[1]), out);
  if (in[2].defined()) {
    p.bias = in[2].raw_data();
    p.bias_stride = in[2].strides()[0];
  }
  p.activation = parse_activation(attrs.s("activation"));
  return p;
}

Tensor matmul(const Tensor& a, const Tensor& b) { return dispatch1(matmul_op, {a, b}); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation) {
  return dispatch1(linear_op, {x, weight, bias},
                   {{"activation", std::string(kActivationNames[static_cast<int>(activation)])}});
}

}  // namespace dlf
