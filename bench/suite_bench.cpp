// The cases of `dlf bench run` (perf/suite.cpp lists them and their tiers): one case per process,
// one JSON line (shared/BENCH.md) with every repetition's time besides the median, and the
// FLOPs and bytes of one call so the suite can put it against the host's peaks of the same run.
//
// This file is the suite's harness, as asv's benchmarks are: `dlf bench compare` and a backfill
// build it against the library of the revision under test, so it uses only the public API that
// dlf has kept since 2026-11-25 (factories, ops, nn::functional, the models' UNet and GPT, AdamW).
//
//   suite_bench --list
//   suite_bench --case NAME [--threads N] [--reps N] [--warmup N] [--rep-ms MS]
//
// Each repetition is timed twice: wall clock, and the process's CPU time (the suite's cases run on
// one thread, where CPU time leaves out the time spent waiting for a core on a loaded machine).
//
// DLF_BENCH_SLOWDOWN=PREFIX=FACTOR[,...] makes every case whose name starts with PREFIX that
// many times slower: after each repetition's calls the harness busy-waits (factor - 1) times
// the CPU time they took, inside the timed region. It is the regression `dlf bench compare` is
// calibrated on (docs/performance_tracking.md); no kernel carries test code for it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <time.h>

#include <dlf/dlf.h>

#include "bench/bare_matmul.h"
#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string name;
  bool list = false;
  int threads = 1, reps = 10, warmup = 2;
  double rep_ms = 20;  // calls are batched so that one repetition takes at least this long
};

// What one case measures: `call` is one call of the thing timed; flops and bytes are one call's
// (0 where they do not apply); the headline is GFLOP/s, GB/s or items/s from the median.
struct Case {
  std::string bench = {};
  std::function<void()> call = {};
  double flops = 0, bytes = 0;
  double items = 0;                     // items (images, tokens) per call, for a throughput
  std::string item_unit = {};           // headline: img/s, tok/s
  std::function<void()> baseline = {};  // a bare oneDNN call of the same work, or empty
};

// The slowdown DLF_BENCH_SLOWDOWN asks of `name`: 1 unless a prefix matches.
double slowdown_of(const std::string& name) {
  const char* knob = std::getenv("DLF_BENCH_SLOWDOWN");
  if (knob == nullptr) return 1;
  std::string spec = knob;
  for (size_t start = 0; start <= spec.size();) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const size_t eq = item.rfind('=');
    DLF_CHECK(eq != std::string::npos, "DLF_BENCH_SLOWDOWN: '", item,
              "' is not PREFIX=FACTOR (e.g. group_norm=1.10)");
    const double factor = std::strtod(item.c_str() + eq + 1, nullptr);
    DLF_CHECK(factor >= 1 && factor < 100, "DLF_BENCH_SLOWDOWN: the factor of '", item,
              "' must be from 1 to 100");
    if (name.rfind(item.substr(0, eq), 0) == 0) return factor;
    start = end + 1;
  }
  return 1;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The CPU time this process has used, in ms: with one thread, what a call costs whatever else
// the machine runs (time waiting for a core is not in it).
double cpu_ms_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// The timed repetitions, never inlined (a profiler can single them out): `calls` calls of `fn` a
// repetition, each repetition stretched by `slowdown`; the wall-clock and the process's CPU time
// of one call in each. The stretch is a busy-wait until the repetition has used `slowdown` times
// the CPU time its calls did, so it costs what a slower kernel would, on a loaded machine too.
[[gnu::noinline]] void timed_reps(const std::function<void()>& fn, int reps, int calls,
                                  double slowdown, std::vector<double>& wall_ms,
                                  std::vector<double>& cpu_ms) {
  for (int r = 0; r < reps; ++r) {
    const double cpu_start = cpu_ms_now();
    const Clock::time_point start = Clock::now();
    for (int c = 0; c < calls; ++c) fn();
    if (slowdown > 1) {
      const double until = cpu_start + (cpu_ms_now() - cpu_start) * slowdown;
      while (cpu_ms_now() < until) {
      }
    }
    wall_ms.push_back(ms_since(start) / calls);
    cpu_ms.push_back((cpu_ms_now() - cpu_start) / calls);
  }
}

Tensor randn_f32(const Shape& shape, Generator& gen) { return randn(shape, {}, &gen); }

Case matmul_case(DType dtype, int64_t m, int64_t k, int64_t n, Generator& gen) {
  const Tensor a = randn({m, k}, {.dtype = dtype}, &gen), b = randn({k, n}, {.dtype = dtype}, &gen);
  auto bare = std::make_shared<bench::BareMatmul>(a, b, false, Tensor(), false);
  return {.bench = "matmul",
          .call = [a, b] { matmul(a, b); },
          .flops = 2.0 * double(m * k * n),
          .bytes = double((m * k + k * n + m * n) * dtype_size(dtype)),
          .baseline = [bare] { (*bare)(); }};
}

