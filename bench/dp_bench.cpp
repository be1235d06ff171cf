// Data parallelism on a shared CPU: wall-clock training tokens/s of dp=N ranks (N threads on
// this machine's cores, in-process communicator) against one device, at the same global batch,
// alternating in rounds. Prints one `train` JSON line: dp=N's tokens/s, the single device's as
// the baseline, and the ratio (the target is >= 0.85: N ranks must not thrash the cores).
//
//   dp_bench gpt-mini [--ranks 8] [--batch 8] [--steps 6] [--warmup 2] [--rounds 3]
//                     [--threads 2] [--device cpu|sim] [--zero]
//
// A step is what `dlf train` does: zero_grad, forward, backward, DDP's gradient average,
// clipping at 1.0, AdamW (with --zero, its state sharded over the ranks: ZeRO stage 1).
#include <cstdio>
#include <string>

#include <dlf/dlf.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/zero.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

struct Options {
  std::string model = "gpt-mini", device = "cpu";
  int ranks = 8, steps = 6, warmup = 2, rounds = 3, threads = 2;
  int64_t batch = 8;
  bool zero = false;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Data parallelism on this CPU: dp ranks against one device, same global batch"};
  app.add_option("model", o.model, "a GPT config")->capture_default_str();
  app.add_option("--device", o.device, "cpu or sim")
      ->check(CLI::IsMember({"cpu", "sim"}))
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "data-parallel ranks")->capture_default_str();
  app.add_option("--batch", o.batch, "global batch")->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps per round")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps per round")->capture_default_str();
  app.add_option("--rounds", o.rounds, "alternating rounds")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_flag("--zero", o.zero, "shard the optimizer state (ZeRO-1)");
  bench::parse_or_exit(app, argc, argv);
  DLF_CHECK(o.batch % o.ranks == 0, "dp_bench: --batch must be a multiple of --ranks");
  return o;
}

// Step times (ms, after warm-up) of `ranks` ranks training on one fixed global batch.
std::vector<double> run(const Options& o, int ranks) {
  const models::GPTConfig config = models::gpt_config(o.model);
  const int64_t T = std::min<int64_t>(config.context, 256);
  Generator data(1234);
  const Tensor x = randint(0, config.vocab, {o.batch, T}, {.dtype = DType::i64}, &data);
  const Tensor y = randint(0, config.vocab, {o.batch, T}, {.dtype = DType::i64}, &data);
  std::vector<double> ms;
  const DeviceType type = o.device == "sim" ? DeviceType::sim : DeviceType::cpu;
  parallel::run_ranks(parallel::devices_of(type, ranks), [&](parallel::Communicator& world) {
    manual_seed(1234);
    models::GPT model(config);
    model.to(world.device());
    std::optional<parallel::DistributedDataParallel> ddp;
    if (ranks > 1) ddp.emplace(model, world);
    nn::optim::AdamW opt(nn::optim::decay_groups(model.named_parameters(), 0.1),
                         {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
    std::optional<parallel::ZeroOptimizer> zero;
    if (ranks > 1 && o.zero) zero.emplace(opt, world, *ddp);
    const int64_t rows = o.batch / ranks;
    const Tensor xs = x.narrow(0, world.rank() * rows, rows).contiguous().to(world.device());
    const Tensor ys = y.narrow(0, world.rank() * rows, rows).contiguous().to(world.device());
    for (int i = 0; i < o.warmup + o.steps; ++i) {
      const double t = bench::time_once_ms([&] {
        opt.zero_grad();
        Tensor loss = model.loss(xs, ys);
        loss.backward();
        if (ddp) ddp->synchronize();
        if (zero) {
          zero->clip_grad_norm(model.parameters(), 1.0);
        } else {
          nn::optim::clip_grad_norm(model.parameters(), 1.0);
        }
        if (zero) {
          zero->step();
        } else {
          opt.step();
        }
        if (ddp) world.barrier();  // the step ends when the slowest rank's does
      });
      if (world.rank() == 0 && i >= o.warmup) ms.push_back(t);
    }
  });
  return ms;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  set_num_threads(o.threads);
  std::vector<double> single, parallel;
  for (int r = 0; r < o.rounds; ++r) {
    const std::vector<double> a = run(o, 1), b = run(o, o.ranks);
    single.insert(single.end(), a.begin(), a.end());
    parallel.insert(parallel.end(), b.begin(), b.end());
    std::fprintf(stderr, "round %d: 1 device %.1f ms/step, dp=%d %.1f ms/step\n", r + 1,
                 bench::summarize(a).median_ms, o.ranks, bench::summarize(b).median_ms);
  }
  const models::GPTConfig config = models::gpt_config(o.model);
  const double tokens = double(o.batch * std::min<int64_t>(config.context, 256));
  const bench::Timing tp = bench::summarize(parallel), ts = bench::summarize(single);
  const double value = tokens / (tp.median_ms / 1e3), baseline = tokens / (ts.median_ms / 1e3);
  bench::JsonLine line;
  line.add("bench", "train")
      .add("case",
           o.model + " dp=" + std::to_string(o.ranks) + (o.zero ? " zero-1 " : " ") + o.device)
      .add("impl", "dlf")
      .add("threads", o.threads)
      .add("batch", o.batch)
      .add("metric", "throughput")
      .add("value", value)
      .add("unit", "tok/s");
  bench::add_timing(line, tp);
  line.add("baseline_impl", "dlf 1 device")
      .add("baseline", baseline)
      .add("ratio", value / baseline);
  line.add("rounds", o.rounds).add("steps", o.steps);
  line.print();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dp_bench: %s\n", e.what());
  return 1;
}
