// This CPU measured the way the simulator describes a device (`dlf calibrate`, the peaks of
// `dlf profile`'s roofline on the cpu device). On autograd's floor, the lowest it may live on:
// it times ops' backward as well as their forward (as gradcheck runs both).
#pragma once
#include <dlf/device/sim_spec.h>

namespace dlf::autograd {

/// Measures this CPU with the current thread count: the matmul rate per precision at a
/// GPT-2-sized product (1024 x 768 by 768 x 3072), the bandwidth of a 128 MiB copy, the time
/// dispatch and a tiny kernel add to an op, and the host's memory. Links between in-process
/// ranks run at the memory bandwidth. Takes a few seconds, on a thread of its own (whose
/// OpenMP team ends with it: an idle team left behind slows every later parallel region).
SimSpec measure_cpu();

/// Each op class's KernelEfficiency on this CPU at `peaks` (measure_cpu()'s): its ops (linear,
/// attention over sequences of 50, 64 and 256 tokens, causal and not, read from a linear
/// projection, a 3x3 convolution, layer_norm, streaming and GELU element-wise kernels, the Adam
/// update; forward and backward) at a large size give the share of the peaks its kernels reach,
/// solved so that the simulator prices them at their measured time (element-wise: the bandwidth
/// share from streaming kernels, then the FLOP/s share from GELU's); at a small size, what each
/// kernel adds beyond that; for attention, what each query row adds, from sizes whose rows
/// differ in length. Each size runs over copies of its tensors twice the last-level cache in
/// bytes (a training step's ops find their inputs out of cache), the sizes alternating, the
/// median pass of each taken. Takes about twenty seconds.
std::array<KernelEfficiency, kOpClasses> measure_kernel_efficiency(const SimSpec& peaks);

}  // namespace dlf::autograd
