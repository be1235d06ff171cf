// Every dp × tp × pp layout of a GPT over N devices, side by side: the step time the planner
// predicts on meta devices (plan::rank_layouts, the choice `dlf train --devices N` makes),
// the simulated step time of the run itself on N sim devices, and the wall time of that same
// run on this machine (N ranks sharing its cores). Two JSON lines per layout: impl "sim" (the
// simulated step, the plan's prediction and peak memory beside it) and impl "dlf" (wall time).
//
//   layout_bench gpt-small [--devices 8] [--batch 8] [--seq 256] [--steps 3] [--warmup 1]
//                          [--threads 2] [--device a100-40gb]
//
// Layouts whose simulated devices would not fit in this machine's memory are predicted only.
// A step is what `dlf train` does: micro-batches through the pipeline, DDP's average, clipping
// at 1.0 and AdamW, each rank its stage and shard (train::RankStep).
#include <unistd.h>

#include <cstdio>
#include <string>

#include <dlf/dlf.h>
#include <dlf/plan/plan.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

struct Options {
  std::string model = "gpt-small", device = "a100-40gb";
  int devices = 8, steps = 3, warmup = 1, threads = 2;
  int64_t batch = 8, seq = 256;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Every dp x tp x pp layout of a GPT on N devices: predicted, simulated, wall"};
  app.add_option("model", o.model, "a GPT config")->capture_default_str();
  app.add_option("--device", o.device, "the sim preset or SPEC.json")->capture_default_str();
  app.add_option("--devices", o.devices, "ranks")->capture_default_str();
  app.add_option("--batch", o.batch, "global batch")->capture_default_str();
  app.add_option("--seq", o.seq, "tokens per sequence")->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps per layout")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps per layout")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  bench::parse_or_exit(app, argc, argv);
  return o;
}

struct Measured {
  std::vector<double> wall_ms, sim_ms;
  double peak_bytes = 0;  // the worst device's
};

// `steps` timed steps (after `warmup`) of `plan`'s layout on sim devices of its spec.
Measured run(const Options& o, const plan::Plan& plan, const nn::NamedTensors& initial,
             const Tensor& x, const Tensor& y) {
  const parallel::Layout& layout = plan.options.layout;
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, layout.devices());
  for (Device d : devices) {
    sim::configure(d, plan.options.spec);
    sim::reset(d);
  }
  Measured m;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    parallel::Mesh mesh(world, layout);
    const int64_t rows = o.batch / layout.dp;
    const train::PartOptions part{.micro_batches = int(rows / plan.options.micro_batch),
                                  .schedule = plan.options.schedule};
    train::RankStep step(
        train::make_pipeline_model(plan.options.model, mesh, initial, part), mesh,
        {.part = part, .adamw = {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8}});
    const Tensor xs = x.narrow(0, mesh.dp_rank() * rows, rows).contiguous();
    const Tensor ys = y.narrow(0, mesh.dp_rank() * rows, rows).contiguous();
    Allocator& memory = allocator_for(world.device());
    for (int i = 0; i < o.warmup + o.steps; ++i) {
      const double start = sim::timeline(world.device()).now();
      memory.reset_peak();
      const double wall = bench::time_once_ms([&] {
        step.zero_grad();
        step.forward_backward({xs, ys});
        step.update();
        world.barrier();  // the step ends when the slowest rank's does
      });
      Tensor worst = from_vector<double>({sim::timeline(world.device()).now() - start,
                                          double(memory.stats().peak_bytes)})
                         .to(world.device());
      world.allreduce(worst, parallel::ReduceOp::max);
      const std::vector<double> v = worst.to(kCPU).to_vector<double>();
      if (world.rank() == 0 && i >= o.warmup) {
        m.wall_ms.push_back(wall);
        m.sim_ms.push_back(v[0] * 1e3);
        m.peak_bytes = std::max(m.peak_bytes, v[1]);
      }
    }
  });
  return m;
}

std::string name(const plan::Plan& p) {
  const parallel::Layout& l = p.options.layout;
  return p.options.model.name + " dp" + std::to_string(l.dp) + " tp" + std::to_string(l.tp) +
         " pp" + std::to_string(l.pp);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  set_num_threads(o.threads);
  const models::GPTConfig config = models::gpt_config(o.model);
  const std::vector<plan::Plan> plans = plan::rank_layouts({.model = config,
                                                            .layout = {},
                                                            .spec = sim_spec_from(o.device),
                                                            .global_batch = o.batch,
                                                            .seq = o.seq},
                                                           o.devices);
  manual_seed(1234);
  const nn::NamedTensors initial = models::GPT(config).state_dict();
  Generator data(1234);
  const Tensor x = randint(0, config.vocab, {o.batch, o.seq}, {.dtype = DType::i64}, &data);
  const Tensor y = randint(0, config.vocab, {o.batch, o.seq}, {.dtype = DType::i64}, &data);
  const double host = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  for (const plan::Plan& plan : plans) {
    auto simulated_line = [&] {  // the fields both of a layout's sim lines start with
      bench::JsonLine line;
      line.add("bench", "layout")
          .add("case", name(plan))
          .add("impl", "sim")
          .add("threads", o.threads)
          .add("device", plan.options.spec.name);
      return line;
    };
    // The sim devices keep their data in host memory: a layout whose devices would need more
    // than most of it is predicted only (run, it would be OOM-killed).
    if (double(plan.worst.peak_bytes) * plan.options.layout.devices() > 0.7 * host) {
      simulated_line()
          .add("metric", "predicted_step_time")
          .add("value", plan.step_s * 1e3)
          .add("unit", "ms")
          .add("chosen", &plan == &plans.front())
          .add("predicted_peak_bytes", double(plan.worst.peak_bytes))
          .add("fits", plan.fits)
          .add("run", "no: its devices would need more than 70% of host memory")
          .print();
      continue;
    }
    const Measured m = run(o, plan, initial, x, y);
    const bench::Timing sim = bench::summarize(m.sim_ms), wall = bench::summarize(m.wall_ms);
    const double tokens = double(o.batch * o.seq);
    bench::JsonLine simulated = simulated_line();
    simulated.add("metric", "step_time").add("value", sim.median_ms).add("unit", "ms");
    bench::add_timing(simulated, sim)
        .add("predicted_ms", plan.step_s * 1e3)
        .add("chosen", &plan == &plans.front())
        .add("peak_bytes", m.peak_bytes)
        .add("predicted_peak_bytes", double(plan.worst.peak_bytes))
        .add("fits", plan.fits)
        .add("micro_batch", plan.options.micro_batch)
        .print();
    bench::JsonLine measured;
    measured.add("bench", "layout")
        .add("case", name(plan))
        .add("impl", "dlf")
        .add("threads", o.threads)
        .add("metric", "throughput")
        .add("value", tokens / (wall.median_ms / 1e3))
        .add("unit", "tok/s");
    bench::add_timing(measured, wall).add("batch", o.batch).add("seq", o.seq).print();
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "layout_bench: %s\n", e.what());
  return 1;
}
