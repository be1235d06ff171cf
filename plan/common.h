// What the planners share: the meta device they run on, and their JSON memory fields.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/device/sim_device.h>
#include <dlf/json_line.h>
#include <dlf/nn/module.h>
#include <dlf/plan/plan.h>

namespace dlf::plan {

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

/// What ZeRO's memory depends on besides the totals: the parameters outside every block (FSDP
/// gathers them for the whole step), the largest block's (gathered while it runs) and DDP's bucket
/// size (a bucket's gradients are flattened into a buffer of their own before they are reduced).
struct ZeroShape {
  int64_t root_param_bytes = 0, largest_block_bytes = 0;
  int64_t bucket_bytes = int64_t(25) << 20;
};

/// What FSDP gathers at once (the largest block) and keeps whole (the rest), from the model.
ZeroShape zero_shape(const nn::Module& model);

/// ZeRO over `dp` ranks on a replica's memory at its peak (parallel/zero.h, fsdp.h): stage 1
/// keeps 1/dp of the optimizer state; stage 2 also 1/dp of the gradients, plus the flat copy of
/// the bucket being reduced; stage 3 also keeps the blocks' parameters as 1/dp shards but the
/// rest whole, with two blocks gathered (the running one and the one prefetched), the flat copy
/// of a gather and the running block's gradients' flat copy. Returns the change of the peak
/// (negative when it saves).
inline int64_t shard_for_zero(BytesByCategory& memory, int zero, int dp, const ZeroShape& z) {
  int64_t change = 0;
  auto set = [&](MemoryCategory c, int64_t bytes) {
    int64_t& now = memory[static_cast<int>(c)];
    change += bytes - now;
    now = bytes;
  };
  auto part = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };
  const int64_t params = memory[static_cast<int>(MemoryCategory::parameters)];
  const int64_t grads = memory[static_cast<int>(MemoryCategory::gradients)];
  const int64_t temporaries = memory[static_cast<int>(MemoryCategory::temporaries)];
  if (zero >= 1)
    set(MemoryCategory::optimizer_state,
        part(memory[static_cast<int>(MemoryCategory::optimizer_state)]));
  if (zero == 2) {
    set(MemoryCategory::gradients, part(grads));
    set(MemoryCategory::temporaries, temporaries + std::min(z.bucket_bytes, grads));
  }
  if (zero >= 3) {  // shards of everything, the rest whole, two blocks gathered
    set(MemoryCategory::parameters, part(params) + z.root_param_bytes + 2 * z.largest_block_bytes);
    set(MemoryCategory::gradients, part(grads) + z.largest_block_bytes);
    set(MemoryCategory::temporaries, temporaries + z.largest_block_bytes);
  }
  return change;
}

/// The data-parallel communication of a step over `group`, and how much of it the step waits
/// for: DDP's allreduce overlaps backward; ZeRO-1 adds the allgather of the updated
/// parameters after the step; ZeRO-2 reduce-scatters instead of allreducing, overlapping
/// backward, then allgathers; ZeRO-3 gathers each block's parameters in forward and again in
/// backward (prefetched: under the compute of the block before) and reduce-scatters its
/// gradients during backward, 1.5x DP's bytes.
struct ZeroComm {
  double seconds = 0, exposed = 0;
};
inline ZeroComm zero_comm(const SimSpec& spec, int zero, double grad_bytes,
                          const std::vector<int>& group, double forward_s, double backward_s) {
  if (group.size() < 2) return {};
  auto time = [&](sim::Collective kind) {
    return sim::collective_seconds(spec, kind, grad_bytes, group);
  };
  const double gather = time(sim::Collective::allgather);
  const double reduce_scatter = time(sim::Collective::reduce_scatter);
  if (zero >= 3) {
    return {reduce_scatter + 2 * gather, std::max(0.0, gather - forward_s) +
                                             std::max(0.0, gather + reduce_scatter - backward_s)};
  }
  if (zero >= 2)
    return {reduce_scatter + gather, std::max(0.0, reduce_scatter - backward_s) + gather};
  const double allreduce = time(sim::Collective::allreduce);
  const double update_gather = zero == 1 ? gather : 0;
  return {allreduce + update_gather, std::max(0.0, allreduce - backward_s) + update_gather};
}

/// ", selective recompute, ZeRO-2": the memory-saving flags of a plan, for its first line.
inline std::string plan_flags(autograd::Recompute recompute, int zero, Offload offload) {
  return (recompute == autograd::Recompute::none
              ? std::string()
              : ", " + std::string(autograd::recompute_name(recompute)) + " recompute") +
         (zero > 0 ? ", ZeRO-" + std::to_string(zero) : "") +
         (offload == Offload::optimizer ? ", optimizer offloaded" : "") +
         (offload == Offload::params ? ", optimizer and parameters offloaded" : "");
}

