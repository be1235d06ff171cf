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
#include <dlf/device/sim_device.h>
#include <dlf/device/threads.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace dlf {
namespace {

// fn() run on a thread of its own with the caller's thread count. libgomp keeps the OpenMP team
// of every thread that ran a parallel region, and once the teams' threads outnumber the CPUs
// its idle workers stop spinning and sleep at once: every later parallel region then waits for
// a futex wake (50-100 us on a VM). Measured on the main thread, `dlf profile`'s ranks (threads
// of their own) trained gpt-nano at half `dlf train`'s speed; this thread's team ends with it.
template <typename Fn>
auto on_own_thread(Fn&& fn) {
  std::optional<decltype(fn())> result;
  std::exception_ptr failure;
  const int threads = num_threads();
  std::thread([&] {
    try {
      set_thread_num_threads(threads);
      result = fn();
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

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
  return 2.0 * double(m * k * n) / median_seconds(7, [&] { (void)linear(x, w); });
}

// A case's ops of one class, as one timed pass over its copies ran them.
struct Run {
  std::vector<OpClassTimes::Op> ops;
  double measured = 0;  // their wall seconds
};

// The last-level cache as Linux lists it (sysconf's figure can be the whole host's in a VM),
// 32 MiB where it lists none.
int64_t last_level_cache_bytes() {
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index3/size");
  int64_t kib = 0;
  return file >> kib && kib > 0 ? kib << 10 : int64_t(32) << 20;
}

// A case at one size: copies of its tensors (each closure holds one), run one after another so
// that each finds its inputs out of the last-level cache, as a training step's ops mostly do
// (rerun on the same tensors, a case would find them in this CPU's cache and run faster than in
// any model). Copies until a pass moves twice the cache's bytes (at most 16); one for a case
// bound by compute at `peaks`, whose time the cache hardly moves.
class Sized {
 public:
  Sized(const SimSpec& peaks, OpClass c, const std::function<std::function<void()>(int64_t)>& make,
        int64_t scale)
      : class_(c) {
    sets_.push_back(make(scale));
    sets_[0]();  // warm-up, and the bytes one copy moves
    double bytes = 0, compute_seconds = 0;
    for (const auto& op : pass(1).ops) {
      bytes += op.bytes;
      compute_seconds += op.flops / peaks.peak_flops(op.precision);
    }
    DLF_CHECK(bytes > 0, "calibrate: the ", op_class_name(c), " case ran no ", op_class_name(c),
              " op");
    if (compute_seconds > bytes / peaks.memory_bandwidth) return;
    const auto copies =
        std::clamp(int64_t(std::ceil(2.0 * double(last_level_cache_bytes()) / bytes)), int64_t(1),
                   int64_t(16));
    while (int64_t(sets_.size()) < copies) sets_.push_back(make(scale));
  }

  // One pass over the first `count` copies (all by default), its ops of the class recorded.
  Run pass(size_t count = 0) const {
    OpClassTimes times(SimSpec{}, /*keep_ops=*/true);  // its ops are read, not its prices
    add_observer(&times);
    for (size_t i = 0; i < (count ? count : sets_.size()); ++i) sets_[i]();
    remove_observer(&times);
    Run run;
    for (const auto& op : times.ops()) {
      if (op.op_class != class_) continue;
      run.ops.push_back(op);
      run.measured += op.measured;
    }
    return run;
  }

 private:
  OpClass class_;
  std::vector<std::function<void()>> sets_;
};

// The pass of median time of each size, the sizes' passes alternating so that a slow spell of a
// shared host slows both alike; at least 7 rounds, more (up to 41) until the rounds have taken a
// second, so that a cheap case's median spans as long a stretch of the host's noise as a costly
// one's.
std::pair<Run, Run> median_passes(const Sized& small, const Sized& large) {
  std::vector<Run> smalls, larges;
  const auto start = std::chrono::steady_clock::now();
  while (smalls.size() < 7 || (smalls.size() < 41 && std::chrono::steady_clock::now() - start <
                                                         std::chrono::seconds(1))) {
    smalls.push_back(small.pass());
    larges.push_back(large.pass());
  }
  const auto median = [](std::vector<Run>& runs) {
    const auto middle = runs.begin() + std::ptrdiff_t(runs.size() / 2);
    std::nth_element(runs.begin(), middle, runs.end(),
                     [](const Run& a, const Run& b) { return a.measured < b.measured; });
    return *middle;
  };
  return {median(smalls), median(larges)};
}

// Seconds a sim device of `spec` charges for a run's ops.
double priced(const SimSpec& spec, const Run& run) {
  double seconds = 0;
  for (const auto& op : run.ops)
    seconds += sim::op_seconds(spec, op.flops, op.bytes, op.precision, op.op_class);
  return seconds;
}

// The share in [0.01, 10] that `set(efficiency, share)` gives c's efficiency in `spec` for it to
// price `run` at its measured time (bisection: a larger share prices it shorter).
template <typename Set>
double solve_share(SimSpec spec, OpClass c, const Run& run, Set set) {
  double low = std::log(0.01), high = std::log(10.0);
  for (int i = 0; i < 60; ++i) {
    const double mid = (low + high) / 2;
    set(spec.efficiency[static_cast<size_t>(c)], std::exp(mid));
    (priced(spec, run) > run.measured ? low : high) = mid;
  }
  return std::exp((low + high) / 2);
}

// What each kernel of the small size adds beyond `spec`'s price for it.
double overhead_of(const SimSpec& spec, const Run& small) {
  return std::max(0.0, (small.measured - priced(spec, small)) / double(small.ops.size()));
}

Tensor leaf(const Shape& shape, MemoryFormat format = MemoryFormat::contiguous) {
  Tensor t = randn(shape).contiguous(format);
  t.requires_grad_();
  return t;
}

std::array<KernelEfficiency, kOpClasses> kernel_efficiency(const SimSpec& peaks) {
  // Each class's ops as a training step of the zoo's small configs runs them (gpt-mini's
  // [8, 256, 384] activations, its MLP's 1536 columns, 64-channel 32x32 feature maps, ten
  // million parameters): forward and backward at scale 8, and at scale 1 for what each kernel
  // adds. A case makes one copy of its tensors (scale -> the step to time) and says which of
  // its class's shares it fits: both alike, or (element-wise, whose streaming kernels and
  // transcendental ones sit far apart from one share) the memory share from streaming kernels,
  // then the compute share from transcendental ones.
  enum class Fits { both, memory, compute };
  struct Case {
    OpClass op_class;
    Fits fits;
    std::function<std::function<void()>(int64_t)> at;
  };
  const std::vector<Case> cases = {
      {OpClass::matmul, Fits::both,
       [](int64_t s) {
         const Tensor x = randn({256 * s, 384}), w = randn({1536, 384});
         return [x, w] { (void)linear(x, w); };
       }},
      {OpClass::attention, Fits::both,
       [](int64_t s) {
         const Tensor q = leaf({s, 6, 256, 64}), k = leaf({s, 6, 256, 64}),
                      v = leaf({s, 6, 256, 64}), g = randn({s, 6, 256, 64});
         return [q, k, v, g] { scaled_dot_product_attention(q, k, v, true).backward(g); };
       }},
      {OpClass::conv, Fits::both,
       [](int64_t s) {
         // Channels last, as UNet's feature maps are (oneDNN's convolutions run faster so).
         const Tensor x = leaf({s, 64, 32, 32}, MemoryFormat::channels_last),
                      w = leaf({64, 64, 3, 3}),
                      g = randn({s, 64, 32, 32}).contiguous(MemoryFormat::channels_last);
         return [x, w, g] { conv2d(x, w, {}, {.padding = {1, 1}}).backward(g); };
       }},
      {OpClass::normalisation, Fits::both,
       [](int64_t s) {
         const Tensor x = leaf({256 * s, 384}), w = leaf({384}), b = leaf({384}),
                      g = randn({256 * s, 384});
         return [x, w, b, g] { layer_norm(x, {384}, w, b).backward(g); };
       }},
      {OpClass::elementwise, Fits::memory,
       [](int64_t s) {
         const Tensor x = leaf({256 * s, 1536}), y = leaf({256 * s, 1536}),
                      g = randn({256 * s, 1536});
         return [x, y, g] { ((x + y) * 0.5).backward(g); };
       }},
      {OpClass::elementwise, Fits::compute,
       [](int64_t s) {
         const Tensor x = leaf({256 * s, 1536}), g = randn({256 * s, 1536});
         return [x, g] {  // GPT's GELU and BERT's and ViT's
           gelu(x, GeluApproximation::tanh).backward(g);
           gelu(x, GeluApproximation::erf).backward(g);
         };
       }},
      {OpClass::optimizer, Fits::both,
       [](int64_t s) {
         // 16 parameters, their state distinct in memory as a model's are.
         std::vector<std::array<Tensor, 4>> params;
         for (int i = 0; i < 16; ++i) {
           const Shape shape = {s << 16};
           params.push_back({randn(shape), randn(shape), zeros(shape), zeros(shape)});
         }
         const Tensor lr_and_step = from_vector<double>({1e-9, 1}, {2});
         return [params, lr_and_step] {
           for (const auto& [p, g, m, v] : params)
             adam_update_(p, g, m, v, lr_and_step, {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
         };
       }},
  };
  SimSpec spec = peaks;
  spec.efficiency = {};
  for (const Case& c : cases) {
    const auto [small, large] =
        median_passes(Sized(peaks, c.op_class, c.at, 1), Sized(peaks, c.op_class, c.at, 8));
    KernelEfficiency& e = spec.efficiency[static_cast<size_t>(c.op_class)];
    if (c.fits == Fits::compute) {
      const double overhead = std::exchange(e.overhead, 0);
      e.compute = solve_share(spec, c.op_class, large,
                              [](KernelEfficiency& k, double share) { k.compute = share; });
      e.overhead = overhead;
      continue;
    }
    e.overhead = 0;
    e.compute = e.memory =
        solve_share(spec, c.op_class, large,
                    [](KernelEfficiency& k, double share) { k.compute = k.memory = share; });
    e.overhead = overhead_of(spec, small);
  }
  return spec.efficiency;
}

SimSpec cpu_spec() {
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

}  // namespace

SimSpec measure_cpu() { return on_own_thread(cpu_spec); }

std::array<KernelEfficiency, kOpClasses> measure_kernel_efficiency(const SimSpec& peaks) {
  return on_own_thread([&] { return kernel_efficiency(peaks); });
}

}  // namespace dlf
