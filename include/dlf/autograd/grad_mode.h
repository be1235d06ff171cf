// Whether ops record a backward graph: on by default, per thread.
#pragma once

namespace dlf::autograd {

bool grad_enabled();                  ///< whether ops record a graph on this thread
void set_grad_enabled(bool enabled);  ///< turns recording on or off on this thread

/// Sets grad mode for a scope and restores the previous mode after it.
class GradModeGuard {
 public:
  /// Sets `enabled` until the guard ends.
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

/// No graph is recorded inside (optimizer steps, evaluation).
struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};
/// Recording is on inside, even within a NoGradGuard.
struct EnableGradGuard : GradModeGuard {
  EnableGradGuard() : GradModeGuard(true) {}
};

}  // namespace dlf::autograd
