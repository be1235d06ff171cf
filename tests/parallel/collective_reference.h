// The collectives' inputs and their rank-order results, computed sequentially: what every
// backend (in-process, MPI) must give bit for bit.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "test_util.h"

namespace dlf::test {

inline constexpr int64_t kNumel = 1001;  // not a multiple of any world size: uneven parts

/// Rank r's input: values whose sums depend on the order they are added in.
inline Tensor input_of(int rank, DType dtype) {
  std::vector<double> v(kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    v[i] = !is_floating(dtype)
               ? double((rank + 1) * (i % 17) - 40)
               : std::sin(0.37 * double(i + 1) * (rank + 1)) * std::pow(10.0, rank % 3);
  return from_vector(v, {kNumel}).to(dtype);
}

/// The inputs of `ranks` reduced in that order: sum, avg (sum / n) or max, in the dtype's
/// accumulator, as the contract says.
inline std::vector<double> reference(const std::vector<int>& ranks, DType dtype,
                                     parallel::ReduceOp op) {
  using parallel::ReduceOp;
  const int n = static_cast<int>(ranks.size());
  std::vector<double> out(kNumel);
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<double>> f64;
  for (int r : ranks) {
    f32.push_back(input_of(r, dtype).to(DType::f32).to_vector<float>());
    f64.push_back(input_of(r, dtype).to_vector<double>());
  }
  for (int64_t i = 0; i < kNumel; ++i) {
    if (dtype == DType::f32 || dtype == DType::bf16) {
      float acc = f32[0][i];
      for (int r = 1; r < n; ++r) {
        float x = f32[r][i];
        acc = op == ReduceOp::max ? std::max(acc, x) : acc + x;
      }
      if (op == ReduceOp::avg) acc /= float(n);
      out[i] = dtype == DType::bf16 ? double(float(bf16(acc))) : double(acc);
    } else {
      double acc = f64[0][i];
      for (int r = 1; r < n; ++r) {
        double x = f64[r][i];
        acc = op == ReduceOp::max ? std::max(acc, x) : acc + x;
      }
      if (op == ReduceOp::avg) acc /= n;
      out[i] = acc;
    }
  }
  return out;
}

/// The same over ranks 0 .. n - 1.
inline std::vector<double> reference(int n, DType dtype, parallel::ReduceOp op) {
  std::vector<int> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  return reference(ranks, dtype, op);
}

/// Every element of `t` equals `expected` exactly.
inline void require_equal(const Tensor& t, const std::vector<double>& expected) {
  const std::vector<double> got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) FAIL_CHECK("element ", i, ": ", got[i], " != ", expected[i]);
  }
}

}  // namespace dlf::test