// One training step of `model`: zero_grad, `loss` (forward on a fixed batch), backward, AdamW
// (lr 3e-4, betas 0.9/0.95, weight decay 0.1, as the peer's).
Case training_step(const std::shared_ptr<nn::Module>& model, std::function<Tensor()> loss,
                   double items, const std::string& item_unit) {
  auto opt = std::make_shared<nn::optim::AdamW>(
      std::vector<nn::optim::ParamGroup>{{.params = model->parameters(), .weight_decay = 0.1}},
      nn::optim::AdamWOptions{.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  return {.bench = "train",
          .call =
              [model, opt, loss] {
                opt->zero_grad();
                loss().backward();
                opt->step();
              },
          .items = items,
          .item_unit = item_unit};
}

Case unet_step(const std::string& name, int64_t batch, Generator& gen) {
  const models::UNetConfig config = models::unet_config(name);
  auto unet = std::make_shared<models::UNet>(config);
  auto ddpm = std::make_shared<models::DDPM>();
  const int64_t s = config.image;
  const Tensor x0 = rand({batch, config.channels, s, s}, {}, &gen) * 2.0 - 1.0;
  const Tensor noise = randn({batch, config.channels, s, s}, {}, &gen);
  const Tensor t = randint(0, ddpm->steps(), {batch}, {.dtype = DType::i64}, &gen);
  return training_step(
      unet, [unet, ddpm, x0, noise, t] { return ddpm->loss(*unet, x0, noise, t); }, double(batch),
      "img/s");
}

Case gpt_step(const std::string& name, int64_t batch, int64_t seq, bool recompute, Generator& gen) {
  const models::GPTConfig config = models::gpt_config(name);
  auto gpt = std::make_shared<models::GPT>(config);
  if (recompute) gpt->recompute();  // full: every block (the default since this case began)
  const Tensor x = randint(0, config.vocab, {batch, seq}, {.dtype = DType::i64}, &gen);
  const Tensor y = randint(0, config.vocab, {batch, seq}, {.dtype = DType::i64}, &gen);
  return training_step(
      gpt, [gpt, x, y] { return gpt->loss(x, y); }, double(batch * seq), "tok/s");
}

// Every case by name. Element-wise and normalisation cases count the bytes they must move at
// least (inputs read once, outputs written once), so GB/s is comparable with the bandwidth peak.
std::map<std::string, std::function<Case(Generator&)>> cases() {
  const Shape image{8, 64, 32, 32};
  const double image_bytes = 8.0 * 64 * 32 * 32 * 4;
  return {
      {"peak matmul f32 M1024 K1024 N1024",
       [](Generator& gen) {
         const Tensor a = randn_f32({1024, 1024}, gen), b = randn_f32({1024, 1024}, gen);
         auto bare = std::make_shared<bench::BareMatmul>(a, b, false, Tensor(), false);
         return Case{.bench = "peak", .call = [bare] { (*bare)(); }, .flops = 2.0 * (1 << 30)};
       }},
      {"peak bandwidth copy 64 MiB",
       [](Generator&) {
         const size_t bytes = size_t(64) << 20;
         auto from = std::make_shared<std::vector<char>>(bytes, 1);
         auto to = std::make_shared<std::vector<char>>(bytes, 0);
         return Case{.bench = "peak",
                     .call = [from, to] { std::memcpy(to->data(), from->data(), from->size()); },
                     .bytes = 2.0 * double(bytes)};
       }},
      {"matmul f32 M512 K512 N512",
       [](Generator& gen) { return matmul_case(DType::f32, 512, 512, 512, gen); }},
      {"matmul bf16 M512 K512 N512",
       [](Generator& gen) { return matmul_case(DType::bf16, 512, 512, 512, gen); }},
      {"dispatch add f32 [16]",
       [](Generator& gen) {
         const Tensor a = randn_f32({16}, gen), b = randn_f32({16}, gen);
         return Case{.bench = "dispatch", .call = [a, b] { (void)(a + b); }};
       }},
      {"add f32 [8,64,32,32]",
       [=](Generator& gen) {
         const Tensor a = randn_f32(image, gen), b = randn_f32(image, gen);
         return Case{.bench = "op", .call = [a, b] { (void)(a + b); }, .bytes = 3 * image_bytes};
       }},
      {"group_norm forward f32 [8,64,32,32] g32",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), w = randn_f32({64}, gen), b = randn_f32({64}, gen);
         return Case{.bench = "op",
                     .call = [x, w, b] { group_norm(x, 32, w, b); },
                     .bytes = 2 * image_bytes};
       }},
      {"silu forward+backward f32 [8,64,32,32]",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), g = randn_f32(image, gen);
         x.requires_grad_();
         return Case{.bench = "op",
                     .call = [x, g] { autograd::grad({nn::functional::silu(x)}, {x}, {g}); },
                     .bytes = 5 * image_bytes};
       }},
      {"conv2d forward f32 [8,64,32,32] 64->64 3x3",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), w = randn_f32({64, 64, 3, 3}, gen);
         return Case{.bench = "op",
                     .call =
                         [x, w] {
                           conv2d(x, w, Tensor(), {.padding = {1, 1}});
                         },
                     .flops = 2.0 * 8 * 64 * 32 * 32 * 64 * 9};
       }},
      {"layer_norm forward f32 [2048,768]",
       [](Generator& gen) {
         const Tensor x = randn_f32({2048, 768}, gen), w = randn_f32({768}, gen);
         return Case{.bench = "op",
                     .call = [x, w] { layer_norm(x, {768}, w, w); },
                     .bytes = 2.0 * 2048 * 768 * 4};
       }},
      {"softmax f32 [512,1024]",
       [](Generator& gen) {
         const Tensor x = randn_f32({512, 1024}, gen);
         return Case{.bench = "op", .call = [x] { softmax(x, 1); }, .bytes = 2.0 * 512 * 1024 * 4};
       }},
      {"train unet-tiny fp32 batch 8",
       [](Generator& gen) { return unet_step("unet-tiny", 8, gen); }},
      {"train gpt-nano fp32 batch 8x64",
       [](Generator& gen) { return gpt_step("gpt-nano", 8, 64, false, gen); }},
      {"train gpt-mini fp32 batch 4x128",
       [](Generator& gen) { return gpt_step("gpt-mini", 4, 128, false, gen); }},
      {"train gpt-mini fp32 recompute batch 4x128",
       [](Generator& gen) { return gpt_step("gpt-mini", 4, 128, true, gen); }},
  };
}

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"The cases of dlf bench run, one a process: one JSON line"};
  app.add_flag("--list", o.list, "print the cases' names, one a line");
  app.add_option("--case", o.name, "the case to run");
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--reps", o.reps, "timed repetitions")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  app.add_option("--rep-ms", o.rep_ms, "calls a repetition: enough to take this long")
      ->capture_default_str();
  bench::parse_or_exit(app, argc, argv);
  return o;
}

