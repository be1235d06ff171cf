// Topology::torus: a collective priced level by level over the levels its group spans.
#include <algorithm>
#include <set>
#include <vector>

#include "device/sim/collective_cost.h"

namespace dlf::sim::internal {
namespace {

enum class LevelKind : uint8_t { chip, dimension, network };

// A level of the hierarchy as a group spans it: k of the level's places hold its devices;
// `step` is what one step between neighbours of the group's ring there costs a device.
struct Level {
  LevelKind kind;
  int k = 1;
  LinkSpec step;
};

// A step of a ring over the places `at` (sorted) of a torus dimension of `size` chips: it
// crosses the widest gap between consecutive places (for two, the nearer way round), and as
// many rings like it (the other offsets) share each of those links.
LinkSpec ring_step(const std::vector<int>& at, int size, LinkSpec link) {
  int gap = 0;
  for (size_t i = 0; i < at.size(); ++i)
    gap = std::max(gap, (i + 1 < at.size() ? at[i + 1] : at[0] + size) - at[i]);
  if (at.size() == 2) gap = std::min(at[1] - at[0], size - (at[1] - at[0]));
  return {link.bandwidth / gap, link.latency * gap};
}

// From the innermost: the devices of a chip, each torus dimension, the nodes. A chip's links
// are shared by its devices and the node's network by the node's (all run the collective).
std::vector<Level> levels_of(const SimSpec& spec, std::span<const int> group) {
  const size_t dims = spec.torus.size();
  std::vector<std::set<int>> at(dims + 2);  // the places the group's devices hold, per level
  for (const int d : group) {
    const int local = d % spec.node_size, chip = local / spec.devices_per_chip;
    at[0].insert(local % spec.devices_per_chip);
    int stride = 1;
    for (size_t i = 0; i < dims; ++i) {
      at[i + 1].insert(chip / stride % spec.torus[i].size);
      stride *= spec.torus[i].size;
    }
    at[dims + 1].insert(d / spec.node_size);
  }
  std::vector<Level> levels{{LevelKind::chip, int(at[0].size()), spec.interconnect}};
  for (size_t i = 0; i < dims; ++i) {
    const LinkSpec shared = {spec.torus[i].link.bandwidth / spec.devices_per_chip,
                             spec.torus[i].link.latency};
    const std::vector<int> places(at[i + 1].begin(), at[i + 1].end());
    levels.push_back(
        {LevelKind::dimension, int(places.size()), ring_step(places, spec.torus[i].size, shared)});
  }
  levels.push_back({LevelKind::network,
                    int(at[dims + 1].size()),
                    {spec.network.bandwidth / spec.node_size, spec.network.latency}});
  std::erase_if(levels, [](const Level& l) { return l.k == 1; });
  return levels;
}

}  // namespace

double torus_collective_seconds(const SimSpec& spec, Collective kind, double bytes,
                                std::span<const int> group) {
  const int n = static_cast<int>(group.size());
  const std::vector<Level> levels = levels_of(spec, group);
  if (levels.empty()) return 0;  // one device, named more than once
  LinkSpec slowest = levels.front().step, path = {slowest.bandwidth, 0};
  int64_t product = 1;
  for (const Level& l : levels) {
    slowest = {std::min(slowest.bandwidth, l.step.bandwidth),
               std::max(slowest.latency, l.step.latency)};
    path = {std::min(path.bandwidth, l.step.bandwidth), path.latency + l.step.latency};
    product *= l.k;
  }
  if (kind == Collective::send_recv) {  // across nodes over the network; within one, hop by hop
    const Level& outer = levels.back();
    return ring_seconds(kind, bytes, n, outer.kind == LevelKind::network ? outer.step : path);
  }
  const bool hierarchical = kind == Collective::allreduce || kind == Collective::allgather ||
                            kind == Collective::reduce_scatter || kind == Collective::all_to_all;
  if (!hierarchical || product != n) return ring_seconds(kind, bytes, n, slowest);
  double seconds = 0, part = bytes;
  for (const Level& l : levels) {
    const double k = l.k, alpha = l.step.latency, beta = l.step.bandwidth;
    if (kind == Collective::all_to_all) {  // the whole buffer at each level
      seconds += (k - 1) * (alpha + bytes / (l.kind == LevelKind::dimension ? 2 : k) / beta);
    } else {  // reduce-scatter up: each level leaves a k-th to the next
      seconds += (k - 1) * (alpha + part / k / beta);
      part /= k;
    }
  }
  return kind == Collective::allreduce ? 2 * seconds : seconds;
}

}  // namespace dlf::sim::internal
