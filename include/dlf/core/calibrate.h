// This CPU measured the way the simulator describes a device (`dlf calibrate`, the peaks of
// `dlf profile`'s roofline on the cpu device).
#pragma once
#include <dlf/device/sim_spec.h>

namespace dlf {

/// Measures this CPU with the current thread count: the matmul rate per precision at a
/// GPT-2-sized product (1024 x 768 by 768 x 3072), the bandwidth of a 128 MiB copy, the time
/// dispatch and a tiny kernel add to an op, and the host's memory. Links between in-process
/// ranks run at the memory bandwidth. Takes a few seconds.
SimSpec measure_cpu();

/// Each op class's KernelEfficiency on this CPU at `peaks` (measure_cpu()'s): one op of the
/// class (linear, causal attention, a 3x3 convolution, layer_norm, gelu, the Adam update), timed
/// at a small and a large size; the line through the two (time against roofline time) gives
/// the share of the peak its kernels reach (the slope's inverse) and what each adds beyond
/// the launch overhead (the intercept). Takes a second or two.
std::array<KernelEfficiency, kOpClasses> measure_kernel_efficiency(const SimSpec& peaks);

}  // namespace dlf
