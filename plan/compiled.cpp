#include <dlf/plan/compiled.h>

#include <set>

#include <dlf/core/random.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/models/registry.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/planning_communicator.h>

namespace dlf::plan {

void CapturedStep::run() {
  step->zero_grad();  // frees the last run's arena
  step->run_captured(batch);
}

const graph::Compiled& CapturedStep::captured() const { return *step->model().compiled(); }

CapturedStep capture_step(const StepModel& model, int64_t batch, int64_t seq,
                          const std::string& precision, const std::vector<std::string>& skip_passes,
                          const Replicas& r) {
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

StepModel::StepModel(std::string zoo_name) : name(std::move(zoo_name)) {
  if (models::family_of(name).gpt) gpt = models::family_of(name).gpt(name, 0);
}

StepModel::StepModel(models::GPTConfig config) : name(config.name), gpt(std::move(config)) {}

CompiledStepMemory compiled_step_memory(const StepModel& model, int64_t batch, int64_t seq,
                                        const std::string& precision, const Replicas& replicas) {
  CapturedStep c = capture_step(model, batch, seq, precision, {}, replicas);
  return memory_of(c, model.name);
}

CompiledPlan plan_compiled_stages(const SimSpec& spec, const StepModel& model, int64_t batch,
                                  int64_t seq, const std::string& precision, Replicas replicas) {
  SimSpec unbounded = spec;
  unbounded.memory_bytes = 0;  // planned whatever it needs, then held against the capacity
  const Device meta = parallel::devices_of(DeviceType::meta, 1).front();
  sim::configure(meta, unbounded);
  sim::reset(meta);
  DefaultDeviceGuard on(meta);
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

std::string compiled_fit_hint(const SimSpec& spec, const StepModel& model, int64_t batch,
                              int64_t seq, const std::string& precision, const Replicas& replicas,
                              bool refused_flags) {
  try {
    const CompiledPlan plan = plan_compiled_stages(spec, model, batch, seq, precision, replicas);
    if (!plan.fits(spec)) return "";
    return std::string("; compiled, it is planned to fit: --compile") +
           (refused_flags ? " without --recompute and --offload" : "") + " (peak " +
           format_bytes(double(plan.largest.planned_peak())) + " of " +
           format_bytes(double(spec.memory_bytes)) + ")";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace dlf::plan
