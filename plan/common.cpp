#include <dlf/parallel/planning_communicator.h>

#include <numeric>

#include "common.h"

namespace dlf::plan {

std::unique_ptr<parallel::Mesh> planning_mesh(const parallel::Layout& l, int stage) {
  std::vector<int> stages(size_t(l.pp));
  std::iota(stages.begin(), stages.end(), 0);
  return planning_mesh(l, stages, stage);
}

std::unique_ptr<parallel::Mesh> planning_mesh(const parallel::Layout& l,
                                              const std::vector<int>& stages, int at) {
  const int stage = stages.at(size_t(at));
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
  std::vector<int> pipeline;
  for (int s : stages) pipeline.push_back(s * l.tp);
  return std::make_unique<parallel::Mesh>(
      parallel::Layout{.dp = l.dp, .tp = l.tp, .pp = int(stages.size())},
      group(0, devices(l.dp, stage * l.tp, l.tp * l.pp), "dp"),
      group(0, devices(l.tp, stage * l.tp, 1), "tp"), group(at, std::move(pipeline), "pp"));
}

}  // namespace dlf::plan
