// Which memory-saving flags (--recompute, --zero, --offload) make a run's layout fit its devices:
// each combination the layout allows is planned on meta devices, so the answer is computed from the
// model, not a fixed hint. Used by `dlf plan` for a layout that does not fit and by `dlf train`
// when a simulated device runs out of memory.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/device/sim_spec.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>
#include <dlf/plan/plan.h>

namespace dlf::plan {

/// The memory-saving flags of a run.
struct MemoryFlags {
  autograd::Recompute recompute = autograd::Recompute::none;  ///< --recompute
  int zero = 0;                                               ///< --zero: the ZeRO stage, 0 to 3
  Offload offload = Offload::none;                            ///< --offload
};

/// What is planned: the run's model, layout, devices and batch.
struct FlagsQuery {
  std::string model;  ///< a registered name
  /// a GPT by its dimensions (dlf plan --layers ...), planned instead of `model`
  std::optional<GPTConfig> gpt = std::nullopt;
  parallel::Layout layout;  ///< dp x tp x pp
  SimSpec spec;             ///< the devices
  /// the global batch (rows), tokens a row (0: the model's) and rows a micro-batch
  ///@{
  int64_t batch = 0, seq = 0, micro_batch = 1;
  ///@}
  DType dtype = DType::f32;  ///< f32, or bf16 (mixed precision)
  /// the pipeline's schedule
  parallel::PipelineSchedule schedule = parallel::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;  ///< chunks of layers per pipeline rank (interleaved)
};

/// One combination of flags, planned.
struct FlagsPlan {
  MemoryFlags flags;       ///< what was planned
  int64_t peak_bytes = 0;  ///< the busiest device's planned peak
  double step_s = 0;       ///< the predicted step time, seconds
  bool fits = false;       ///< the peak is within the device's memory
};

/// Every combination the layout allows (ZeRO needs dp > 1), planned: those that fit first, fastest
/// first, then the others by peak memory.
std::vector<FlagsPlan> plan_memory_flags(const FlagsQuery& query);
/// `--offload NAME` under `--zero ZERO`: params (ZeRO-3's parameter shards) needs --zero 3.
Offload offload_flag(const std::string& name, int zero);
/// "--recompute selective --zero 3 --offload params", or "none".
std::string flags_str(const MemoryFlags& flags);
/// One sentence for a run with `current` flags that does not fit: the fastest flags that fit
/// and their planned peak, or that none does.
std::string fitting_flags_hint(const FlagsQuery& query, const MemoryFlags& current);

}  // namespace dlf::plan
