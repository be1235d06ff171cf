// What a GPT plan says: a few lines for people (dlf plan) and one JSON line.
#include <dlf/json_line.h>
#include <dlf/plan/plan.h>

#include <cstdio>
#include <sstream>

#include "common.h"

namespace dlf::plan {

std::string describe(const Plan& p) {
  const PlanOptions& o = p.options;
  const StagePlan& w = p.worst;
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s (%s parameters) on %d x %s: dp %d x tp %d x pp %d, %s, %s%s\n",
                o.model.name.c_str(), format_count(double(p.parameters)).c_str(),
                o.layout.devices(), o.spec.name.c_str(), o.layout.dp, o.layout.tp, o.layout.pp,
                dtype_name(o.dtype), parallel::schedule_label(o.schedule, o.virtual_stages).c_str(),
                plan_flags(o.recompute, o.zero, o.offload).c_str());
  os << line;
  std::snprintf(line, sizeof line,
                "  batch %ld sequences x %ld tokens; micro-batch %ld, %ld per pipeline\n",
                long(o.global_batch), long(o.seq), long(o.micro_batch), long(p.micro_batches));
  os << line;
  std::snprintf(line, sizeof line,
                "  per device (stage %d, %d layers, %s parameters): peak %s of %s — %s\n", w.stage,
                w.layers, format_count(double(w.parameters)).c_str(),
                format_bytes(w.peak_bytes).c_str(),
                o.spec.memory_bytes > 0 ? format_bytes(o.spec.memory_bytes).c_str() : "unlimited",
                p.fits ? "fits" : "DOES NOT FIT");
  os << line;
  os << "    at its peak (" << (w.peak_at_update ? "the optimizer step" : "forward + backward")
     << "): " << format_by_category(w.memory) << "\n";
  os << "    activations of one micro-batch " << format_bytes(w.activation_bytes) << ", "
     << w.in_flight;
  if (o.virtual_stages > 1) os << " chunks of 1/" << o.virtual_stages << " of them";
  os << " held at once\n";
  const StagePlan& b = p.stages.at(size_t(p.slowest));
  std::snprintf(line, sizeof line,
                "  per micro-batch%s: forward %.1f ms, backward %.1f ms, tp allreduce %.1f ms, "
                "pipeline send %.2f ms\n",
                o.layout.pp > 1 ? (" on stage " + std::to_string(b.stage) + " (" +
                                   std::to_string(b.layers) + " layers, the slowest)")
                                      .c_str()
                                : "",
                b.forward_s * 1e3, b.backward_s * 1e3, b.tp_comm_s * 1e3, p.p2p_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "  step: %.3f s = %.2f x %.1f ms (bubble %.0f %%) + dp allreduce %.1f ms exposed "
                "(of %.1f) + optimizer %.1f ms\n",
                p.step_s, double(p.micro_batches) + p.fill_s / p.stage_s, p.stage_s * 1e3,
                100 * p.bubble_fraction, p.dp_exposed_s * 1e3, p.dp_allreduce_s * 1e3,
                p.optimizer_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "  %s %.0f tokens/s, %.1f TFLOP/s a device (6N + 12LTC a token), MFU %.1f %%%s\n",
                p.fits ? "predicted" : "it would run at", p.tokens_per_s, p.flops_per_device / 1e12,
                100 * p.mfu, p.fits ? "" : " — if it fit: it does not");
  os << line << describe_breakdown(p) << "  " << limit_line(p) << "\n";
  return os.str();
}

std::string to_json_line(const Plan& p) {
  const PlanOptions& o = p.options;
  JsonLine line;
  line.add("bench", "plan")
      .add("case", o.model.name + " dp" + std::to_string(o.layout.dp) + " tp" +
                       std::to_string(o.layout.tp) + " pp" + std::to_string(o.layout.pp))
      .add("impl", "sim")
      .add("threads", 1)
      .add("metric", "step_time")
      .add("value", p.step_s)
      .add("unit", "s")
      .add("device", o.spec.name)
      .add("devices", o.layout.devices())
      .add("tokens_per_s", p.tokens_per_s)
      .add("mfu", p.mfu)
      .add("tflops_per_device", p.flops_per_device / 1e12)
      .add("peak_bytes", double(p.worst.peak_bytes))
      .add("fits", p.fits)
      .add("parameters", double(p.parameters))
      .add("batch", o.global_batch)
      .add("micro_batch", o.micro_batch)
      .add("micro_batches", p.micro_batches)
      .add("schedule", parallel::schedule_name(o.schedule))
      .add("virtual_stages", o.virtual_stages)
      .add("stage_ms", p.stage_s * 1e3)
      .add("bubble_fraction", p.bubble_fraction)
      .add("fill_ms", p.fill_s * 1e3)
      .add("p2p_ms", p.p2p_s * 1e3)
      .add("dp_comm_ms", p.dp_allreduce_s * 1e3)
      .add("dp_exposed_ms", p.dp_exposed_s * 1e3)
      .add("optimizer_ms", p.optimizer_s * 1e3)
      .add("most_memory_stage", p.worst.stage)
      .add("slowest_stage", p.slowest);
  for (const StagePlan& st : p.stages) {
    const std::string stage = "stage" + std::to_string(st.stage) + "_";
    line.add(stage + "peak_bytes", double(st.peak_bytes))
        .add(stage + "forward_ms", st.forward_s * 1e3)
        .add(stage + "backward_ms", st.backward_s * 1e3)
        .add(stage + "tp_comm_ms", st.tp_comm_s * 1e3);
  }
  add_memory_fields(line, p.worst.memory);
  add_breakdown_fields(line, p);
  return line.str();
}

}  // namespace dlf::plan
