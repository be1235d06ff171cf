#include <dlf/train/run_watch.h>

#include <cstdio>
#include <iostream>

namespace dlf::train {

RunWatch::RunWatch(WatchOptions options) : o_(std::move(options)) {}

TrainHooks RunWatch::hooks() {
  if (o_.report.empty() && !o_.profile) return {};
  return {.begin_step =
              [this](int64_t step) {
                if (!started_) start();
                if (profiler_) profiler_->begin_step(step - o_.first);
                if (report_) report_->begin_step(step);
              },
          .end_step =
              [this](const StepFigures& f) {
                if (report_)
                  report_->end_step(f.step, f.loss, f.items_per_s,
                                    f.simulated ? f.items_per_s * f.seconds / f.sim.seconds : 0);
                if (profiler_)
                  profiler_->end_step(f.simulated ? f.sim.seconds : f.seconds,
                                      f.sim.exposed_comm_seconds);
              },
          .evaluated =
              [this](int64_t step, const models::Evaluation& e) {
                if (report_) report_->evaluation(step, e.loss);
              },
          .ended =
              [this](const std::string& layout, bool stopped) {
                if (profiler_ && !stopped)
                  profiler_->print(std::cout,
                                   o_.header.model + " (" + layout + ", " + o_.precision + ")");
                if (!report_) return;
                report_->write(o_.report);
                if (!stopped) std::fprintf(stderr, "report written to %s\n", o_.report.c_str());
              }};
}

void RunWatch::start() {
  started_ = true;
  const bool simulated = o_.device.type != DeviceType::cpu;
  if (o_.profile)
    profiler_.emplace(*o_.profile, o_.device, o_.roofline,
                      o_.precision == "bf16" ? DType::bf16 : DType::f32, simulated);
  if (!o_.report.empty())  // a warm step where there is one
    report_.emplace(o_.header, o_.device, o_.stop - o_.first >= 2 ? o_.first + 1 : o_.first);
}

}  // namespace dlf::train
