// What the planners share: the meta device they run on, and their JSON memory fields.
#pragma once
#include <algorithm>
#include <string>

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

/// "<category>_bytes" for each memory category.
inline void add_memory_fields(JsonLine& line, const BytesByCategory& memory) {
  for (int c = 0; c < kMemoryCategories; ++c) {
    std::string name(memory_category_name(static_cast<MemoryCategory>(c)));
    std::replace(name.begin(), name.end(), ' ', '_');
    line.add(name + "_bytes", double(memory[c]));
  }
}

}  // namespace dlf::models
