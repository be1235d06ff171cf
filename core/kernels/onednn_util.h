// Tensor <-> oneDNN memory helpers shared by the oneDNN-backed kernels.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include <dlf/core/tensor.h>

#include "device/cpu/onednn_context.h"

namespace dlf::kernels {

/// f32 always; bf16 where the CPU has AVX-512 (cpu::has_bf16).
inline bool onednn_supports(DType t) {
  return t == DType::f32 || (t == DType::bf16 && cpu::has_bf16());
}

inline dnnl::memory::data_type onednn_type(DType t) {
  switch (t) {
    case DType::f32:
      return dnnl::memory::data_type::f32;
    case DType::bf16:
      return dnnl::memory::data_type::bf16;
    case DType::i32:
      return dnnl::memory::data_type::s32;
    case DType::b8:
      return dnnl::memory::data_type::u8;
    default:
      throw Error(std::string("oneDNN has no ") + dtype_name(t));
  }
}

/// A descriptor with the tensor's own sizes and strides (a rank-0 tensor becomes [1]).
inline dnnl::memory::desc onednn_desc(const Tensor& t) {
  dnnl::memory::dims dims(t.shape().begin(), t.shape().end());
  dnnl::memory::dims strides(t.strides().begin(), t.strides().end());
  if (dims.empty()) dims = strides = {1};
  return dnnl::memory::desc(dims, onednn_type(t.dtype()), strides);
}

inline dnnl::memory onednn_memory(const Tensor& t) {
  return dnnl::memory(onednn_desc(t), cpu::engine(), t.raw_data());
}

/// "f32[2,3]{3,1}": a cache-key fragment for one tensor's dtype, shape and strides.
inline std::string layout_key(const Tensor& t) {
  std::string k = dtype_name(t.dtype());
  k += shape_str(t.shape());
  k += shape_str(t.strides());
  return k;
}

}  // namespace dlf::kernels
