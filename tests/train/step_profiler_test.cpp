#include <dlf/core/factory.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/train/step_profiler.h>

#include <sstream>

#include "test_util.h"

namespace dlf {

TEST_CASE("step profiler: the steps after the skipped ones, their ops and their time") {
  SimSpec peaks = sim_preset("a100-40gb");
  train::StepProfiler profiler({.skip = 1}, kCPU, peaks, DType::f32, false);
  const Tensor a = ones({4, 8}), b = ones({8, 2});
  for (int64_t step = 0; step < 3; ++step) {
    profiler.begin_step(step);
    const Tensor c = matmul(a, b);  // 2·4·8·2 = 128 FLOPs a step
    profiler.end_step(0.25 * double(step + 1), 0);
  }
  std::ostringstream out;
  profiler.print(out, "toy");
  const std::string text = out.str();
  CAPTURE(text);
  CHECK(text.find("toy: 2 steps profiled on rank 0 (wall-clock time); roofline of a100-40gb") == 0);
  // steps 1 and 2: (0.5 + 0.75) / 2 seconds each
  CHECK(text.find("per step: 625.00 ms") != std::string::npos);
  CHECK(text.find("0.00 GFLOP a step as dispatched") != std::string::npos);
  CHECK(text.find("matmul") != std::string::npos);
  std::ostringstream none;
  train::StepProfiler({.skip = 5}, kCPU, peaks, DType::f32, false).print(none, "toy");
  CHECK(none.str() == "toy: no step profiled (the run has no step after the 5 skipped)\n");
  test::check_error(
      [&] { train::StepProfiler({.compare = "meta"}, kCPU, peaks, DType::f32, false); },
      {"--compare meta", "--compare sim:PRESET or sim:SPEC.json"});
}

}  // namespace dlf
