#include <dlf/autograd/calibrate.h>
#include <dlf/core/factory.h>
#include <dlf/core/op.h>
#include <dlf/core/op_class_times.h>
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
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
#include <initializer_list>
#include <limits>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace dlf::autograd {
namespace {

// fn() run on a thread of its own with the caller's thread count. libgomp keeps the OpenMP team
// of every thread that ran a parallel region, and once the teams' threads outnumber the CPUs
// its idle workers stop spinning and sleep at once: every later parallel region then waits for
// a futex wake (50-100 us on a VM). Measured on the main thread, the ranks of a later `dlf
// profile` over several devices (threads of their own) ran at half speed; this thread's team
// ends with it.
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

// After moving this many last-level caches of bytes, a kernel starts fully cold: on an AMD EPYC
// VM (32 MiB of L3) a small matmul ([32, 256] by [128, 256]) took 18 us after itself, 20 more
// after copies that moved 64 MiB, 45 after 128 and 60 after 256.
constexpr double kColdCaches = 8;

// A case's step: runs its ops on one copy of its tensors and returns what they made (outputs
// and fresh gradients), which the copy keeps until its next step, as a training step keeps its
// activations and gradients. So each op writes memory that no recent op touched: written into
// a block just freed and still in cache, a streaming kernel runs about 1.6x as fast as it does in
// any model.
using Step = std::function<std::vector<Tensor>()>;

// A case at one size: copies of its tensors (each step holds one), run one after another so
// that each finds its inputs out of the last-level cache, as a training step's ops mostly do
// (rerun on the same tensors, a case would find them in this CPU's cache and run faster than in
// any model). Copies until a pass moves twice the cache's bytes (at most 16); one for a case
// bound by compute at `peaks`, whose time the cache hardly moves. Its passes are watched by
// `recorder`, which every case shares so that each op's cold start counts the bytes of all of
// them (the other sizes run between two passes of one).
class Sized {
 public:
  Sized(const SimSpec& peaks, OpClass c, const std::function<Step(int64_t)>& make, int64_t size,
        OpClassTimes& recorder)
      : class_(c), recorder_(&recorder) {
    steps_.push_back(make(size));
    kept_.emplace_back();
    (void)pass(1);  // warm-up
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
    while (int64_t(steps_.size()) < copies) {
      steps_.push_back(make(size));
      kept_.emplace_back();
    }
  }

  // One pass over the first `count` copies (all by default), its ops of the class recorded.
  Run pass(size_t count = 0) const {
    const size_t first = recorder_->ops().size();
    add_observer(recorder_);
    for (size_t i = 0; i < (count ? count : steps_.size()); ++i) kept_[i] = steps_[i]();
    remove_observer(recorder_);
    Run run;
    for (size_t i = first; i < recorder_->ops().size(); ++i) {
      const OpClassTimes::Op& op = recorder_->ops()[i];
      if (op.op_class != class_) continue;
      run.ops.push_back(op);
      run.measured += op.measured;
    }
    return run;
  }

  // A pass over the first copy right after a copy from `from` into `to` (as large as a cold
  // start's bytes between them) has emptied the caches of its kernels' code and state.
  Run cold_pass(const Tensor& from, Tensor& to) const {
    to.copy_(from);
    recorder_->moved(double(from.nbytes() + to.nbytes()));
    return pass(1);
  }

