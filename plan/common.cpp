#include <dlf/parallel/planning_communicator.h>

#include "common.h"

namespace dlf::plan {

std::unique_ptr<parallel::Mesh> planning_mesh(const parallel::Layout& l, int stage) {
  auto devices = [](int count, int first, int stride) {
    std::vector<int> all;
    for (int i = 0; i < count; ++i) all.push_back(first + i * stride);
    return all;
  };
  auto group = [](int rank, std::vector<int> on, const char* name) {
    const int size = int(on.size());
    return std::make_unique<parallel::PlanningCommunicator>(kPlanDevice, rank, size, name,
                                                            std::move(on));
  };
  return std::make_unique<parallel::Mesh>(
      l, group(0, devices(l.dp, stage * l.tp, l.tp * l.pp), "dp"),
      group(0, devices(l.tp, stage * l.tp, 1), "tp"), group(stage, devices(l.pp, 0, l.tp), "pp"));
}

}  // namespace dlf::plan
