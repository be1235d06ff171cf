#include <dlf/core/calibrate.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace dlf {
namespace {

// The median seconds of `reps` calls of fn after one untimed call.
template <typename Fn>
double median_seconds(int reps, Fn&& fn) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[size_t(reps / 2)];
}

double matmul_flops(DType dtype) {
  const int64_t m = 1024, k = 768, n = 3072;
  const Tensor x = randn({m, k}).to(dtype), w = randn({n, k}).to(dtype);
  return 2.0 * double(m * k * n) / median_seconds(3, [&] { (void)linear(x, w); });
}

}  // namespace

SimSpec measure_cpu() {
  SimSpec s;
  s.name = "cpu (measured)";
  s.memory_bytes = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  s.peak_flops_f32 = matmul_flops(DType::f32);
  s.peak_flops_bf16 = matmul_flops(DType::bf16);
  s.peak_flops_f64 = matmul_flops(DType::f64);
  const Tensor big = zeros({int64_t(32) << 20});  // 128 MiB of f32
  s.memory_bandwidth = 2.0 * double(big.nbytes()) / median_seconds(5, [&] { (void)big.clone(); });
  const Tensor one = zeros({1});
  s.launch_overhead = median_seconds(5,
                                     [&] {
                                       for (int i = 0; i < 1000; ++i) (void)(one + one);
                                     }) /
                      1000;
  s.host_link = s.interconnect = {.bandwidth = s.memory_bandwidth, .latency = s.launch_overhead};
  s.host = {.flops = s.peak_flops_f32, .memory_bandwidth = s.memory_bandwidth};  // itself
  s.validate();
  return s;
}

}  // namespace dlf
