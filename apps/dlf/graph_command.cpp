// `dlf graph`: capture, passes and memory plan of one training step, printed.
#include "graph_command.h"

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <dlf/dlf.h>
#include <dlf/nn/atomic_file.h>
#include <dlf/parallel/planning_communicator.h>

#include "devices.h"

namespace dlf::app {
namespace {

// A zoo model's training step under graph::Compiled, as `dlf train --compile` runs it: on one
// device, over data-parallel replicas (DDP or FSDP, and ZeRO, over a planning group) of a model
// whole or (BERT, ViT) one tensor-parallel rank's shard of it, or a GPT as one rank of a mesh
// (models::DistributedGPT over planning groups).
struct CapturedStep {
  std::unique_ptr<parallel::PlanningCommunicator> tp = {};  // outlives the shard's linears
  models::ExampleStep step = {};
  std::unique_ptr<parallel::Mesh> mesh = {};  // outlives the GPT over it
  std::unique_ptr<models::DistributedGPT> gpt = {};
  std::vector<Tensor> params = {};
  std::unique_ptr<parallel::PlanningCommunicator> dp = {};
  std::unique_ptr<parallel::DistributedDataParallel> ddp = {};
  std::unique_ptr<parallel::FullyShardedDataParallel> fsdp = {};  // ZeRO-3, instead of ddp
  std::unique_ptr<nn::optim::AdamW> opt = {};
  std::unique_ptr<parallel::ZeroOptimizer> zero = {};
  std::unique_ptr<graph::Compiled> compiled = {};
  parallel::ShardedParameters* zero3 = nullptr;  // FSDP's shards, the parameters' bytes
  DType precision = DType::f32;

