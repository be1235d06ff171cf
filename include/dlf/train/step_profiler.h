// What `dlf profile` shows of a training run: rank 0's ops tabulated over a few steps, as
// torch.profiler's key_averages() does, and what a step is made of.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <dlf/core/memory_profile.h>
#include <dlf/core/op_profile.h>
#include <dlf/device/sim_spec.h>

#include <dlf/train/sim_comparison.h>

namespace dlf::train {

/// What `dlf profile` asks of a training run.
struct ProfileRequest {
  int64_t skip = 1;       ///< steps run before profiling starts (primitives built, caches warm)
  bool by_shape = false;  ///< one row per op and input shapes
  bool memory = false;    ///< also what uses the memory at its peak, and a timeline
  /// "sim:PRESET" or "sim:SPEC.json": put the times a sim device of that spec predicts beside
  /// the measured ones, by op class and per step (sim_comparison.h; runs on the cpu device);
  /// empty: none
  std::string compare = {};
};

/// Rank 0's ops and steps once the skipped steps are done.
class StepProfiler {
 public:
  /// `device`: rank 0's; `peaks`: the device's (its sim spec, or measure_cpu() on the cpu);
  /// `precision`: the dtype the run's matmuls compute in (f32, bf16); `simulated`: times are
  /// the sim clock's.
  StepProfiler(ProfileRequest request, Device device, SimSpec peaks, DType precision,
               bool simulated);
  /// Before step `n` of the run (0: its first): profiling starts after the skipped steps.
  void begin_step(int64_t n);
  /// After the step begun last: its time (simulated on sim devices) and its exposed
  /// communication (simulated; 0 on the cpu, where waiting shows as time outside ops).
  void end_step(double seconds, double exposed_comm_seconds);
  /// The table and the per-step figures; `what` names the run.
  void print(std::ostream& os, const std::string& what) const;

 private:
  ProfileRequest request_;
  Device device_;
  SimSpec peaks_;
  DType precision_;
  bool simulated_;
  std::optional<OpProfile> ops_;
  std::optional<MemoryProfile> memory_;
  std::optional<SimComparison> comparison_;
  int64_t steps_ = 0;
  double seconds_ = 0, exposed_comm_seconds_ = 0;
};

}  // namespace dlf::train
