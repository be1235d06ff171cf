// Training throughput of a GPT config, in the peer's protocol (shared/peer/README.md): one fixed
// random batch (seed 1234), AdamW (lr 3e-4, betas 0.9/0.95, weight decay 0.1 on every
// parameter), a step = zero_grad + forward + loss + backward + optimizer step; 2 warm-up steps,
// then N timed. Prints one `train` JSON line with tokens/s, MFU against the f32 matmul peak
// measured in this process, and the peak RSS.
//
//   train_bench gpt-mini [--steps N] [--warmup N] [--batch B] [--seq T] [--threads K] [--profile]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <dlf/dlf.h>

#include "bench/bench_json.h"

using namespace dlf;

namespace {

struct Options {
  std::string model = "gpt-mini";
  int steps = 10, warmup = 2, threads = 2;
  bool profile = false;        // one more step under an OpProfile, table on stderr
  int64_t batch = 0, seq = 0;  // 0: the peer's defaults for the model
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--profile") {
      o.profile = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      o.model = flag;
      continue;
    }
    DLF_CHECK(i + 1 < argc, "train_bench: ", flag, " needs a value");
    const int value = std::atoi(argv[++i]);
    if (flag == "--steps")
      o.steps = value;
    else if (flag == "--warmup")
      o.warmup = value;
    else if (flag == "--threads")
      o.threads = value;
    else if (flag == "--batch")
      o.batch = value;
    else if (flag == "--seq")
      o.seq = value;
    else
      throw Error("train_bench: unknown flag " + flag);
  }
  return o;
}

// The f32 matmul rate this process reaches now, at a GPT-2-sized shape: MFU's denominator.
double matmul_peak_gflops() {
  const Tensor x = randn({1024, 768}), w = randn({3072, 768});
  const bench::Timing t = bench::time_ms([&] { linear(x, w); }, 3, 15);
  return 2.0 * 1024 * 768 * 3072 / (t.median_ms * 1e6);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  set_num_threads(o.threads);
  models::GPTConfig config = models::gpt_config(o.model);
  const bool small_batch = config.vocab > 256;  // the peer's gpt-small runs 4 x 256
  const int64_t B = o.batch ? o.batch : (small_batch ? 4 : 8);
  const int64_t T = o.seq ? o.seq : std::min<int64_t>(config.context, 256);

  manual_seed(1234);
  models::GPT model(config);
  Generator data(1234);
  const Tensor x = randint(0, config.vocab, {B, T}, {.dtype = DType::i64}, &data);
  const Tensor y = randint(0, config.vocab, {B, T}, {.dtype = DType::i64}, &data);
  nn::optim::Adam opt = nn::optim::AdamW({{.params = model.parameters(), .weight_decay = 0.1}},
                                         {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  double first_loss = 0, last_loss = 0;
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = model.loss(x, y);
    loss.backward();
    opt.step();
    last_loss = loss.item<double>();
    if (first_loss == 0) first_loss = last_loss;
  };
  std::vector<double> ms;
  for (int i = 0; i < o.warmup; ++i) step();
  for (int i = 0; i < o.steps; ++i) {
    ms.push_back(bench::time_once_ms(step));
    std::fprintf(stderr, "step %d: %.1f ms, loss %.4f\n", i, ms.back(), last_loss);
  }
  if (o.profile) {
    OpProfile profile;
    step();
    profile.print(std::cerr);
  }
  const bench::Timing t = bench::summarize(ms);
  const double tokens_per_s = double(B * T) / (t.median_ms / 1e3);
  const double peak = matmul_peak_gflops();
  const double mfu = model.train_flops_per_token(T) * tokens_per_s / (peak * 1e9);
  bench::JsonLine line;
  line.add("bench", "train").add("case", o.model).add("impl", "dlf").add("threads", o.threads);
  line.add("batch", B).add("seq", T).add("metric", "throughput").add("value", tokens_per_s);
  line.add("unit", "tok/s");
  bench::add_timing(line, t);
  line.add("peak_rss_mib", peak_rss_mib()).add("mfu", mfu).add("matmul_peak_gflops", peak);
  line.add("params", model.num_parameters()).add("loss_first", first_loss);
  line.add("loss_last", last_loss);
  line.print();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_bench: %s\n", e.what());
  return 1;
}
