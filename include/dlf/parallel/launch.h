// SPMD in one process: N ranks on N threads, rank i on device i, joined by an in-process
// world communicator.
#pragma once
#include <functional>
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// `n` devices of one kind: sim:0 .. sim:n-1, meta:0 .. meta:n-1, or the cpu n times.
std::vector<Device> devices_of(DeviceType type, int n);

/// Runs `fn(world)` on one thread per device and waits for all (one device: on the calling
/// thread, which keeps its thread-local state and its OpenMP team). The ranks share the machine's
/// kernel threads (num_threads()): each rank gets its share, and no more ranks run kernels at
/// once than there are threads, so N ranks on a few cores take turns instead of thrashing.
/// When a rank throws, the others stop at their next collective; the first rank's exception
/// is rethrown here.
void run_ranks(const std::vector<Device>& devices,
               const std::function<void(Communicator& world)>& fn);

}  // namespace dlf::parallel
