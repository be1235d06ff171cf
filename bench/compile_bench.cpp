// Graph mode against eager on a zoo model's training step, as `dlf train` runs it: the same
// model and AdamW, a step = zero_grad + forward + loss + backward + clipping to norm 1 + the
// optimizer's update, where the compiled step runs all but zero_grad as one captured graph.
// Eager and compiled steps alternate on one model after warm-up; one `compile` line per model
// with the median step times, the step's peak tensor memory above what lives between steps
// (activations, gradients, temporaries) for both, the planned arena, and what capture and the
// passes took.
//
//   compile_bench [MODEL...] [--steps N] [--warmup N] [--batch B] [--seq T] [--threads K]
//                 [--skip-pass NAME]...   (a pass of graph::optimize left out: what it brings)
//                 [--by-op]   (also, on stderr: each op's median time a step in both, by shape)
//                 [--ablate]  (also, per pass: a compiled step without it, timed in the same
//                              rounds; one `compile_pass` line each: ratio = speed with the
//                              pass / without, time_saved_ms, nodes_removed, bytes_saved)
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

struct Options {
  std::vector<std::string> models = {"gpt-nano", "unet-small", "gpt-mini", "gpt-small"};
  int steps = 5, warmup = 2, threads = 2;
  int64_t batch = 0, seq = 0;
  std::vector<std::string> skip_passes;
  bool by_op = false;
  bool ablate = false;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Compiled against eager training steps: one JSON line per model"};
  app.add_option("models", o.models, "zoo models")->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps of each")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps of each first")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--batch", o.batch, "sequences or images per step (default: the peer's)");
  app.add_option("--seq", o.seq, "tokens per sequence (default: the peer's)");
  app.add_option("--skip-pass", o.skip_passes,
                 "a pass of graph::optimize to leave out (\"element-wise fusion\"); repeatable");
  app.add_flag("--by-op", o.by_op,
               "print each op's median self time a step, compiled and eager, on stderr (the "
               "timed steps then include the profiler's own cost)");
  app.add_flag("--ablate", o.ablate,
               "also step a compiled copy without each pass, in the same rounds: one "
               "compile_pass line per pass (time, nodes and peak memory it saves; the copies "
               "count in peak_rss_mib)")
      ->excludes("--by-op");  // --by-op profiles two kinds of step: the copies' would not match
  bench::parse_or_exit(app, argc, argv);
  return o;
}

// Each op's self time in every timed step of one kind (compiled or eager), by op and shapes.
class StepsByOp {
 public:
  void add(const OpProfile& step) {
    for (const auto& [op, row] : step.rows()) {
      std::vector<double>& ms = ms_[op];
      ms.resize(steps_, 0.0);  // steps where the op did not run
      ms.push_back(row.self_seconds * 1e3);
    }
    ++steps_;
  }
  double median_ms(const std::string& op) const {
    auto it = ms_.find(op);
    if (it == ms_.end()) return 0;
    std::vector<double> ms = it->second;
    ms.resize(steps_, 0.0);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
  }
  const std::map<std::string, std::vector<double>>& ops() const { return ms_; }

 private:
  std::map<std::string, std::vector<double>> ms_;
  size_t steps_ = 0;
};

// Ops by the larger of their two medians, then both medians and their difference.
void print_by_op(const std::string& model, const StepsByOp& compiled, const StepsByOp& eager) {
  struct Row {
    std::string op;
    double compiled_ms, eager_ms;
  };
  std::set<std::string> ops;
  for (const auto* side : {&compiled, &eager})
    for (const auto& [op, ms] : side->ops()) ops.insert(op);
  std::vector<Row> rows;
  for (const std::string& op : ops)
    rows.push_back({op, compiled.median_ms(op), eager.median_ms(op)});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::max(a.compiled_ms, a.eager_ms) > std::max(b.compiled_ms, b.eager_ms);
  });
  std::fprintf(stderr, "%s: median self ms a step   compiled   eager   compiled-eager   op\n",
               model.c_str());
  for (const Row& r : rows)
    std::fprintf(stderr, "%*s%9.3f %7.3f %+16.3f   %s\n", int(model.size()) + 26, "", r.compiled_ms,
                 r.eager_ms, r.compiled_ms - r.eager_ms, r.op.c_str());
}

// The headline fields of a line comparing `with` to `baseline` (both timed over `items` a step):
// throughput, timings, and ratio = speed with / baseline's.
void add_comparison(JsonLine& line, double items, const std::string& unit,
                    const bench::Timing& with, const std::string& baseline_impl,
                    const bench::Timing& baseline) {
  line.add("metric", "throughput").add("value", items / (with.median_ms / 1e3)).add("unit", unit);
  bench::add_timing(line, with);
  line.add("baseline_impl", baseline_impl).add("baseline", items / (baseline.median_ms / 1e3));
  line.add("ratio", baseline.median_ms / with.median_ms);
  line.add("baseline_median_ms", baseline.median_ms);
}

