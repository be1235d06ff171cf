// What a run needs of this machine's memory. In-process ranks share one process: a cpu rank's
// tensors are host memory, and so are a sim device's (it computes on the CPU), so a layout must
// fit the simulated devices and the host — the kernel's OOM killer does not wait for an error.
#pragma once
#include <cstdint>

#include <dlf/models/plan.h>

namespace dlf::app {

/// Bytes this process may plan to take: DLF_HOST_MEMORY (8G, 512M, bytes) when set, else
/// MemAvailable of /proc/meminfo.
double available_host_memory();

/// Host bytes of a run laid out as `plan`: every device at the plan's peak (the most loaded
/// stage's), plus what the process holds beside them — the whole model the ranks start from
/// and, for checkpoints, the whole model and optimizer state gathered on the lead rank.
double host_memory_needed(const models::Plan& plan);

/// The same for a family the planner does not cover: `replicas` whole replicas of
/// `parameters` with their gradients and Adam state, and the same shared copies; activations
/// are not counted.
double host_memory_needed(int64_t parameters, int replicas);

}  // namespace dlf::app
