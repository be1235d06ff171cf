// A matrix product as the linalg kernels see it: batched, strided, with broadcast batch dims
// and an optional bias + activation + residual-add epilogue (private header).
#pragma once
#include <cstdint>

#include <dlf/core/ops/linalg.h>
#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// A strided [batch..., rows, cols] view of a matrix operand (strides in elements).
struct GemmOperand {
  void* data = nullptr;
  Shape dims;
  Shape strides;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
};

/// dst = activation(a @ b + bias) + residual for every batch index of dst. All three operands
/// have the same rank; a batch dim of a or b is either dst's or 1 (broadcast). dst is contiguous.
struct GemmProblem {
  DType dtype = DType::f32;
  GemmOperand a, b, dst;
  const void* bias = nullptr;  ///< [cols] added to every row, or null
  int64_t bias_stride = 0;
  Activation activation = Activation::none;
  /// Dense in dst's layout (contiguous), or null; may be dst's own bytes (summed into in place).
  const void* residual = nullptr;

  bool has_epilogue() const {
    return bias != nullptr || activation != Activation::none || residual != nullptr;
  }

  int64_t rows() const { return dst.dims[dst.rank() - 2]; }
  int64_t cols() const { return dst.dims[dst.rank() - 1]; }
  int64_t inner() const { return a.dims[a.rank() - 1]; }
  int64_t batch() const { return numel(dst.dims) / (rows() * cols()); }
};

/// The left operand: [..., n, k], or a 1-D [k] as the row vector [1, k].
GemmOperand lhs_operand(const Tensor& t);
/// The right operand: [..., k, m], or a 1-D [k] as the column vector [k, 1].
GemmOperand rhs_operand(const Tensor& t);
/// A PyTorch-layout weight [out, in] read as the [in, out] right operand (no copy).
GemmOperand transposed_weight(const Tensor& weight);

/// Pads a and b to one rank, turns stride-0 batch dims into broadcast size-1 dims, folds the
/// batch dims of a into its rows when b has none and the layout allows, and describes `out`
/// (fresh, contiguous, holding the product's elements) as dst.
GemmProblem make_gemm_problem(GemmOperand a, GemmOperand b, const Tensor& out);

/// Runs the problem: oneDNN for f32/bf16 (bf16 through f32 on CPUs without AVX-512), Eigen
/// for f64.
void run_gemm(const GemmProblem& p);

// Backends (linalg_onednn.cpp, linalg_eigen.cpp).
void onednn_gemm(const GemmProblem& p);
void eigen_gemm(const GemmProblem& p);
/// dst = activation(dst + bias) + residual in place, row by row (the epilogue of the non-oneDNN
/// paths).
void apply_epilogue(const GemmProblem& p);

}  // namespace dlf::kernels
