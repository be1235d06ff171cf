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

}  // namespace dlf
