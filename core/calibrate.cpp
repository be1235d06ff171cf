#include <dlf/core/calibrate.h>
#include <dlf/core/factory.h>
#include <dlf/core/op.h>
#include <dlf/core/op_class_times.h>
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/core/ops/optim.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
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

// One size of a class's case: its ops' roofline time (the predicted time at the peaks, no
// efficiency or overhead), their calls and the median time they took.
using Sample = OpClassTimes::Totals;

Sample sample(const SimSpec& peaks, OpClass c, const std::function<void()>& run) {
  SimSpec roofline = peaks;
  roofline.efficiency = {};
  roofline.launch_overhead = 0;
  run();  // warm-up
  std::vector<Sample> runs;
  for (int i = 0; i < 5; ++i) {
    OpClassTimes times(roofline);
    add_observer(&times);
    run();
    remove_observer(&times);
    runs.push_back(times.by_class()[static_cast<size_t>(c)]);
  }
  DLF_CHECK(runs[0].predicted > 0, "calibrate: the ", op_class_name(c), " case ran no ",
            op_class_name(c), " op");
  std::nth_element(runs.begin(), runs.begin() + 2, runs.end(),
                   [](const Sample& a, const Sample& b) { return a.measured < b.measured; });
  return runs[2];
}

// The line through two sizes: time = (overhead + launch) · calls + roofline / efficiency; the
// share kept within [0.01, 10] of the roofline (a noisy pair of timings can tilt the line
// anywhere).
KernelEfficiency fit(const Sample& small, const Sample& large, double launch_overhead) {
  const auto share_of = [](double s) { return std::clamp(s, 0.01, 10.0); };
  const double rise = large.predicted - small.predicted;
  const double slope = rise > 0 ? (large.measured - small.measured) / rise : 0;
  if (!(slope > 0)) {  // flat or falling: the large size alone says the share
    const double busy = large.measured - double(large.calls) * launch_overhead;
    const double share = share_of(busy > 0 ? large.predicted / busy : 1);
    return {.compute = share, .memory = share, .overhead = 0};
  }
  const double share = share_of(1 / slope);
  const double overhead = std::max(
      0.0, (small.measured - small.predicted / share) / double(small.calls) - launch_overhead);
  return {.compute = share, .memory = share, .overhead = overhead};
}

Tensor leaf(const Shape& shape) {
  Tensor t = randn(shape);
  t.requires_grad_();
  return t;
}

}  // namespace

std::array<KernelEfficiency, kOpClasses> measure_kernel_efficiency(const SimSpec& peaks) {
  // Each class's ops as a training step of the zoo's small configs runs them (gpt-mini's
  // [8, 256, 384] activations, its MLP's 1536 columns, 64-channel 32x32 feature maps, ten
  // million parameters): forward and backward at scale 8, and at scale 1 for the line's other
  // point. A case makes its tensors (scale -> the step to time).
  struct Case {
    OpClass op_class;
    std::function<std::function<void()>(int64_t)> at;
  };
  const std::vector<Case> cases = {
      {OpClass::matmul,
       [](int64_t s) {
         const Tensor x = randn({256 * s, 384}), w = randn({1536, 384});
         return [x, w] { (void)linear(x, w); };
       }},
      {OpClass::attention,
       [](int64_t s) {
         const Tensor q = leaf({s, 6, 256, 64}), k = leaf({s, 6, 256, 64}),
                      v = leaf({s, 6, 256, 64}), g = randn({s, 6, 256, 64});
         return [q, k, v, g] { scaled_dot_product_attention(q, k, v, true).backward(g); };
       }},
      {OpClass::conv,
       [](int64_t s) {
         const Tensor x = leaf({s, 64, 32, 32}), w = leaf({64, 64, 3, 3}),
                      g = randn({s, 64, 32, 32});
         return [x, w, g] { conv2d(x, w, {}, {.padding = {1, 1}}).backward(g); };
       }},
      {OpClass::normalisation,
       [](int64_t s) {
         const Tensor x = leaf({256 * s, 384}), w = leaf({384}), b = leaf({384}),
                      g = randn({256 * s, 384});
         return [x, w, b, g] { layer_norm(x, {384}, w, b).backward(g); };
       }},
      {OpClass::elementwise,
       [](int64_t s) {
         const Tensor x = leaf({256 * s, 1536}), y = leaf({256 * s, 1536}),
                      g = randn({256 * s, 1536});
         return [x, y, g] { gelu(x + y, GeluApproximation::tanh).backward(g); };
       }},
      {OpClass::optimizer,
       [](int64_t s) {
         // 16 parameters, their state distinct in memory as a model's are.
         std::vector<std::array<Tensor, 4>> params;
         for (int i = 0; i < 16; ++i) {
           const Shape shape = {s << 16};
           params.push_back({randn(shape), randn(shape), zeros(shape), zeros(shape)});
         }
         return [params] {
           for (const auto& [p, g, m, v] : params)
             adam_update_(p, g, m, v, {.lr = 1e-9, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
         };
       }},
  };
  std::array<KernelEfficiency, kOpClasses> table = {};
  for (const Case& c : cases) {
    const Sample small = sample(peaks, c.op_class, c.at(1));
    const Sample large = sample(peaks, c.op_class, c.at(8));
    table[static_cast<size_t>(c.op_class)] = fit(small, large, peaks.launch_overhead);
  }
  return table;
}

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
