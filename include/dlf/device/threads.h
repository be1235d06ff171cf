// One thread setting for every pool dlf uses (its own kernels and oneDNN share OpenMP).
//
// Idle OpenMP threads spin before they sleep, and libgomp's default spin (300,000 rounds)
// starves another busy process on the same cores. Any program that links libdlf starts libgomp
// with GOMP_SPINCOUNT=10000 instead, unless its environment sets OMP_WAIT_POLICY or
// GOMP_SPINCOUNT (device/openmp_spin_at_load.c): nothing to call, no variable left in the
// environment.
#pragma once

namespace dlf {

/// The most kernel threads dlf will run (more than any machine it runs on has cores).
inline constexpr int kMaxThreads = 1024;

/// Sets the number of CPU threads used by kernels, in every thread that runs ops, from 1 to
/// kMaxThreads. The default is DLF_NUM_THREADS from the environment, else the number of cores.
void set_num_threads(int n);
/// The kernel threads of the calling thread (its own setting if it has one).
int num_threads();
/// Gives the calling thread its own kernel thread count (a rank among several); 0 drops it.
void set_thread_num_threads(int n);

/// At most `slots` rank threads run kernels at once (0: no limit). N ranks on a machine with
/// fewer cores take turns instead of thrashing: a rank takes a slot at its first kernel and
/// keeps it until it waits for its peers (a collective), so ranks switch rarely and each keeps
/// its caches warm while it runs.
void set_kernel_slots(int slots);
/// Marks the calling thread as a rank (subject to kernel slots) or not.
void set_rank_thread(bool is_rank);

namespace detail {
/// Applies the current setting to the calling thread's OpenMP pool (cheap when unchanged).
void apply_num_threads();

/// Before a kernel: a rank thread without a slot waits for one (no-op otherwise).
void acquire_kernel_slot();
/// Before a rank waits for its peers: gives its slot to a rank that can run.
void release_kernel_slot();
}  // namespace detail

}  // namespace dlf
