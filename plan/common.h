// What the planners share: the meta device they run on, and their JSON memory fields.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/device/sim_device.h>
#include <dlf/json_line.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/mesh.h>
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

/// The groups of the rank at tp index 0 of replica 0 of pipeline stage `stage` of a dp x tp x pp
/// layout, each a planning group on the plan device over the devices a run gives it (tp
/// innermost, then pp, then dp: parallel::Mesh's order), so its collectives cross the links
/// they would.
std::unique_ptr<parallel::Mesh> planning_mesh(const parallel::Layout& layout, int stage = 0);
/// The same rank, of stage stages[at], in a pipeline of the layout's stages `stages` only (in
/// order; a shorter pipeline whose transfers cross the same links).
std::unique_ptr<parallel::Mesh> planning_mesh(const parallel::Layout& layout,
                                              const std::vector<int>& stages, int at);

/// ", selective recompute, ZeRO-2": the memory-saving flags of a plan, for its first line.
inline std::string plan_flags(autograd::Recompute recompute, int zero, Offload offload) {
  return (recompute == autograd::Recompute::none
              ? std::string()
              : ", " + std::string(autograd::recompute_name(recompute)) + " recompute") +
         (zero > 0 ? ", ZeRO-" + std::to_string(zero) : "") +
         (offload == Offload::optimizer ? ", optimizer offloaded" : "") +
         (offload == Offload::params ? ", optimizer and parameters offloaded" : "");
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
