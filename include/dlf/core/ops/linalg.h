// Matrix products.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf {

/// NumPy matmul: [n,k]@[k,m]; batched [...,n,k]@[...,k,m] with broadcast batch dims;
/// a 1-D operand is a vector (its dim is dropped from the result).
Tensor matmul(const Tensor& a, const Tensor& b);

/// Activation fused into linear's epilogue.
enum class Activation { none, relu, gelu_tanh, gelu_erf };

/// y = act(x @ weightᵀ + bias). x [..., in], weight [out, in] (PyTorch layout), bias [out]
/// or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              Activation activation = Activation::none);

}  // namespace dlf