  void run() {
    for (const Tensor& p : params) p.set_grad({});  // frees the last run's arena
    AutocastGuard autocast(autocast_for(precision));
    if (zero) {
      zero->begin_step();
    } else {
      opt->begin_step();
    }
    if (gpt) {
      (void)gpt->step(step.batch[0], step.batch[1]);
    } else {
      (void)(*compiled)(step.batch);
    }
  }
  // The step's graph::Compiled.
  const graph::Compiled& captured() const { return gpt ? *gpt->compiled() : *compiled; }
};

// c.opt's state, sharded over `dp` under ZeRO (over `shards`).
void init_optimizer_state(CapturedStep& c, int zero, parallel::Communicator* dp,
                          parallel::ShardedParameters* shards) {
  if (zero > 0) {
    c.zero = std::make_unique<parallel::ZeroOptimizer>(*c.opt, *dp, *shards);
    c.zero->init_state();
  } else {
    c.opt->init_state();
  }
}

// What runs after backward inside the step: clipping the gradients' norm over `norm_scope`, and
// the update.
std::function<void()> clip_and_update(const CapturedStep& c, parallel::NormScope norm_scope) {
  return [opt = c.opt.get(), zero = c.zero.get(), params = c.params, norm_scope] {
    if (zero) {
      zero->clip_and_update(params, 1.0, norm_scope);
    } else {
      nn::optim::clip_and_update(*opt, params, 1.0, [&](const auto& ps) {
        return parallel::global_norm_on_device(ps, norm_scope);
      });
    }
  };
}

// A GPT as one rank of `r`'s mesh, as dlf train runs it: its stage and shard of the example's
// GPT over planning groups, the example's batch its replica's rows.
void capture_on_mesh(CapturedStep& c, const models::GPTConfig& config, const Replicas& r) {
  const Device d = default_device();
  c.mesh = std::make_unique<parallel::Mesh>(
      parallel::Layout{.dp = r.dp, .tp = r.tp, .pp = r.pp},
      std::make_unique<parallel::PlanningCommunicator>(d, 0, r.dp, "dp"),
      std::make_unique<parallel::PlanningCommunicator>(d, 0, r.tp, "tp"),
      std::make_unique<parallel::PlanningCommunicator>(d, r.stage, r.pp, "pp"));
  const int64_t rows = c.step.batch_size;
  DLF_CHECK(r.micro_batch == 0 || rows % r.micro_batch == 0, "a rank's batch of ", rows,
            " sequences does not split into micro-batches of ", r.micro_batch);
  c.gpt = std::make_unique<models::DistributedGPT>(
      config, *c.mesh, c.step.model->state_dict(),
      models::DistributedGPTOptions{
          .micro_batches = r.micro_batch > 0 ? int(rows / r.micro_batch) : 1,
          .schedule = r.schedule,
          .virtual_stages = r.virtual_stages,
          .bucket_bytes = r.bucket_bytes,
          .zero = r.zero,
          .reduce_in_bf16 = r.reduce_in_bf16,
          .compile = true});
  c.step.model = nullptr;  // the whole GPT: the rank's stage and shard hold what it keeps
  c.step.loss = nullptr;
  c.params = c.gpt->module().parameters();
  c.opt = std::make_unique<nn::optim::AdamW>(c.params);
  init_optimizer_state(c, r.dp > 1 ? r.zero : 0, &c.mesh->dp(), c.gpt->shards());
  c.gpt->set_after_backward(clip_and_update(c, c.gpt->norm_scope()));
  if (r.dp > 1 && r.zero == 3) c.zero3 = c.gpt->shards();
}

// The gradients' norm of a tensor-parallel rank's shard: every parameter counted on tp rank 0
// (the one captured) and summed over the tp group, as ReplicaTask's; none without tp.
parallel::NormScope tensor_parallel_norm(const CapturedStep& c) {
  if (!c.tp) return {};
  return {.counts = {}, .groups = {c.tp.get()}};
}

// Any family over `r.dp` replicas (one: a device of its own), as dlf train runs them; under
// tensor parallelism (c.tp) the gradients' norm is summed over the tp group too.
void capture_replica(CapturedStep& c, const std::vector<std::string>& skip_passes,
                     const Replicas& r) {
  c.params = c.step.model->parameters();
  c.opt = std::make_unique<nn::optim::AdamW>(c.params);
  parallel::ShardedParameters* shards = nullptr;
  if (r.dp > 1) {
    c.dp = std::make_unique<parallel::PlanningCommunicator>(default_device(), 0, r.dp, "dp");
    if (r.zero == 3) {
      c.fsdp = std::make_unique<parallel::FullyShardedDataParallel>(
          *c.step.model, *c.dp, parallel::FSDPOptions{.reduce_in_bf16 = r.reduce_in_bf16});
      shards = c.zero3 = c.fsdp.get();
    } else {
      c.ddp = std::make_unique<parallel::DistributedDataParallel>(
          *c.step.model, *c.dp,
          parallel::DDPOptions{.bucket_bytes = r.bucket_bytes,
                               .shard_gradients = r.zero == 2,
                               .reduce_in_bf16 = r.reduce_in_bf16});
      shards = c.ddp.get();
    }
  }
  init_optimizer_state(c, r.zero, c.dp.get(), shards);
  c.compiled = std::make_unique<graph::Compiled>(
      graph::backward_step(
          [loss = c.step.loss, fsdp = c.fsdp.get()](const std::vector<Tensor>& batch) {
            if (fsdp) fsdp->unshard();
            return loss(batch);
          },
          [ddp = c.ddp.get(), fsdp = c.fsdp.get(),
           update = clip_and_update(c, tensor_parallel_norm(c))] {
            if (ddp) ddp->synchronize();
            if (fsdp) fsdp->synchronize();
            update();
          }),
      skip_passes);
}

// The step of `model` on the default device, run once: captured, optimised and planned.
CapturedStep capture_step(const StepModel& model, int64_t batch, int64_t seq,
                          const std::string& precision,
                          const std::vector<std::string>& skip_passes = {},
                          const Replicas& replicas = {}) {
  DLF_CHECK(replicas.zero >= 0 && replicas.zero <= 3 && (replicas.dp > 1 || replicas.zero == 0),
            "a captured step runs plain data parallelism or ZeRO-1, -2 or -3 over replicas (got "
            "dp ",
            replicas.dp, ", zero ", replicas.zero, ")");
  DLF_CHECK(replicas.pp == 1 || model.gpt, model.name,
            " has no pipeline stages: --pp is for the GPT models");
  DLF_CHECK(replicas.tp == 1 || model.gpt ||
                models::model_family(model.name) != models::ModelFamily::unet,
            model.name, " trains data-parallel only: --tp is for the GPT, BERT and ViT models");
  manual_seed(1234);
  Generator data(1234);
  CapturedStep c;
  if (!model.gpt && replicas.tp > 1) {
    c.tp = std::make_unique<parallel::PlanningCommunicator>(default_device(), 0, replicas.tp, "tp");
  }
  c.step = model.gpt
               ? models::gpt_example_step(*model.gpt, batch, seq, data)
               : models::example_step(model.name, batch, seq, data,
                                      c.tp ? parallel::megatron_linears(*c.tp) : nn::LinearMaker{});
  if (model.gpt && (replicas.ranks() > 1 ||
                    (replicas.micro_batch > 0 && replicas.micro_batch < c.step.batch_size))) {
    DLF_CHECK(skip_passes.empty(),
              "a GPT over several ranks or in micro-batches is captured with every pass");
    capture_on_mesh(c, *model.gpt, replicas);
  } else {
    capture_replica(c, skip_passes, replicas);
  }
  c.precision = precision == "bf16" ? DType::bf16 : DType::f32;
  c.run();
  return c;
}

// The plan's figures of a captured step, and the allocator's high-water over one more run.
CompiledStepMemory memory_of(CapturedStep& c, const std::string& model) {
  const graph::Graph& g = c.captured().last_executable().graph();
  CompiledStepMemory m{.model = model,
                       .batch = c.step.batch_size,
                       .seq = c.step.seq,
                       .nodes = g.nodes.size(),
                       .arena = int64_t(g.arena_bytes)};
  std::set<const Storage*> counted;  // the parameters', then each external one once
  for (const Tensor& p : c.params)   // ZeRO-3's released between uses: their shards instead
    if (!p.storage()->released() && counted.insert(p.storage().get()).second)
      m.parameters += int64_t(p.storage()->nbytes());
  if (c.zero3)
    for (const parallel::OwnedPiece& piece : c.zero3->owned_pieces())
      if (counted.insert(piece.value.storage().get()).second)
        m.parameters += int64_t(piece.value.storage()->nbytes());
  for (const graph::Buffer& b : g.buffers) {
    if (b.kind == graph::BufferKind::argument) m.batch_bytes += int64_t(b.nbytes);
    if (b.kind == graph::BufferKind::external && counted.insert(b.storage.get()).second)
      m.optimizer_state += int64_t(b.storage->nbytes());
  }
  for (const Tensor& p : c.params) p.set_grad({});  // the last arena gone before the peak resets
  Allocator& allocator = allocator_for(c.params.front().device());
  allocator.reset_peak();
  c.run();
  m.measured_peak = allocator.stats().peak_bytes;
  return m;
}

}  // namespace

StepModel::StepModel(std::string zoo_name) : name(std::move(zoo_name)) {
  if (models::model_family(name) == models::ModelFamily::gpt) gpt = models::gpt_config(name);
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
  if (!o.dot.empty()) nn::check_writable(o.dot, "--dot");  // before capturing
  if (!o.json.empty()) nn::check_writable(o.json, "--json");
  const std::vector<Device> devices = setup_devices(1, parse_device_arg(o.device));
  DefaultDeviceGuard on(devices[0]);
  CapturedStep c = capture_step(o.model, o.batch, o.seq, o.precision, o.skip_passes);
  const models::ExampleStep& s = c.step;
  const graph::Compiled& compiled = c.captured();
  const graph::CompileReport& r = compiled.last_report();
  const graph::Graph& g = compiled.last_executable().graph();
  std::printf(
      "%s: one training step (forward, backward, clipping, AdamW), batch %lld x %lld, %s, %s\n",
      o.model.c_str(), static_cast<long long>(s.batch_size), static_cast<long long>(s.seq),
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
    nn::replace_file(o.dot, "DOT file", graph::to_dot(g));
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
