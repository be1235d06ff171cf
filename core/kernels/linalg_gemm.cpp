// Normalising a matrix product into a GemmProblem, and the backend choice.
#include "core/kernels/linalg_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/kernels/activation_math.h"
#include "core/kernels/convert.h"
#include "device/cpu/onednn_context.h"

namespace dlf::kernels {

GemmOperand lhs_operand(const Tensor& t) {
  if (t.dim() == 1) return {t.raw_data(), {1, t.size(0)}, {0, t.strides()[0]}};
  return {t.raw_data(), t.shape(), t.strides()};
}

GemmOperand rhs_operand(const Tensor& t) {
  if (t.dim() == 1) return {t.raw_data(), {t.size(0), 1}, {t.strides()[0], 0}};
  return {t.raw_data(), t.shape(), t.strides()};
}

GemmOperand transposed_weight(const Tensor& weight) {
  return {weight.raw_data(),
          {weight.size(1), weight.size(0)},
          {weight.strides()[1], weight.strides()[0]}};
}

namespace {

void pad_rank(GemmOperand& x, int64_t rank) {
  const int64_t pad = rank - x.rank();
  x.dims.insert(x.dims.begin(), pad, 1);
  x.strides.insert(x.strides.begin(), pad, 0);
}

void erase_dim(GemmOperand& x, int64_t d) {
  x.dims.erase(x.dims.begin() + d);
  x.strides.erase(x.strides.begin() + d);
}

// Whether the [batch..., rows] dims of `a` are one evenly strided run (size-1 dims aside).
bool rows_mergeable(const GemmOperand& a) {
  int64_t expected = 0;
  bool first = true;
  for (int64_t d = a.rank() - 2; d >= 0; --d) {
    if (a.dims[d] == 1) continue;
    if (!first && a.strides[d] != expected) return false;
    expected = a.strides[d] * a.dims[d];
    first = false;
  }
  return true;
}

// Size-1 dims get the stride a dense layout would give them, so that backends which look at
// every stride (oneDNN's plain-layout checks) see the operand as what it is.
void normalise_unit_strides(GemmOperand& x) {
  for (int64_t d = x.rank() - 1; d >= 0; --d) {
    if (x.dims[d] != 1) continue;
    int64_t outer = 1;
    for (int64_t e = d + 1; e < x.rank(); ++e) outer = std::max(outer, x.strides[e] * x.dims[e]);
    x.strides[d] = outer;
  }
}

}  // namespace

GemmProblem make_gemm_problem(GemmOperand a, GemmOperand b, const Tensor& out) {
  const int64_t rank = std::max(a.rank(), b.rank());
  pad_rank(a, rank);
  pad_rank(b, rank);
  GemmProblem p;
  p.dtype = out.dtype();
  p.dst.data = out.raw_data();
  p.dst.dims = a.dims;
  p.dst.dims[rank - 1] = b.dims[rank - 1];
  for (int64_t d = 0; d < rank - 2; ++d) {
    p.dst.dims[d] = std::max(a.dims[d], b.dims[d]);
    // A batch dim read with stride 0 is a broadcast: let the backend broadcast it. When both
    // operands broadcast a dim of dst, b keeps it with its zero stride (Eigen reads it as it
    // is, oneDNN gets a packed copy).
    const bool a_bcast = a.strides[d] == 0 || a.dims[d] == 1;
    const bool b_bcast = b.strides[d] == 0 || b.dims[d] == 1;
    if (a_bcast) a.dims[d] = 1;
    if (b_bcast && !(a_bcast && p.dst.dims[d] > 1)) b.dims[d] = 1;
  }
  // Batch dims that are 1 everywhere carry nothing.
  for (int64_t d = rank - 3; d >= 0; --d) {
    if (a.dims[d] == 1 && b.dims[d] == 1 && p.dst.dims[d] == 1) {
      erase_dim(a, d);
      erase_dim(b, d);
      p.dst.dims.erase(p.dst.dims.begin() + d);
    }
  }
  // x[..., n, k] @ w[k, m] is one [batch*n, k] @ [k, m] product when x's rows merge.
  const bool b_unbatched =
      std::all_of(b.dims.begin(), b.dims.end() - 2, [](int64_t s) { return s == 1; });
  if (a.rank() > 2 && b_unbatched && rows_mergeable(a)) {
    int64_t rows = 1, row_stride = a.strides[a.rank() - 2];
    for (int64_t d = a.rank() - 2; d >= 0; --d) {
      if (a.dims[d] != 1 && rows == 1) row_stride = a.strides[d];
      rows *= a.dims[d];
    }
    a = {a.data, {rows, a.dims.back()}, {row_stride, a.strides.back()}};
    b = {
        b.data, {b.dims[b.rank() - 2], b.dims.back()}, {b.strides[b.rank() - 2], b.strides.back()}};
    p.dst.dims = {rows, b.dims.back()};
  }
  p.dst.strides = contiguous_strides(p.dst.dims);
  normalise_unit_strides(a);
  normalise_unit_strides(b);
  p.a = std::move(a);
  p.b = std::move(b);
  return p;
}

namespace {

// The operand's bf16 values as a dense f32 operand held in `buffer`.
GemmOperand widened(const GemmOperand& o, std::vector<float>& buffer) {
  buffer.resize(static_cast<size_t>(numel(o.dims)));
  const bf16* src = static_cast<const bf16*>(o.data);
  Shape index(o.dims.size(), 0);
  int64_t offset = 0;
  for (float& v : buffer) {
    v = float(src[offset]);
    for (int64_t d = o.rank() - 1; d >= 0; --d) {  // the next index, odometer-wise
      offset += o.strides[d];
      if (++index[d] < o.dims[d]) break;
      offset -= index[d] * o.strides[d];
      index[d] = 0;
    }
  }
  return {buffer.data(), o.dims, contiguous_strides(o.dims)};
}

// bf16 where oneDNN has no bf16 kernels (a CPU without AVX-512): the bf16 values widened to
// f32, multiplied with f32 accumulation as the bf16 units do, and rounded to bf16 once.
void bf16_gemm_in_f32(const GemmProblem& p) {
  thread_local std::vector<float> a, b, bias, residual, dst;  // kept: no allocation per product
  dst.resize(static_cast<size_t>(numel(p.dst.dims)));
  bias.clear();
  GemmProblem wide = p;
  wide.dtype = DType::f32;
  wide.a = widened(p.a, a);
  wide.b = widened(p.b, b);
  wide.dst.data = dst.data();
  if (p.bias != nullptr) {
    const bf16* src = static_cast<const bf16*>(p.bias);
    for (int64_t c = 0; c < p.cols(); ++c) bias.push_back(float(src[c * p.bias_stride]));
    wide.bias = bias.data();
    wide.bias_stride = 1;
  }
  if (p.residual != nullptr)
    wide.residual =
        widened({const_cast<void*>(p.residual), p.dst.dims, p.dst.strides}, residual).data;
  onednn_gemm(wide);
  bf16* out = static_cast<bf16*>(p.dst.data);
  for (size_t i = 0; i < dst.size(); ++i) out[i] = bf16(dst[i]);
}

}  // namespace

void run_gemm(const GemmProblem& p) {
  if (numel(p.dst.dims) == 0) return;
  const bool onednn =
      p.inner() > 0 && p.dtype != DType::f64 && (p.dtype != DType::bf16 || cpu::has_bf16());
  if (onednn) {
    onednn_gemm(p);
    return;
  }
  // Eigen's product and the empty sum write dst before the epilogue reads the residual: one in
  // dst's bytes is kept aside (for all three paths, though bf16's widens it first).
  thread_local std::vector<char> kept;
  GemmProblem q = p;
  if (p.residual != nullptr && p.residual == p.dst.data) {
    const auto* bytes = static_cast<const char*>(p.residual);
    kept.assign(bytes, bytes + numel(p.dst.dims) * dtype_size(p.dtype));
    q.residual = kept.data();
  }
  if (q.inner() == 0) {  // an empty sum; oneDNN does not take K = 0
    std::memset(q.dst.data, 0, numel(q.dst.dims) * dtype_size(q.dtype));
    apply_epilogue(q);
  } else if (q.dtype == DType::f64) {
    eigen_gemm(q);
  } else {
    bf16_gemm_in_f32(q);
  }
}

namespace {

template <typename A>
A activate(A x, Activation activation) {
  switch (activation) {
    case Activation::none:
      return x;
    case Activation::relu:
      return x > A(0) ? x : A(0);
    case Activation::gelu_tanh:
      return gelu_tanh_of(x);
    case Activation::gelu_erf:
      return gelu_erf_of(x);
  }
  return x;
}

}  // namespace

void apply_epilogue(const GemmProblem& p) {
  if (!p.has_epilogue()) return;
  visit_floating(p.dtype, "linear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    T* dst = static_cast<T*>(p.dst.data);
    const T* bias = static_cast<const T*>(p.bias);
    const T* residual = static_cast<const T*>(p.residual);
    const int64_t rows = numel(p.dst.dims) / p.cols(), cols = p.cols();
#pragma omp parallel for if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      T* row = dst + r * cols;
      for (int64_t c = 0; c < cols; ++c) {
        A v = static_cast<A>(row[c]);
        if (bias != nullptr) v += static_cast<A>(bias[c * p.bias_stride]);
        v = activate(v, p.activation);
        if (residual != nullptr) v += static_cast<A>(residual[r * cols + c]);
        row[c] = convert<T>(v);
      }
    }
  });
}

}  // namespace dlf::kernels