/// What ZeRO-Offload moves over the host link of a device in a step.
struct HostTraffic {
  Offload offload = Offload::none;
  int zero = 0;               ///< the ZeRO stage
  double update_bytes = 0;    ///< of the parameters the rank updates (under ZeRO, its shards)
  int64_t tensors = 0;        ///< one copy per tensor each way
  int64_t micro_batches = 1;  ///< ZeRO-3 gathers the parameters in each
  /// the update's seconds on the device; the host's take their place, scaled by the two memory
  /// bandwidths (AdamW's update is memory-bound)
  double update_s = 0;
  /// seconds of a micro-batch's forward and backward: the copies overlap them
  ///@{
  double forward_s = 0, backward_s = 0;
  ///@}
};

/// ZeRO-Offload on a device's memory at its peak and its step, as a sim device charges it: the
/// optimizer state leaves the device; each step the gradients go down — under ZeRO-2 and -3
/// each part as soon as it is reduced, overlapping backward — and the updated parameters come
/// up. With Offload::params the ZeRO-3 shards stay in host memory, updated there, and go up with
/// every gather instead (twice a micro-batch, overlapping compute as the gathers do). The
/// update runs on the host instead of the device (SimSpec::host; untimed without its figures).
/// Returns the seconds this adds to the step; lowers `memory` and `peak` by what leaves.
inline double offload_to_host(BytesByCategory& memory, int64_t& peak, const HostTraffic& t,
                              const SimSpec& spec) {
  auto leaves = [&](MemoryCategory c, int64_t bytes) {
    int64_t& now = memory[static_cast<int>(c)];
    bytes = std::min(bytes, now);
    now -= bytes;
    peak -= bytes;
  };
  leaves(MemoryCategory::optimizer_state,
         memory[static_cast<int>(MemoryCategory::optimizer_state)]);
  const bool params = t.offload == Offload::params && t.zero >= 3;
  if (params) leaves(MemoryCategory::parameters, int64_t(t.update_bytes));
  const double one_way =
      double(t.tensors) * spec.host_link.latency + t.update_bytes / spec.host_link.bandwidth;
  const double down = t.zero >= 2 ? std::max(0.0, one_way - t.backward_s) : one_way;
  const double host_update = spec.host.memory_bandwidth > 0
                                 ? t.update_s * spec.memory_bandwidth / spec.host.memory_bandwidth
                                 : 0;
  const double update = host_update - t.update_s;
  if (!params) return down + one_way + update;
  const double uploads = 2 * double(t.micro_batches) * one_way;
  return down + update +
         std::max(0.0, uploads - double(t.micro_batches) * (t.forward_s + t.backward_s));
}

/// ZeRO's shards (shard_for_zero) and then offload (offload_to_host) on a device's memory at its
/// peak (`memory`, `peak`) and at the end of forward (`end`, where the activations are the
/// most): they shrink parameters, gradients and optimizer state, so the peak may move there.
/// Both moments are shrunk and the higher kept in `memory` and `peak` (`at_update` cleared
/// when it is the end of forward's). Returns the seconds offload adds to the step.
inline double shrink_for_zero(BytesByCategory& memory, int64_t& peak, bool& at_update,
                              BytesByCategory end, const ZeroShape& z, int dp, const HostTraffic& t,
                              const SimSpec& spec) {
  auto shrink = [&](BytesByCategory& m, int64_t& bytes) {
    bytes += shard_for_zero(m, t.zero, dp, z);
    return t.offload == Offload::none ? 0.0 : offload_to_host(m, bytes, t, spec);
  };
  const double seconds = shrink(memory, peak);
  if (t.zero == 0 && t.offload == Offload::none) return seconds;
  int64_t end_bytes = 0;
  for (int64_t bytes : end) end_bytes += bytes;
  shrink(end, end_bytes);
  if (end_bytes > peak) {
    peak = end_bytes;
    memory = end;
    at_update = false;
  }
  return seconds;
}

/// "<category>_bytes" for each memory category.
inline void add_memory_fields(JsonLine& line, const BytesByCategory& memory) {
  for (int c = 0; c < kMemoryCategories; ++c) {
    std::string name(memory_category_name(static_cast<MemoryCategory>(c)));
    std::replace(name.begin(), name.end(), ' ', '_');
    line.add(name + "_bytes", double(memory[c]));
  }
}

}  // namespace dlf::plan