// What leaving one pass out of graph::optimize changes, measured beside the full pipeline in the
// same steps: one `compile_pass` line.
void print_pass_line(const std::string& model, const std::string& pass, double items,
                     const std::string& unit, const bench::Timing& with,
                     const bench::Timing& without, const graph::Compiled& with_pass,
                     const graph::Compiled& without_pass, int64_t peak_with, int64_t peak_without) {
  const graph::CompileReport& report = with_pass.last_report();
  double pass_ms = 0;
  for (const graph::PassReport& r : report.passes)
    if (r.pass == pass) pass_ms = r.ms;
  const auto nodes = [](const graph::Compiled& c) {
    return int64_t(c.last_executable().graph().nodes.size());
  };
  JsonLine line;
  line.add("bench", "compile_pass").add("case", model + ": " + pass).add("impl", "dlf-compiled");
  add_comparison(line, items, unit, with, "dlf-compiled-without-pass", without);
  line.add("time_saved_ms", without.median_ms - with.median_ms);
  line.add("nodes_removed", nodes(without_pass) - nodes(with_pass));
  line.add("peak_bytes", peak_with).add("baseline_peak_bytes", peak_without);
  line.add("bytes_saved", peak_without - peak_with);
  line.add("pass_ms", pass_ms);
  line.print();
}

void run(const std::string& name, const Options& o) {
  manual_seed(1234);
  Generator data(1234);
  const models::ExampleStep w = models::example_step(name, o.batch, o.seq, data);
  const std::vector<Tensor> params = w.model->parameters();
  nn::optim::AdamW opt(params, {.lr = 3e-4});
  opt.init_state();
  const graph::StepFn eager_step = graph::backward_step(w.loss);
  const graph::StepFn captured_step =
      graph::backward_step(w.loss, [&] { nn::optim::clip_and_update(opt, params, 1.0); });
  // Kinds of step: [0] compiled by the pipeline less --skip-pass, [1] eager, and with --ablate
  // [2...] compiled less one pass more each; timed in turn in that order.
  std::vector<std::string> ablated;
  if (o.ablate)
    for (const std::string& pass : graph::pass_names())
      if (std::find(o.skip_passes.begin(), o.skip_passes.end(), pass) == o.skip_passes.end())
        ablated.push_back(pass);
  std::vector<std::unique_ptr<graph::Compiled>> compiled(2 + ablated.size());
  compiled[0] = std::make_unique<graph::Compiled>(captured_step, o.skip_passes);
  for (size_t i = 0; i < ablated.size(); ++i) {
    std::vector<std::string> skip = o.skip_passes;
    skip.push_back(ablated[i]);
    compiled[2 + i] = std::make_unique<graph::Compiled>(captured_step, skip);
  }
  Allocator& memory = allocator_for(kCPU);
  std::vector<int64_t> peak(compiled.size(), 0);  // over the timed steps
  bool timed = false;  // the first compiled step captures, eagerly: not counted
  StepsByOp by_op[2];  // [compiled, eager], with --by-op
  auto step = [&](size_t kind) {
    opt.zero_grad();
    const int64_t before = memory.stats().live_bytes;
    memory.reset_peak();
    std::optional<OpProfile> profile;
    if (o.by_op && timed && kind < 2) profile.emplace(OpProfileOptions{.by_shape = true});
    if (kind == 1) {
      eager_step(w.batch);
      nn::optim::clip_grad_norm(params, 1.0);
      opt.step();
    } else {
      opt.begin_step();
      (*compiled[kind])(w.batch);
    }
    if (timed) peak[kind] = std::max(peak[kind], memory.stats().peak_bytes - before);
    if (profile) by_op[kind].add(*profile);
  };
  std::vector<std::function<void()>> steps;
  for (size_t kind = 0; kind < compiled.size(); ++kind) steps.push_back([&, kind] { step(kind); });
  for (int i = 0; i < o.warmup; ++i)
    for (const auto& s : steps) s();
  timed = true;
  const std::vector<bench::Timing> t = bench::time_round_robin(steps, 0, o.steps);
  const bench::Timing& compiled_t = t[0];
  const bench::Timing& eager_t = t[1];
  const graph::CompileReport& report = compiled[0]->last_report();
  const graph::Graph& g = compiled[0]->last_executable().graph();
  JsonLine line;
  line.add("bench", "compile").add("case", name).add("impl", "dlf-compiled");
  line.add("threads", o.threads).add("batch", w.batch_size).add("seq", w.seq);
  std::string skipped;
  for (const std::string& p : o.skip_passes) skipped += (skipped.empty() ? "" : ",") + p;
  if (!skipped.empty()) line.add("skipped_passes", skipped);
  add_comparison(line, double(w.items), w.unit, compiled_t, "dlf-eager", eager_t);
  line.add("peak_bytes", peak[0]).add("baseline_peak_bytes", peak[1]);
  line.add("peak_ratio", double(peak[0]) / double(peak[1]));
  line.add("planned_arena_bytes", int64_t(g.arena_bytes));
  line.add("arena_lower_bound_bytes", int64_t(graph::arena_lower_bound(g)));
  line.add("nodes_captured", int64_t(report.nodes_captured)).add("nodes", int64_t(g.nodes.size()));
  line.add("capture_ms", report.capture_ms).add("optimise_ms", report.optimise_ms);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  line.add("peak_rss_mib", double(usage.ru_maxrss) / 1024);
  line.print();
  for (size_t i = 0; i < ablated.size(); ++i)
    print_pass_line(name, ablated[i], double(w.items), w.unit, compiled_t, t[2 + i], *compiled[0],
                    *compiled[2 + i], peak[0], peak[2 + i]);
  if (o.by_op) print_by_op(name, by_op[0], by_op[1]);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  set_num_threads(o.threads);
  int failed = 0;
  for (const std::string& name : o.models) {
    try {
      run(name, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "compile_bench: %s: %s\n", name.c_str(), e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}
