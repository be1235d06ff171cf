#include <dlf/autograd/calibrate.h>
#include <dlf/device/atomic_file.h>
#include <dlf/device/threads.h>
#include <dlf/error.h>

#include <cstdio>
#include <iostream>

#include "calibrate.h"

namespace dlf::app {

void run_calibrate(const std::string& out) {
  if (!out.empty()) check_writable(out, "device spec");  // before measuring
  SimSpec spec = autograd::measure_cpu();
  spec.efficiency = autograd::measure_kernel_efficiency(spec);
  if (!out.empty()) {
    replace_file(out, "device spec", to_json(spec));
  }
  std::fprintf(stderr,
               "this CPU on %d threads: matmul %.1f GFLOP/s f32, %.1f bf16, %.1f f64; copy "
               "%.1f GB/s; %.2f us an op; %.1f GiB; kernels start cold after %.0f MiB\n",
               num_threads(), spec.peak_flops_f32 / 1e9, spec.peak_flops_bf16 / 1e9,
               spec.peak_flops_f64 / 1e9, spec.memory_bandwidth / 1e9, spec.launch_overhead * 1e6,
               double(spec.memory_bytes) / double(int64_t(1) << 30), spec.cold_bytes / (1 << 20));
  for (int c = 0; c < kOpClasses; ++c) {
    const KernelEfficiency& e = spec.efficiency[size_t(c)];
    std::fprintf(
        stderr,
        "  %-18s kernels reach %.2f of the FLOP/s, %.2f of the bandwidth, +%.2f us each, +%.1f "
        "us cold%s\n",
        std::string(op_class_name(OpClass(c))).c_str(), e.compute, e.memory, e.overhead * 1e6,
        e.cold_overhead * 1e6,
        e.row_overhead > 0
            ? detail::concat(", +", static_cast<int64_t>(e.row_overhead * 1e9 + 0.5), " ns a row")
                  .c_str()
            : "");
  }
  if (out.empty()) {
    std::cout << to_json(spec);
  } else {
    std::fprintf(stderr, "written to %s: use it as --device sim:%s\n", out.c_str(), out.c_str());
  }
}

}  // namespace dlf::app
