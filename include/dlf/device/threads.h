// One thread setting for every pool dlf uses (its own kernels and oneDNN share OpenMP).
#pragma once

namespace dlf {

/// Sets the number of CPU threads used by kernels, in every thread that runs ops.
/// The default is DLF_NUM_THREADS from the environment, else the number of cores.
void set_num_threads(int n);
int num_threads();

namespace detail {
/// Applies the current setting to the calling thread's OpenMP pool (cheap when unchanged).
void apply_num_threads();
}  // namespace detail

}  // namespace dlf
