// What `dlf train --report` and `dlf profile` watch of a run on its lead rank: the HTML report
// (report.h) and the step profiler (step_profiler.h), made in that rank's thread at its first
// step (their observers are the thread's) and fed by the trainer's hooks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <dlf/train/report.h>
#include <dlf/train/step_profiler.h>
#include <dlf/train/trainer.h>

namespace dlf::train {

/// What to watch of a run.
struct WatchOptions {
  ReportHeader header;      ///< the report's facts; its model names the profile's table too
  std::string report = {};  ///< the HTML report to write at the end; empty: none
  std::optional<ProfileRequest> profile = {};  ///< rank 0's ops, printed at the end; none: none
  std::string precision = "fp32";              ///< what the steps compute in: fp32 or bf16
  Device device = kCPU;                        ///< the lead rank's
  SimSpec roofline = {};  ///< the profile's peaks: the device's spec, or the measured CPU's
  int64_t first = 0;      ///< the run's first step (0-based: a resumed run's is the checkpoint's)
  int64_t stop = 0;       ///< the step it stops after
};

/// The report and the profiler of one run.
class RunWatch {
 public:
  /// Watches nothing until the run's first step.
  explicit RunWatch(WatchOptions options);
  /// The trainer's hooks (none when there is nothing to watch): at the end the profile's table
  /// goes to stdout, and the report is written (said on stderr unless the run stopped early).
  TrainHooks hooks();

 private:
  void start();

  WatchOptions o_;
  bool started_ = false;
  std::optional<StepProfiler> profiler_;
  std::optional<RunReport> report_;
};

}  // namespace dlf::train
