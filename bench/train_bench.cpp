// Training throughput of a zoo model, in the peer's protocol (shared/peer/README.md): one fixed
// random batch (seed 1234), AdamW (lr 3e-4, betas 0.9/0.95, weight decay 0.1 on every
// parameter), a step = zero_grad + forward + loss + backward + optimizer step; 2 warm-up steps,
// then N timed. The batch is the peer's: GPT 8 x 256 tokens (gpt-small 4 x 256), BERT 16 x 128
// with 15 % of the tokens masked, ViT 64 images 28x28, UNet 32 noised 32x32 images with their
// noise and timesteps. Prints one `train` JSON line with tokens/s (GPT, BERT) or images/s (ViT,
// UNet), MFU (the FLOPs one step dispatches, counted at the dispatch point, against the f32
// matmul peak measured in this process; the bf16 peak for --precision bf16, with the host's
// bf16/f32 matmul ratio beside it, and oneDNN's instruction set with whether bf16 computes in
// f32 there, as dlf train does on a CPU without fast bf16) and the peak RSS.
// With --recompute full|selective or --precision bf16, the plain f32 step is timed alternately in
// the same run as the baseline.
//
//   train_bench MODEL [--steps N] [--warmup N] [--batch B] [--seq T] [--threads K] [--profile]
//               [--recompute full|selective] [--precision bf16]
#include <sys/resource.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

struct Options {
  std::string model = "gpt-mini";
  int steps = 10, warmup = 2, threads = 2;
  bool profile = false;            // print the per-op table of the counted step on stderr
  std::string recompute = "none";  // full, selective: against none in the same run
  std::string precision = "fp32";  // bf16: autocast, against fp32 in the same run
  int64_t batch = 0, seq = 0;      // 0: the peer's defaults for the model
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Training throughput of a zoo model on the peer's batch: one JSON line"};
  app.add_option("model", o.model, "gpt-*, bert-*, vit-* or unet-*")->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--batch", o.batch, "sequences or images per step (default: the peer's)");
  app.add_option("--seq", o.seq, "tokens per sequence, GPT and BERT (default: the peer's)");
  app.add_flag("--profile", o.profile, "the per-op table of one step on stderr");
  app.add_option("--recompute", o.recompute,
                 "full or selective: activation recompute of every block (dlf train's "
                 "--recompute), timed alternately with none (the baseline) in the same run")
      ->check(CLI::IsMember({"none", "full", "selective"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "bf16: matmuls, convolutions and attention under autocast (dlf train's "
                 "--precision), timed alternately with fp32 (the baseline) in the same run")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  bench::parse_or_exit(app, argc, argv);
  return o;
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
  manual_seed(1234);
  Generator data(1234);
  const models::ExampleStep w = models::example_step(o.model, o.batch, o.seq, data);
  nn::optim::AdamW opt({{.params = w.model->parameters(), .weight_decay = 0.1}},
                       {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  const autograd::Recompute recompute = autograd::parse_recompute(o.recompute);
  const bool bf16 = o.precision == "bf16";
  const DType precision = bf16 ? DType::bf16 : DType::f32;
  const bool compared = recompute != autograd::Recompute::none ||
                        bf16;  // the plain f32 step alternates as the baseline
  double first_loss = 0, last_loss = 0;
  int64_t held[2] = {0, 0};  // bytes live between forward and backward, [measured, baseline]
  Allocator& memory = allocator_for(kCPU);
  auto step = [&](bool baseline) {
    w.model->recompute(baseline ? autograd::Recompute::none : recompute);
    opt.zero_grad();
    const int64_t before = memory.stats().live_bytes;
    Tensor loss;
    {
      AutocastGuard autocast(autocast_for(baseline ? DType::f32 : precision, kCPU));
      loss = w.loss(w.batch);
    }
    held[baseline] = std::max(held[baseline], memory.stats().live_bytes - before);
    loss.backward();
    opt.step();
    last_loss = loss.item<double>();
    if (first_loss == 0) first_loss = last_loss;
  };
  std::vector<double> ms, baseline_ms;
  for (int i = 0; i < o.warmup; ++i) {
    step(false);
    if (compared) step(true);
  }
  for (int i = 0; i < o.steps; ++i) {
    ms.push_back(bench::time_once_ms([&] { step(false); }));
    std::fprintf(stderr, "step %d: %.1f ms, loss %.4f\n", i, ms.back(), last_loss);
    if (compared) baseline_ms.push_back(bench::time_once_ms([&] { step(true); }));
  }
  double step_flops = 0;  // one more step, untimed, to count what it dispatches
  {
    w.model->recompute(
        autograd::Recompute::none);  // the model's FLOPs, without what a recompute adds
    OpProfile profile;
    {
      AutocastGuard autocast(autocast_for(precision, kCPU));
      Tensor loss = w.loss(w.batch);
      loss.backward();
    }
    step_flops = profile.outermost().flops;
    if (o.profile) profile.print(std::cerr);
  }
  const bench::Timing t = bench::summarize(ms);
  const double items_per_s = double(w.items) / (t.median_ms / 1e3);
  const double rss_mib = peak_rss_mib();  // the training's, before measuring the peak's tensors
  // MFU's denominator: the matmul rate this process reaches now, at a GPT-2-sized shape. Their
  // ratio says what bf16 could gain on this host at most (about 2 with AVX512-BF16, 1 without).
  const SimSpec cpu = autograd::measure_cpu();
  const double peak = cpu.peak_flops(bf16 ? MathPrecision::bf16 : MathPrecision::f32) / 1e9;
  const double gemm_bf16_over_f32 =
      cpu.peak_flops(MathPrecision::bf16) / cpu.peak_flops(MathPrecision::f32);
  const double mfu = step_flops / (t.median_ms / 1e3) / (peak * 1e9);
  bench::JsonLine line;
  line.add("bench", "train").add("case", o.model).add("impl", "dlf").add("threads", o.threads);
  line.add("batch", w.batch_size)
      .add("seq", w.seq)
      .add("metric", "throughput")
      .add("value", items_per_s);
  line.add("unit", w.unit);
  bench::add_timing(line, t);
  line.add("peak_rss_mib", rss_mib).add("mfu", mfu).add("matmul_peak_gflops", peak);
  line.add("step_gflop", step_flops / 1e9).add("params", w.model->num_parameters());
  line.add("loss_first", first_loss).add("loss_last", last_loss);
  line.add("activations_mib", double(held[0]) / (1 << 20));
  line.add("recompute", o.recompute).add("precision", o.precision);
  if (bf16) {
    line.add("gemm_bf16_over_f32", gemm_bf16_over_f32).add("cpu_isa", cpu_isa_name());
    line.add("bf16_computes_in_f32", bf16_computes_in_f32(precision, kCPU));
  }
  if (compared) {
    const double baseline = double(w.items) / (bench::summarize(baseline_ms).median_ms / 1e3);
    line.add("baseline_impl", "dlf fp32 recompute none")
        .add("baseline", baseline)
        .add("ratio", items_per_s / baseline)
        .add("baseline_activations_mib", double(held[1]) / (1 << 20))
        .add("activations_ratio", double(held[0]) / double(held[1]));
  }
  line.print();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_bench: %s\n", e.what());
  return 1;
}
