#include <dlf/plan/reports.h>

#include <map>

#include <dlf/device/formatted.h>
#include <dlf/graph/graph.h>
#include <dlf/graph/memory_plan.h>
#include <dlf/graph/passes.h>
#include <dlf/json_line.h>

namespace dlf::plan {
namespace {

// A GPT's micro-batch, or a replica's rows (taken at once).
int64_t planned_micro(const CompiledRun& r) {
  return r.replicas.micro_batch > 0 ? r.replicas.micro_batch : r.rows;
}

}  // namespace

std::string to_json_line(const CompiledPlan& plan, const CompiledRun& r) {
  const CompiledStepMemory& m = plan.largest;
  const Replicas& l = r.replicas;
  JsonLine line;
  line.add("model", r.model.name)
      .add("device", r.spec.name)
      .add("compiled", true)
      .add("dp", l.dp)
      .add("tp", l.tp)
      .add("pp", l.pp)
      .add("stage", plan.stage);
  for (size_t s = 0; l.pp > 1 && s < plan.stage_peaks.size(); ++s)  // each stage's peak
    line.add("peak_bytes_stage" + std::to_string(s), plan.stage_peaks[s]);
  line.add("zero", l.zero)
      .add("batch", m.batch)
      .add("micro_batch", planned_micro(r))
      .add("seq", m.seq)
      .add("nodes", int64_t(m.nodes))
      .add("peak_bytes", m.planned_peak())
      .add("parameters_bytes", m.parameters)
      .add("optimizer_state_bytes", m.optimizer_state)
      .add("batch_bytes", m.batch_bytes)
      .add("arena_bytes", m.arena)
      .add("capacity_bytes", r.spec.memory_bytes)
      .add("fits", plan.fits(r.spec));
  return line.str();
}

std::string describe(const CompiledPlan& plan, const CompiledRun& r) {
  const CompiledStepMemory& m = plan.largest;
  const Replicas& l = r.replicas;
  const int64_t capacity = r.spec.memory_bytes;
  std::string s = formatted(
      "%s on %lld x %s, compiled: one training step (forward, backward, %s%sclipping, %sAdamW) "
      "captured on a meta device, %zu nodes after the passes, %s\n",
      r.model.name.c_str(), (long long)l.ranks(), r.spec.name.c_str(),
      l.tp > 1 ? ("sharded over " + std::to_string(l.tp) + " tensor-parallel ranks, ").c_str() : "",
      l.dp == 1     ? ""
      : l.zero == 3 ? "each block's parameters gathered, gradients reduce-scattered, "
      : l.zero == 2 ? "gradients reduce-scattered, "
                    : "gradients allreduced, ",
      l.zero > 0 ? ("ZeRO-" + std::to_string(l.zero) + " ").c_str() : "", m.nodes,
      r.precision.c_str());
  s += formatted("  batch %lld x %lld per replica\n", (long long)m.batch, (long long)m.seq);
  if (l.pp > 1)
    s += formatted(
        "  %d pipeline stages, %s, micro-batches of %lld: stage %d's peak is the largest\n", l.pp,
        parallel::schedule_label(l.schedule, l.virtual_stages).c_str(), (long long)l.micro_batch,
        plan.stage);
  else if (planned_micro(r) < r.rows)
    s += formatted("  micro-batches of %lld, their gradients accumulated\n",
                   (long long)planned_micro(r));
  s += formatted("  per device: peak %s%s%s — %s\n", format_bytes(double(m.planned_peak())).c_str(),
                 capacity > 0 ? " of " : "",
                 capacity > 0 ? format_bytes(double(capacity)).c_str() : "",
                 plan.fits(r.spec) ? "fits" : "does not fit");
  s += formatted(
      "    parameters %s, optimizer state %s, batch %s, arena %s (activations, "
      "temporaries and gradients: the memory plan's one block)\n",
      format_bytes(double(m.parameters)).c_str(), format_bytes(double(m.optimizer_state)).c_str(),
      format_bytes(double(m.batch_bytes)).c_str(), format_bytes(double(m.arena)).c_str());
  return s;
}

std::string describe(const CapturedStep& c, const std::string& model, const Device& device,
                     const std::string& precision) {
  std::string s;
  const graph::Compiled& compiled = c.captured();
  const graph::CompileReport& r = compiled.last_report();
  const graph::Graph& g = compiled.last_executable().graph();
  s += formatted(
      "%s: one training step (forward, backward, clipping, AdamW), batch %lld x %lld, %s, %s\n",
      model.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.seq),
      device.str().c_str(), precision.c_str());
  s += formatted("captured %zu nodes in %.1f ms\n", r.nodes_captured, r.capture_ms);
  s += formatted("%-24s %8s %8s %9s\n", "pass", "before", "after", "ms");
  for (const graph::PassReport& p : r.passes)
    s += formatted("%-24s %8zu %8zu %9.2f\n", p.pass.c_str(), p.nodes_before, p.nodes_after, p.ms);
  std::map<std::string, int> ops;
  for (const graph::Node& n : g.nodes) ++ops[n.op->name];
  std::string line;
  for (const auto& [name, count] : ops) line += " " + name + " " + std::to_string(count);
  s += formatted("ops:%s\n", line.c_str());
  std::map<std::string, int> chains;
  for (const graph::Node& n : g.nodes)
    if (const std::string chain = graph::fused_chain(n); !chain.empty()) ++chains[chain];
  for (const auto& [chain, count] : chains)
    s += formatted("fused %3d x %s\n", count, chain.c_str());
  std::map<graph::BufferKind, std::pair<int, double>> kinds;
  for (const graph::Buffer& b : g.buffers) {
    kinds[b.kind].first++;
    kinds[b.kind].second += double(b.nbytes);
  }
  for (const auto& [kind, v] : kinds)
    s += formatted("%-9s %5d buffers, %s\n", graph::kind_name(kind).c_str(), v.first,
                   format_bytes(v.second).c_str());
  s += formatted("memory plan: arena %s (best possible %s)\n",
                 format_bytes(double(g.arena_bytes)).c_str(),
                 format_bytes(double(graph::arena_lower_bound(g))).c_str());
  return s;
}