void run(const Options& o) {
  const auto all = cases();
  const auto found = all.find(o.name);
  DLF_CHECK(found != all.end(), "suite_bench: no case '", o.name, "' (see suite_bench --list)");
  set_num_threads(o.threads);
  manual_seed(1234);
  Generator gen(1234);
  const Case c = found->second(gen);
  for (int i = 0; i < o.warmup; ++i) c.call();
  // Calls a repetition: enough for rep_ms, from one more call's time.
  const double one_ms = bench::time_once_ms(c.call);
  const int calls = int(std::clamp(std::ceil(o.rep_ms / std::max(one_ms, 1e-6)), 1.0, 1e6));
  std::vector<double> ms, cpu_ms;
  timed_reps(c.call, o.reps, calls, slowdown_of(o.name), ms, cpu_ms);
  const bench::Timing t = bench::summarize(ms);
  // The headline from the CPU time on one thread (a loaded machine's waits left out), else
  // from the wall clock.
  const double cpu_median_ms = bench::summarize(cpu_ms).median_ms;
  const double seconds = (o.threads == 1 ? cpu_median_ms : t.median_ms) / 1e3;

  bench::JsonLine line;
  line.add("bench", c.bench).add("case", o.name).add("impl", "dlf").add("threads", o.threads);
  if (c.items > 0) {
    line.add("metric", "throughput").add("value", c.items / seconds).add("unit", c.item_unit);
  } else if (c.flops > 0) {
    line.add("metric", "gflops").add("value", c.flops / seconds / 1e9).add("unit", "GFLOP/s");
  } else if (c.bytes > 0) {
    line.add("metric", "bandwidth").add("value", c.bytes / seconds / 1e9).add("unit", "GB/s");
  } else {
    line.add("metric", "time").add("value", seconds * 1e6).add("unit", "us");
  }
  bench::add_timing(line, t);
  line.add("cpu_median_ms", cpu_median_ms);
  line.add("flops", c.flops).add("bytes", c.bytes).add("calls_per_rep", calls);
  if (c.baseline) {
    const bench::Timing base = bench::time_ms(c.baseline, o.warmup, o.reps);
    line.add("baseline_impl", "onednn").add("baseline", c.flops / base.median_ms / 1e6);
    line.add("ratio", base.median_ms / t.median_ms);
  }
  const std::string text = bench::with_array(line.str(), "reps_ms", ms);
  std::printf("%s\n", bench::with_array(text, "reps_cpu_ms", cpu_ms).c_str());
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (o.list) {
    for (const auto& [name, make] : cases()) std::printf("%s\n", name.c_str());
    return 0;
  }
  run(o);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "suite_bench: %s\n", e.what());
  return 1;
}
