// `dlf demo`: fits a small MLP with autograd on the CPU device and prints what it cost.
#pragma once

namespace dlf::app {

struct DemoOptions {
  int steps = 500;
  int hidden = 64;
  double lr = 0.05;
  unsigned seed = 0;
};

/// Returns the final loss.
double run_demo(const DemoOptions& options);

}  // namespace dlf::app
