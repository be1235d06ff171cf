// What the planners share: the meta device they run on, and their JSON memory fields.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <dlf/device/sim_device.h>
#include <dlf/json_line.h>

namespace dlf::models {

/// The meta device plans run on: one at a time, in the calling thread.
inline constexpr Device kPlanDevice{DeviceType::meta, 64};

/// Gives the plan device `spec`'s cost model with unlimited memory (a plan reports whether it
/// fits rather than stopping), its clock at zero and nothing allocated.
inline void reset_plan_device(const SimSpec& spec) {
  SimSpec unlimited = spec;
  unlimited.memory_bytes = 0;
  sim::configure(kPlanDevice, unlimited);
  sim::reset(kPlanDevice);
}

/// ZeRO over `dp` ranks on a replica's memory at its peak (parallel/zero.h): stage 1 keeps
/// 1/dp of the optimizer state, stage 2 of the gradients too, stage 3 of the parameters too
/// (FSDP gathers one block at a time; the parameters outside the blocks, which it keeps whole,
/// and the gathered block are left out of this arithmetic). Returns the bytes it saves.
inline int64_t shard_for_zero(BytesByCategory& memory, int zero, int dp) {
  int64_t saved = 0;
  auto shard = [&](MemoryCategory c) {
    int64_t& bytes = memory[static_cast<int>(c)];
    const int64_t kept = (bytes + dp - 1) / dp;
    saved += bytes - kept;
    bytes = kept;
  };
  if (zero >= 1) shard(MemoryCategory::optimizer_state);
  if (zero >= 2) shard(MemoryCategory::gradients);
  if (zero >= 3) shard(MemoryCategory::parameters);
  return saved;
}

/// The data-parallel communication of a step over `group`, and how much of it the step waits
/// for: DDP's allreduce overlaps backward; ZeRO-1 adds the allgather of the updated
/// parameters after the step; ZeRO-2 reduce-scatters instead of allreducing, blocking (the
/// communicator's reduce_scatter is synchronous), then allgathers; ZeRO-3 gathers each
/// block's parameters in forward and again in backward and reduce-scatters its gradients,
/// 1.5x DP's bytes, all blocking (no prefetch yet).
struct ZeroComm {
  double seconds = 0, exposed = 0;
};
inline ZeroComm zero_comm(const SimSpec& spec, int zero, double grad_bytes,
                          const std::vector<int>& group, double backward_s) {
  if (group.size() < 2) return {};
  auto time = [&](sim::Collective kind) {
    return sim::collective_seconds(spec, kind, grad_bytes, group);
  };
  if (zero >= 3) {
    const double t = time(sim::Collective::reduce_scatter) + 2 * time(sim::Collective::allgather);
    return {t, t};
  }
  if (zero >= 2) {
    const double t = time(sim::Collective::reduce_scatter) + time(sim::Collective::allgather);
    return {t, t};
  }
  const double allreduce = time(sim::Collective::allreduce);
  const double gather = zero == 1 ? time(sim::Collective::allgather) : 0;
  return {allreduce + gather, std::max(0.0, allreduce - backward_s) + gather};
}

/// ", recompute, ZeRO-2": the memory-saving flags of a plan, for its first line.
inline std::string plan_flags(bool recompute, int zero) {
  return std::string(recompute ? ", recompute" : "") +
         (zero > 0 ? ", ZeRO-" + std::to_string(zero) : "");
}

/// "<category>_bytes" for each memory category.
inline void add_memory_fields(JsonLine& line, const BytesByCategory& memory) {
  for (int c = 0; c < kMemoryCategories; ++c) {
    std::string name(memory_category_name(static_cast<MemoryCategory>(c)));
    std::replace(name.begin(), name.end(), ' ', '_');
    line.add(name + "_bytes", double(memory[c]));
  }
}

}  // namespace dlf::models
