// Training progress on stderr: a bar redrawn in place on a terminal, plain lines otherwise.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace dlf::train {

/// A run's progress (see above).
class Progress {
 public:
  /// Steps first..total-1 will be reported; `every` spaces the plain lines; throughput is in
  /// `unit`s per second ("tok", "img").
  Progress(int64_t first, int64_t total, int64_t every, std::string unit);
  /// After step `step` (0-based) finished with this loss and throughput; `extra` follows them
  /// (the simulated step time and memory).
  void update(int64_t step, double loss, double per_s, const std::string& extra = {});
  /// A line of its own (an evaluation, a checkpoint), not overwritten by the bar.
  void note(const std::string& line);
  void finish();  ///< ends the bar

 private:
  std::string eta(int64_t step) const;
  int64_t first_, total_, every_;
  std::string unit_;
  bool terminal_;
  bool bar_drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

/// A long phase of known length inside a command (the test set, sampling): "what done/total
/// unit" redrawn in place on a terminal, a plain line every few seconds otherwise, nothing when
/// `show` is false (the other ranks).
class PhaseProgress {
 public:
  /// `total` `unit`s of `what` to go through.
  PhaseProgress(bool show, std::string what, int64_t total, std::string unit);
  ~PhaseProgress();
  PhaseProgress(const PhaseProgress&) = delete;
  PhaseProgress& operator=(const PhaseProgress&) = delete;
  void update(int64_t done);  ///< `done` of the total so far

 private:
  bool show_, terminal_;
  std::string what_, unit_;
  int64_t total_;
  std::chrono::steady_clock::time_point last_;
};

/// An evaluation's progress over the test set (models::TaskSetup::eval_progress) as a
/// PhaseProgress of images, cleared when done reaches total.
std::function<void(int64_t done, int64_t total)> evaluation_progress();

}  // namespace dlf::train