 private:
  OpClass class_;
  OpClassTimes* recorder_;
  std::vector<Step> steps_;
  mutable std::vector<std::vector<Tensor>> kept_;  // each copy's last outputs, freed when it
                                                   // runs again (after its new ones are made)
};

// The run of median time of `pass_of(i)` for each i < count, the passes taken in turn so that a
// slow spell of a shared host slows them alike; at least 7 rounds, more (up to 41) until the
// rounds have taken a second, so that a cheap case's median spans as long a stretch of the host's
// noise as a costly one's.
template <typename Pass>
std::vector<Run> median_runs(size_t count, Pass pass_of) {
  std::vector<std::vector<Run>> passes(count);
  const auto start = std::chrono::steady_clock::now();
  while (passes[0].size() < 7 ||
         (passes[0].size() < 41 &&
          std::chrono::steady_clock::now() - start < std::chrono::seconds(1))) {
    for (size_t i = 0; i < count; ++i) passes[i].push_back(pass_of(i));
  }
  std::vector<Run> medians;
  for (std::vector<Run>& runs : passes) {
    const auto middle = runs.begin() + std::ptrdiff_t(runs.size() / 2);
    std::nth_element(runs.begin(), middle, runs.end(),
                     [](const Run& a, const Run& b) { return a.measured < b.measured; });
    medians.push_back(*middle);
  }
  return medians;
}

// Seconds a sim device of `spec` charges for a run's ops.
double priced(const SimSpec& spec, const Run& run) {
  double seconds = 0;
  for (const auto& op : run.ops) {
    seconds +=
        sim::op_seconds(spec, op.flops, op.bytes, op.precision, op.op_class, op.rows, op.cold);
  }
  return seconds;
}

// The cold overhead that prices a run of class c's kernels started cold at its measured time:
// what it took beyond its price without one, over the shares of a cold start its kernels paid.
double fit_cold_overhead(SimSpec spec, OpClass c, const Run& cold) {
  double shares = 0;
  for (const auto& op : cold.ops) shares += op.cold;
  spec.efficiency[static_cast<size_t>(c)].cold_overhead = 0;
  return shares > 0 ? std::max(0.0, (cold.measured - priced(spec, cold)) / shares) : 0;
}

// How far `spec` prices the runs from their measured times: the sum of their squared log ratios,
// so that every size weighs alike whatever its time.
double misfit(const SimSpec& spec, const std::vector<Run>& runs) {
  double sum = 0;
  for (const Run& run : runs) sum += std::pow(std::log(priced(spec, run) / run.measured), 2);
  return sum;
}

// The share in [0.01, highest] that `set(efficiency, share)` gives c's efficiency in `spec` for it
// to price the runs closest to their times (misfit; golden-section search over the log share,
// along which the misfit falls to one minimum and rises again).
template <typename Set>
double fit_share(SimSpec spec, OpClass c, const std::vector<Run>& runs, Set set,
                 double highest = 10) {
  KernelEfficiency& e = spec.efficiency[static_cast<size_t>(c)];
  const auto misfit_at = [&](double log_share) {
    set(e, std::exp(log_share));
    return misfit(spec, runs);
  };
  const double golden = (std::sqrt(5.0) - 1) / 2;
  double low = std::log(0.01), high = std::log(highest);
  for (int i = 0; i < 80; ++i) {
    const double a = high - golden * (high - low), b = low + golden * (high - low);
    if (misfit_at(a) < misfit_at(b)) {
      high = b;
    } else {
      low = a;
    }
  }
  return std::exp((low + high) / 2);
}

// The curve of class c (the share `set` fits, the overhead each kernel adds and, for row-wise
// kernels, each row's) that prices the runs, smallest size to largest, closest to their times:
// the share fitted for each overhead of a grid (none, and 0.1 us to 1 ms at ten steps a decade)
// and each row overhead of another (none, and 1 ns to 10 us, where the runs' ops have rows),
// the set of least misfit.
template <typename Set>
KernelEfficiency fit_curve(SimSpec spec, OpClass c, const std::vector<Run>& runs, Set set) {
  KernelEfficiency& e = spec.efficiency[static_cast<size_t>(c)];
  const bool row_wise = std::any_of(runs.begin(), runs.end(), [](const Run& run) {
    return std::any_of(run.ops.begin(), run.ops.end(), [](const auto& op) { return op.rows > 0; });
  });
  const auto grid = [](int step, double first) {
    return step < 0 ? 0 : first * std::pow(10.0, step / 10.0);
  };
  KernelEfficiency best;
  double least = std::numeric_limits<double>::infinity();
  for (int row_step = -1; row_step <= (row_wise ? 40 : -1); ++row_step) {
    e.row_overhead = grid(row_step, 1e-9);
    for (int step = -1; step <= 40; ++step) {
      e.overhead = grid(step, 1e-7);
      set(e, fit_share(spec, c, runs, set));
      if (const double m = misfit(spec, runs); m < least) {
        least = m;
        best = e;
      }
    }
  }
  return best;
}

Tensor leaf(const Shape& shape, MemoryFormat format = MemoryFormat::contiguous) {
  Tensor t = randn(shape).contiguous(format);
  t.requires_grad_();
  return t;
}

// Backward from `out` by `g` into fresh gradients of `leaves`; returns out and them (a Step's
// outputs).
std::vector<Tensor> backward_into(const Tensor& out, const Tensor& g,
                                  std::initializer_list<Tensor> leaves) {
  for (const Tensor& t : leaves) t.set_grad({});
  out.backward(g);
  std::vector<Tensor> made = {out};
  for (const Tensor& t : leaves) made.push_back(t.grad());
  return made;
}

std::array<KernelEfficiency, kOpClasses> kernel_efficiency(const SimSpec& peaks) {
  // Each class's ops as training steps of the zoo's small configs run them (gpt-mini's
  // [8, 256, 384] activations and its MLP's 1536 columns, UNet's 64-channel 32x32 feature maps,
  // parameters of 8 thousand to half a million elements), forward and backward, at a ladder of
  // sizes from a small kernel to a large one: the curve fitted through them gives small kernels
  // their overhead and large ones their share of the peaks. A case makes one copy of its tensors
  // (size -> the step to time: a scale, or an index into the attention case's shapes) and says
  // which of its class's shares it fits: both alike, or (element-wise, whose streaming kernels and
  // transcendental ones sit far apart from one share) the memory share and the overhead from
  // streaming kernels, then the compute share from transcendental ones.
  enum class Fits { both, memory, compute };
  struct Case {
    OpClass op_class;
    Fits fits;
    std::vector<int64_t> sizes;
    std::function<Step(int64_t)> at;
  };
  const std::vector<int64_t> rows = {1, 4, 16, 64};  // of 32 rows each: 32 to 2048
  // The two attention classes time the same step, each its own kernels: n sequences of t tokens
  // as the zoo's models run them, from a small kernel to gpt-mini's 48 causal heads of 256 tokens
  // through ViT's 192 of 50, their rows' lengths differing (the row overhead is fitted from
  // that). q, k and v are strided views of one linear projection, as GPT's and ViT's are, its
  // weight's gradient computed after theirs: read from a fresh projection's output, attention
  // runs 15-20 % slower than from a tensor it read the pass before.
  struct Sequences {
    int64_t n, t;
    bool causal;
  };
  static constexpr std::array<Sequences, 5> kAttention = {
      {{8, 64, false}, {64, 64, false}, {192, 50, false}, {12, 256, true}, {48, 256, true}}};
  const auto attention = [](int64_t size) {
    const auto [n, t, causal] = kAttention[size_t(size)];
    const Tensor x = randn({n, t, 192}), w = leaf({3 * 64, 192}), g = randn({n, t, 64});
    return [x, w, g, causal] {
      const std::vector<Tensor> qkv = unbind(linear(x, w).view({x.size(0), x.size(1), 3, 64}), 2);
      return backward_into(scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], causal), g, {w});
    };
  };
  const std::vector<Case> cases = {
      {OpClass::matmul, Fits::both, rows,
       [](int64_t s) {  // 32 x 24 outputs to the MLP's 2048 x 1536, the weight growing too
         const Tensor x = randn({32 * s, 384}), w = randn({24 * s, 384});
         return [x, w] { return std::vector<Tensor>{linear(x, w)}; };
       }},
      {OpClass::attention, Fits::both, {0, 1, 2, 3, 4}, attention},
      {OpClass::attention_backward, Fits::both, {0, 1, 2, 3, 4}, attention},
      {OpClass::conv,
       Fits::both,
       {1, 4, 16},
       [](int64_t s) {
         // Channels last, as UNet's feature maps are (oneDNN's convolutions run faster so).
         const Tensor x = leaf({s, 64, 32, 32}, MemoryFormat::channels_last),
                      w = leaf({64, 64, 3, 3}),
                      g = randn({s, 64, 32, 32}).contiguous(MemoryFormat::channels_last);
         return [x, w, g] {
           return backward_into(conv2d(x, w, {}, {.padding = {1, 1}}), g, {x, w});
         };
       }},
      {OpClass::normalisation, Fits::both, rows,
       [](int64_t s) {
         const Tensor x = leaf({32 * s, 384}), w = leaf({384}), b = leaf({384}),
                      g = randn({32 * s, 384});
         return [x, w, b, g] { return backward_into(layer_norm(x, {384}, w, b), g, {x, w, b}); };
       }},
      {OpClass::elementwise, Fits::memory, rows,
       [](int64_t s) {
         // A bias added and scaled: forward adds and scales, backward scales and sums the rows
         // for the bias's gradient.
         const Tensor x = leaf({32 * s, 1536}), b = leaf({1536}), g = randn({32 * s, 1536});
         return [x, b, g] { return backward_into((x + b) * 0.5, g, {x, b}); };
       }},
      {OpClass::elementwise,
       Fits::compute,
       {8, 64},
       [](int64_t s) {
         const Tensor x = leaf({32 * s, 1536}), g = randn({32 * s, 1536});
         return [x, g] {  // GPT's GELU and BERT's and ViT's
           std::vector<Tensor> made = backward_into(gelu(x, GeluApproximation::tanh), g, {x});
           for (Tensor& t : backward_into(gelu(x, GeluApproximation::erf), g, {x}))
             made.push_back(std::move(t));
           return made;
         };
       }},
      {OpClass::optimizer, Fits::both, rows,
       [](int64_t s) {
         // 16 parameters of 8192 s elements, their state distinct in memory as a model's are.
         std::vector<std::array<Tensor, 4>> params;
         for (int i = 0; i < 16; ++i) {
           const Shape shape = {s << 13};
           params.push_back({randn(shape), randn(shape), zeros(shape), zeros(shape)});
         }
         const Tensor lr_and_step = from_vector<double>({1e-9, 1}, {2});
         return [params, lr_and_step] {
           for (const auto& [p, g, m, v] : params)
             adam_update_(p, g, m, v, lr_and_step, {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
           return std::vector<Tensor>{};  // in place
         };
       }},
  };
  SimSpec spec = peaks;
  spec.efficiency = {};
  OpClassTimes recorder(peaks, /*keep_ops=*/true);  // its ops' costs, times and cold starts
  // What a cold start's bytes move through the caches before a kernel timed cold.
  const Tensor from = zeros({int64_t(peaks.cold_bytes / 8)});
  Tensor to = zeros_like(from);
  for (const Case& c : cases) {
    std::vector<Sized> sizes;
    for (const int64_t size : c.sizes) sizes.emplace_back(peaks, c.op_class, c.at, size, recorder);
    const std::vector<Run> runs =
        median_runs(sizes.size(), [&](size_t i) { return sizes[i].pass(); });
    KernelEfficiency& e = spec.efficiency[static_cast<size_t>(c.op_class)];
    if (c.fits == Fits::compute) {
      // The overheads stay the streaming kernels'. No share above the matmul peak: where these
      // kernels are bound by memory their compute share is not seen, and the peak is left.
      e.compute = fit_share(
          spec, c.op_class, runs, [](KernelEfficiency& k, double share) { k.compute = share; }, 1);
      continue;
    }
    const auto fit = [&] {
      return c.fits == Fits::memory
                 ? fit_curve(spec, c.op_class, runs,
                             [](KernelEfficiency& k, double share) { k.memory = share; })
                 : fit_curve(spec, c.op_class, runs, [](KernelEfficiency& k, double share) {
                     k.compute = k.memory = share;
                   });
    };
    e = fit();
    if (peaks.cold_bytes <= 0) continue;
    // The smallest size started cold: its cold overhead, then the curve again with it (the
    // passes above start some kernels cold too, after the other sizes), then the overhead again.
    const Run cold = median_runs(1, [&](size_t) { return sizes[0].cold_pass(from, to); })[0];
    for (int round = 0; round < 2; ++round) {
      e.cold_overhead = fit_cold_overhead(spec, c.op_class, cold);
      e = fit();
    }
    e.cold_overhead = fit_cold_overhead(spec, c.op_class, cold);
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
  s.cold_bytes = kColdCaches * double(last_level_cache_bytes());
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

}  // namespace dlf::autograd
