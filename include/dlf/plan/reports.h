// What `dlf plan` and `dlf graph` print of a compiled step's plan, a captured step and a search,
// beside describe(Plan) and describe(ReplicaPlan) (plan.h).
#pragma once
#include <cstdint>
#include <string>

#include <dlf/plan/compiled.h>
#include <dlf/plan/search.h>

namespace dlf::plan {

/// A compiled step's plan as it was asked for.
struct CompiledRun {
  StepModel model;        ///< the zoo model or GPT planned
  SimSpec spec;           ///< the device
  Replicas replicas;      ///< the layout; micro_batch 0 when not a GPT (a replica's rows at once)
  int64_t rows = 0;       ///< a replica's rows
  std::string precision;  ///< "fp32" or "bf16"
};

/// A few lines for people: what the step holds, per device and by category, and whether it fits.
std::string describe(const CompiledPlan& plan, const CompiledRun& run);
/// One `plan` JSON line (with "compiled": true).
std::string to_json_line(const CompiledPlan& plan, const CompiledRun& run);

/// `dlf graph`'s account of a captured step of `model` on `device`: its capture, each pass's
/// nodes and time, its ops, fused chains, buffers by kind and the memory plan's arena.
std::string describe(const CapturedStep& step, const std::string& model, const Device& device,
                     const std::string& precision);
/// One line: a compiled step's planned peak by part beside the allocator's measured high-water.
std::string describe(const CompiledStepMemory& memory);

/// One line: the configuration search() found fastest on `devices` (its flags, dp, peak, step
/// and MFU, out of how many), or, when none fits, the least peak it planned.
std::string describe(const SearchResult& found, int devices);

}  // namespace dlf::plan
