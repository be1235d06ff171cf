// oneDNN eltwise and binary primitives for the element-wise ops (f32 and bf16), cached by
// layout, from kParallelGrain elements (oneDNN opens a parallel region at any size; below the
// grain dlf's loops run on the calling thread). Each returns false, having done nothing, below
// it or when oneDNN has no optimised kernel for the dtypes or layout (it would pick its slow
// reference kernel); the caller then runs its loop.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <dlf/core/tensor.h>

namespace dlf::kernels {

/// out = alg(x) with oneDNN's alpha and beta, for a contiguous x.
bool onednn_eltwise(dnnl::algorithm alg, float alpha, float beta, const Tensor& x,
                    const Tensor& out);

/// dst = alg(src0, src1): src0 must have dst's shape without broadcast dims (oneDNN 2.6
/// broadcasts only src1); both may be strided. dst may be bool for the comparisons.
bool onednn_binary(dnnl::algorithm alg, const Tensor& src0, const Tensor& src1, const Tensor& dst);

/// Whether an element-wise output of `out`'s size is worth oneDNN's kernels (kParallelGrain
/// elements or more); the functions above refuse smaller ones.
bool worth_onednn(const Tensor& out);

}  // namespace dlf::kernels
