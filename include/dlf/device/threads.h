// One thread setting for every pool dlf uses (its own kernels and oneDNN share OpenMP).
#pragma once

namespace dlf {

/// Sets the number of CPU threads used by kernels, in every thread that runs ops.
/// The default is DLF_NUM_THREADS from the environment, else the number of cores.
void set_num_threads(int n);
/// The kernel threads of the calling thread (its own setting if it has one).
int num_threads();
/// Gives the calling thread its own kernel thread count (a rank among several); 0 drops it.
void set_thread_num_threads(int n);

/// At most `slots` threads run kernels at once (0: no limit). N ranks on a machine with fewer
/// cores take turns instead of thrashing.
void set_kernel_slots(int slots);

namespace detail {
/// Applies the current setting to the calling thread's OpenMP pool (cheap when unchanged).
void apply_num_threads();

/// Holds one kernel slot while it lives (nothing when slots are unlimited).
class KernelSlot {
 public:
  KernelSlot();
  ~KernelSlot();
  KernelSlot(const KernelSlot&) = delete;
  KernelSlot& operator=(const KernelSlot&) = delete;

 private:
  bool held_ = false;
};
}  // namespace detail

}  // namespace dlf