std::string describe(const CompiledStepMemory& m) {
  return formatted(
      "peak: planned %s (parameters %s, optimizer state %s, batch %s, arena %s); the "
      "allocator's high-water over a step %s (%+.1f %%)\n",
      format_bytes(double(m.planned_peak())).c_str(), format_bytes(double(m.parameters)).c_str(),
      format_bytes(double(m.optimizer_state)).c_str(), format_bytes(double(m.batch_bytes)).c_str(),
      format_bytes(double(m.arena)).c_str(), format_bytes(double(m.measured_peak)).c_str(),
      100.0 * double(m.measured_peak - m.planned_peak()) / double(m.planned_peak()));
}

std::string describe(const SearchResult& found, int devices) {
  if (found.best) {
    const Plan& best = *found.best;
    return formatted(
        "  fits on %d devices: %s (dp %d), peak %s, step %.3f s, MFU %.1f %% — the fastest "
        "of %ld configurations (layouts, memory flags, micro-batches; %ld planned)\n",
        devices, configuration_flags(best).c_str(), best.options.layout.dp,
        format_bytes(double(best.worst.peak_bytes)).c_str(), best.step_s, 100 * best.mfu,
        long(found.candidates), long(found.planned));
  }
  return formatted(
      "  no dp x tp x pp layout of %d devices fits with any --recompute, --zero, --offload or "
      "--micro-batch (the least: %s, peak %s): more devices\n",
      devices, configuration_flags(found.least).c_str(),
      format_bytes(double(found.least.worst.peak_bytes)).c_str());
}

}  // namespace dlf::plan
