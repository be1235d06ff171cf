// matmul's and linear's products as their kernels build them, for the ops that fuse more into
// the same product (fused_epilogue_ops.cpp's matmul_add and linear_add).
#pragma once
#include <dlf/core/op.h>

#include "core/kernels/linalg_gemm.h"

namespace dlf {

/// matmul's problem: out = in[0] @ in[1] (NumPy semantics, out fresh and contiguous).
kernels::GemmProblem matmul_problem(Inputs in, const Tensor& out);
/// linear's problem: out = activation(in[0] @ in[1]ᵀ + in[2]), attrs as linear's.
kernels::GemmProblem linear_problem(Inputs in, const Attrs& attrs, const Tensor& out);

}  // namespace dlf
