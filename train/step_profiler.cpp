#include <dlf/train/step_profiler.h>

#include <cstdio>

#include <dlf/device/sim_spec.h>

namespace dlf::train {

StepProfiler::StepProfiler(ProfileRequest request, Device device, SimSpec peaks, DType precision,
                           bool simulated)
    : request_(request),
      device_(device),
      peaks_(std::move(peaks)),
      precision_(precision),
      simulated_(simulated) {
  if (request_.compare.empty()) return;
  const std::string& arg = request_.compare;
  DLF_CHECK((arg == "sim" || arg.starts_with("sim:")) && !simulated, "--compare ", request_.compare,
            ": puts a sim device's predictions (--compare sim:PRESET or sim:SPEC.json) beside a "
            "measured run (--device cpu)");
  comparison_.emplace(sim_spec_from(arg == "sim" ? "a100-40gb" : arg.substr(4)));
}

// Only the steps are watched: evaluations and checkpoints between them are not. The comparison
// watches the skipped steps too, as a sim device would run them, to price the first step
// profiled with its kernels warm; what it summed of them is dropped.
void StepProfiler::begin_step(int64_t n) {
  if (n == request_.skip) {
    ops_.emplace(OpProfileOptions{.by_shape = request_.by_shape});
    if (request_.memory) memory_.emplace(device_);
    if (comparison_) comparison_->clear();
  } else if (ops_) {
    add_observer(&*ops_);
    if (memory_) add_observer(&*memory_);
  }
  if (comparison_) add_observer(&*comparison_);
}

void StepProfiler::end_step(double seconds, double exposed_comm_seconds) {
  if (comparison_) remove_observer(&*comparison_);
  if (!ops_) return;
  remove_observer(&*ops_);
  if (memory_) remove_observer(&*memory_);
  ++steps_;
  seconds_ += seconds;
  exposed_comm_seconds_ += exposed_comm_seconds;
}

void StepProfiler::print(std::ostream& os, const std::string& what) const {
  char line[512];
  if (!ops_ || steps_ == 0) {
    std::snprintf(line, sizeof line,
                  "%s: no step profiled (the run has no step after the %ld skipped)\n",
                  what.c_str(), long(request_.skip));
    os << line;
    return;
  }
  const double peak = peaks_.peak_flops(math_precision(precision_));
  const double bandwidth = peaks_.memory_bandwidth;
  std::snprintf(line, sizeof line,
                "%s: %ld step%s profiled on rank 0 (%s time); roofline of %s: %.1f GFLOP/s "
                "(%s), %.1f GB/s\n",
                what.c_str(), long(steps_), steps_ > 1 ? "s" : "",
                simulated_ ? "simulated" : "wall-clock", peaks_.name.c_str(), peak / 1e9,
                dtype_name(precision_), bandwidth / 1e9);
  os << line;
  ops_->print(os, Roofline{.flops_per_s = peak, .bytes_per_s = bandwidth});
  const double n = double(steps_);
  const double step = seconds_ / n, in_ops = ops_->outermost().seconds / n;
  const double flops = ops_->outermost().flops / n;
  std::snprintf(line, sizeof line,
                "per step: %.2f ms; in ops %.2f ms (%.1f %%), outside them %.2f ms (%.1f %%: %s)\n",
                step * 1e3, in_ops * 1e3, 100 * in_ops / step, (step - in_ops) * 1e3,
                100 * (step - in_ops) / step,
                simulated_ ? "communication not hidden behind compute"
                           : "autograd and optimizer bookkeeping, data, waiting for other ranks");
  os << line;
  if (simulated_) {
    std::snprintf(line, sizeof line, "  exposed data-parallel communication %.2f ms (%.1f %%)\n",
                  exposed_comm_seconds_ / n * 1e3, 100 * exposed_comm_seconds_ / seconds_);
    os << line;
  }
  std::snprintf(line, sizeof line,
                "  %.2f GFLOP a step as dispatched: %.1f GFLOP/s, MFU %.3f of the %s peak\n",
                flops / 1e9, flops / step / 1e9, flops / step / peak, dtype_name(precision_));
  os << line;
  if (memory_) memory_->print(os);
  if (comparison_) comparison_->print(os, steps_, seconds_);
}

}  // namespace dlf::train
