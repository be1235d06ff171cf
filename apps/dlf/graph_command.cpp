// `dlf graph`: capture, passes and memory plan of one training step, printed.
#include "graph_command.h"

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <dlf/device/atomic_file.h>
#include <dlf/dlf.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/train/rank_step.h>

#include "devices.h"

namespace dlf::app {
namespace {

// A zoo model's (or a GPT's by its configuration) training step under graph mode, as `dlf
// train --compile` runs it (train::RankStep): on one device, or as one rank of a mesh whose
// groups are planning communicators (the rank dp 0, tp 0 of stage `stage`).
struct CapturedStep {
  std::unique_ptr<parallel::Mesh> mesh = {};  // outlives the step over it
  std::unique_ptr<train::RankStep> step = {};
  std::vector<Tensor> batch = {};  // a replica's rows, on the host
  int64_t rows = 0, seq = 0;
  bool zero3 = false;  // the parameters sharded (FSDP): their shards' bytes count

  void run() {
    step->zero_grad();  // frees the last run's arena
    step->run_captured(batch);
  }
  // The step's graph::Compiled.
  const graph::Compiled& captured() const { return *step->model().compiled(); }
};

// The step of `model` on the default device, run once: captured, optimised and planned.
CapturedStep capture_step(const StepModel& model, int64_t batch, int64_t seq,
                          const std::string& precision,
                          const std::vector<std::string>& skip_passes = {},
                          const Replicas& r = {}) {
  DLF_CHECK(r.zero >= 0 && r.zero <= 3 && (r.dp > 1 || r.zero == 0),
            "a captured step runs plain data parallelism or ZeRO-1, -2 or -3 over replicas (got "
            "dp ",
            r.dp, ", zero ", r.zero, ")");
  manual_seed(1234);
  Generator data(1234);
  const models::Family* family = model.gpt ? nullptr : &models::family_of(model.name);
  // The whole model, whose state the rank's part takes; the batch drawn on the host.
  std::unique_ptr<nn::Module> whole =
      family ? family->build(model.name, {}) : std::make_unique<models::GPT>(*model.gpt);
  models::ExampleBatch b = [&] {
    DefaultDeviceGuard host(kCPU);
    return family ? family->example_batch(model.name, batch, seq, data)
                  : models::gpt_batch(*model.gpt, batch, seq, data);
  }();
  const int64_t rows = b.batch[0].size(0);
  DLF_CHECK(r.micro_batch == 0 || rows % r.micro_batch == 0, "a rank's batch of ", rows,
            " sequences does not split into micro-batches of ", r.micro_batch);
  const Device d = default_device();
  CapturedStep c{.mesh = std::make_unique<parallel::Mesh>(
                     parallel::Layout{.dp = r.dp, .tp = r.tp, .pp = r.pp},
                     std::make_unique<parallel::PlanningCommunicator>(d, 0, r.dp, "dp"),
                     std::make_unique<parallel::PlanningCommunicator>(d, 0, r.tp, "tp"),
                     std::make_unique<parallel::PlanningCommunicator>(d, r.stage, r.pp, "pp")),
                 .batch = std::move(b.batch),
                 .rows = rows,
                 .seq = b.seq,
                 .zero3 = r.dp > 1 && r.zero == 3};
  const train::PartOptions part{.micro_batches = r.micro_batch > 0 ? int(rows / r.micro_batch) : 1,
                                .schedule = r.schedule,
                                .virtual_stages = r.virtual_stages,
                                .bucket_bytes = r.bucket_bytes,
                                .zero = r.zero,
                                .reduce_in_bf16 = r.reduce_in_bf16,
                                .compile = true,
                                .skip_passes = skip_passes};
  std::unique_ptr<train::RankModel> rank_model =
      family ? train::make_rank_model(*family, model.name, *c.mesh, whole->state_dict(), part)
             : train::make_pipeline_model(*model.gpt, *c.mesh, whole->state_dict(), part);
  whole.reset();  // the rank's part holds what it keeps
  c.step = std::make_unique<train::RankStep>(
      std::move(rank_model), *c.mesh,
      train::StepOptions{.part = part,
                         .precision = precision == "bf16" ? DType::bf16 : DType::f32});
  c.run();
  return c;
}

// The plan's figures of a captured step, and the allocator's high-water over one more run.
CompiledStepMemory memory_of(CapturedStep& c, const std::string& model) {
  const graph::Graph& g = c.captured().last_executable().graph();
  CompiledStepMemory m{.model = model,
                       .batch = c.rows,
                       .seq = c.seq,
                       .nodes = g.nodes.size(),
                       .arena = int64_t(g.arena_bytes)};
  std::set<const Storage*> counted;  // the parameters', then each external one once
  for (const auto& [name, p] : c.step->parameters())  // ZeRO-3's released between uses: their
    if (!p.storage()->released() && counted.insert(p.storage().get()).second)  // shards instead
      m.parameters += int64_t(p.storage()->nbytes());
  if (c.zero3)
    for (const parallel::OwnedPiece& piece : c.step->model().shards()->owned_pieces())
      if (counted.insert(piece.value.storage().get()).second)
        m.parameters += int64_t(piece.value.storage()->nbytes());
  for (const graph::Buffer& b : g.buffers) {
    if (b.kind == graph::BufferKind::argument) m.batch_bytes += int64_t(b.nbytes);
    if (b.kind == graph::BufferKind::external && counted.insert(b.storage.get()).second)
      m.optimizer_state += int64_t(b.storage->nbytes());
  }
  c.step->zero_grad();  // the last arena gone before the peak resets
  Allocator& allocator = allocator_for(c.step->parameters().front().second.device());
  allocator.reset_peak();
  c.run();
  m.measured_peak = allocator.stats().peak_bytes;
  return m;
}

}  // namespace

StepModel::StepModel(std::string zoo_name) : name(std::move(zoo_name)) {
  if (models::family_of(name).gpt) gpt = models::family_of(name).gpt(name);
}

StepModel::StepModel(models::GPTConfig config) : name(config.name), gpt(std::move(config)) {}

CompiledStepMemory compiled_step_memory(const StepModel& model, int64_t batch, int64_t seq,
                                        const std::string& precision, const Replicas& replicas) {
  CapturedStep c = capture_step(model, batch, seq, precision, {}, replicas);
  return memory_of(c, model.name);
}

CompiledPlan plan_compiled_stages(const SimSpec& spec, const StepModel& model, int64_t batch,
                                  int64_t seq, const std::string& precision, Replicas replicas) {
  DeviceArg unbounded{.type = DeviceType::meta, .spec = spec};
  unbounded.spec.memory_bytes = 0;  // planned whatever it needs, then held against the capacity
  const std::vector<Device> meta = setup_devices(1, unbounded);
  DefaultDeviceGuard on(meta[0]);
  CompiledPlan plan;
  for (int stage = 0; stage < replicas.pp; ++stage) {
    replicas.stage = stage;
    CompiledStepMemory s = compiled_step_memory(model, batch, seq, precision, replicas);
    plan.stage_peaks.push_back(s.planned_peak());
    if (stage == 0 || s.planned_peak() > plan.largest.planned_peak()) {
      plan.largest = std::move(s);
      plan.stage = stage;
    }
  }
  return plan;
}

void run_graph(const GraphCommand& o) {
  if (!o.dot.empty()) check_writable(o.dot, "--dot");  // before capturing
  if (!o.json.empty()) check_writable(o.json, "--json");
  const std::vector<Device> devices = setup_devices(1, parse_device_arg(o.device));
  DefaultDeviceGuard on(devices[0]);
  CapturedStep c = capture_step(o.model, o.batch, o.seq, o.precision, o.skip_passes);
  const graph::Compiled& compiled = c.captured();
  const graph::CompileReport& r = compiled.last_report();
  const graph::Graph& g = compiled.last_executable().graph();
  std::printf(
      "%s: one training step (forward, backward, clipping, AdamW), batch %lld x %lld, %s, %s\n",
      o.model.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.seq),
      devices[0].str().c_str(), o.precision.c_str());
  std::printf("captured %zu nodes in %.1f ms\n", r.nodes_captured, r.capture_ms);
  std::printf("%-24s %8s %8s %9s\n", "pass", "before", "after", "ms");
  for (const graph::PassReport& p : r.passes)
    std::printf("%-24s %8zu %8zu %9.2f\n", p.pass.c_str(), p.nodes_before, p.nodes_after, p.ms);
  std::map<std::string, int> ops;
  for (const graph::Node& n : g.nodes) ++ops[n.op->name];
  std::string line;
  for (const auto& [name, count] : ops) line += " " + name + " " + std::to_string(count);
  std::printf("ops:%s\n", line.c_str());
  std::map<std::string, int> chains;
  for (const graph::Node& n : g.nodes)
    if (const std::string chain = graph::fused_chain(n); !chain.empty()) ++chains[chain];
  for (const auto& [chain, count] : chains) std::printf("fused %3d x %s\n", count, chain.c_str());
  std::map<graph::BufferKind, std::pair<int, double>> kinds;
  for (const graph::Buffer& b : g.buffers) {
    kinds[b.kind].first++;
    kinds[b.kind].second += double(b.nbytes);
  }
  for (const auto& [kind, v] : kinds)
    std::printf("%-9s %5d buffers, %s\n", graph::kind_name(kind).c_str(), v.first,
                format_bytes(v.second).c_str());
  std::printf("memory plan: arena %s (best possible %s)\n",
              format_bytes(double(g.arena_bytes)).c_str(),
              format_bytes(double(graph::arena_lower_bound(g))).c_str());
  if (!o.dot.empty()) {
    replace_file(o.dot, "DOT file", graph::to_dot(g));
    std::printf("wrote %s (render: dot -Tsvg %s -o step.svg)\n", o.dot.c_str(), o.dot.c_str());
  }
  if (!o.json.empty()) {
    graph::save(g, o.json);
    std::printf("wrote %s and %s.safetensors\n", o.json.c_str(), o.json.c_str());
  }
  // after the files: measuring runs the step (and AdamW) once more
  const CompiledStepMemory m = memory_of(c, o.model);
  std::printf(
      "peak: planned %s (parameters %s, optimizer state %s, batch %s, arena %s); the "
      "allocator's high-water over a step %s (%+.1f %%)\n",
      format_bytes(double(m.planned_peak())).c_str(), format_bytes(double(m.parameters)).c_str(),
      format_bytes(double(m.optimizer_state)).c_str(), format_bytes(double(m.batch_bytes)).c_str(),
      format_bytes(double(m.arena)).c_str(), format_bytes(double(m.measured_peak)).c_str(),
      100.0 * double(m.measured_peak - m.planned_peak()) / double(m.planned_peak()));
}

}  // namespace dlf::app
