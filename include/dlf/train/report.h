// A training run's report (what `dlf train --report run.html` writes): one self-contained HTML
// file (no network, no script library) a person opens after a run: loss and throughput curves,
// the memory of one step by category over time, its op table and the layout. Inline SVG figures.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dlf/core/memory_profile.h>
#include <dlf/core/op_profile.h>

namespace dlf::train {

/// What the report says about the run besides its steps.
struct ReportHeader {
  std::string model = {};      ///< "gpt-nano"
  std::string layout = {};     ///< "dp 2 x tp 1 x pp 1, 1 micro-batch of 4"
  std::string device = {};     ///< "cpu", "a100-40gb"
  std::string flags = {};      ///< memory-saving and precision flags, as the run used them
  int64_t parameters = 0;      ///< of the whole model
  std::string item_unit = {};  ///< what throughput counts: "tokens", "images"
};

/// Collects a run on its lead rank and writes the report.
class RunReport {
 public:
  /// `profiled_step`: the step whose ops and memory are recorded (a warm one: the run's second,
  /// or its first when it has one); `device`: the lead rank's.
  RunReport(ReportHeader header, Device device, int64_t profiled_step);
  /// Before step `step` (0-based): starts observing if it is the profiled one.
  void begin_step(int64_t step);
  /// After it: its loss and throughput (items per second: measured, and simulated or 0).
  void end_step(int64_t step, double loss, double items_per_s, double sim_items_per_s);
  /// A validation loss after `step` steps.
  void evaluation(int64_t step, double loss);
  /// Writes the HTML to `path` (a temporary file renamed over it: a failed write leaves what
  /// was there).
  void write(const std::string& path) const;

 private:
  struct Step {
    int64_t step = 0;
    double loss = 0, items_per_s = 0, sim_items_per_s = 0;
  };
  struct Profiled {  // what the observers left of the profiled step
    std::vector<std::pair<std::string, OpProfile::Row>> ops;
    OpProfile::Row outermost;
    std::vector<MemorySample> memory;
  };

  ReportHeader header_;
  Device device_;
  int64_t profiled_step_;
  std::vector<Step> steps_;
  std::vector<std::pair<int64_t, double>> evaluations_;
  std::optional<OpProfile> ops_;
  std::optional<MemoryProfile> memory_;
  std::optional<Profiled> profiled_;
};

}  // namespace dlf::train
