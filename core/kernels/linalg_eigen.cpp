// f64 matrix products through Eigen: strided operands mapped in place, parallel over batches.
// GCC 12 reports false (maybe-)uninitialized values inside Eigen's AVX-512 code (in GCC's own
// intrinsics header) once it is inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>

#include "core/kernels/linalg_gemm.h"

namespace dlf::kernels {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <typename M>
using ConstMap = Eigen::Map<const M, 0, Eigen::OuterStride<>>;

// Calls fn with an Eigen view of the strided rows x cols matrix at ptr: a direct map when a
// stride is 1 (row- or column-major), else a dense copy (Eigen's GEMM wants a unit stride).
template <typename Fn>
void with_matrix(const double* ptr, int64_t rows, int64_t cols, int64_t row_stride,
                 int64_t col_stride, Fn&& fn) {
  if (col_stride == 1 || cols == 1) {
    fn(ConstMap<RowMat>(ptr, rows, cols, Eigen::OuterStride<>(row_stride)));
  } else if (row_stride == 1 || rows == 1) {
    fn(ConstMap<ColMat>(ptr, rows, cols, Eigen::OuterStride<>(col_stride)));
  } else {
    using Strided = Eigen::Map<const RowMat, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
    RowMat dense = Strided(ptr, rows, cols,
                           Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(row_stride, col_stride));
    fn(ConstMap<RowMat>(dense.data(), rows, cols, Eigen::OuterStride<>(cols)));
  }
}

}  // namespace

void eigen_gemm(const GemmProblem& p) {
  DLF_CHECK(p.dtype == DType::f64, "eigen_gemm: expected f64, got ", dtype_name(p.dtype));
  const int64_t batch = p.batch(), n = p.rows(), k = p.inner(), m = p.cols();
  const int64_t rank = p.dst.rank();
  const auto* a = static_cast<const double*>(p.a.data);
  const auto* b = static_cast<const double*>(p.b.data);
  auto* dst = static_cast<double*>(p.dst.data);
  // One batch per thread; inside a parallel region Eigen's GEMM runs single-threaded, and a
  // single batch gets Eigen's own parallel GEMM.
#pragma omp parallel for if (batch > 1)
  for (int64_t i = 0; i < batch; ++i) {
    int64_t rem = i, a_offset = 0, b_offset = 0;
    for (int64_t d = rank - 3; d >= 0; --d) {
      const int64_t idx = rem % p.dst.dims[d];
      rem /= p.dst.dims[d];
      if (p.a.dims[d] != 1) a_offset += idx * p.a.strides[d];
      if (p.b.dims[d] != 1) b_offset += idx * p.b.strides[d];
    }
    Eigen::Map<RowMat> c(dst + i * n * m, n, m);
    with_matrix(a + a_offset, n, k, p.a.strides[rank - 2], p.a.strides[rank - 1],
                [&](const auto& lhs) {
                  with_matrix(b + b_offset, k, m, p.b.strides[rank - 2], p.b.strides[rank - 1],
                              [&](const auto& rhs) { c.noalias() = lhs * rhs; });
                });
  }
  apply_epilogue(p);
}

}  // namespace dlf::kernels
