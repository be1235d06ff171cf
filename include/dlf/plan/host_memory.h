// What a run needs of this machine's memory. In-process ranks share one process: a cpu rank's
// tensors are host memory, and so are a sim device's (it computes on the CPU), so a layout must
// fit the simulated devices and the host — the kernel's OOM killer does not wait for an error.
#pragma once
#include <cstdint>
#include <string>

#include <dlf/plan/plan.h>

namespace dlf::plan {

/// Bytes this process may plan to take: DLF_HOST_MEMORY (8G, 512M, bytes) when set, else
/// MemAvailable of /proc/meminfo.
double available_host_memory();

/// Host bytes of a run laid out as `plan`: every device at the plan's peak (the most loaded
/// stage's), plus what the process holds beside them — the whole model the ranks start from
/// and, for checkpoints, the whole model and optimizer state gathered on the lead rank.
double host_memory_needed(const Plan& plan);

/// The same for a family the planner does not cover: `replicas` whole replicas of
/// `parameters` with their gradients and Adam state, and the same shared copies; activations
/// are not counted.
double host_memory_needed(int64_t parameters, int replicas);

/// Whether a run needing `needed` bytes fits `available`: at most 90 % of it.
bool host_fits(double needed, double available);
/// "" when it fits; else why, naming `what`, and what to change.
std::string host_refusal(double needed, const std::string& what, double available);
/// host_refusal() as a dlf::Error: a layout whose ranks would not fit this machine is refused up
/// front (the kernel's OOM killer would end it without a word).
void check_host_fits(double needed, const std::string& what, double available);

}  // namespace dlf::plan
