// Collectives on the simulated clock: when a rank's data is ready, and the span a collective
// occupies on its device's communication stream. Backends call these; cpu devices have no clock.
#pragma once
#include <span>
#include <string_view>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel::detail {

/// When this rank can start a collective: its data is computed and its comm stream is free.
double ready_time(Device device);
/// Where the device's compute stream is (0 on the cpu, which has no simulated clock).
double compute_time(Device device);

/// Runs a collective on `self`'s communication stream from `start` (the latest ready time of
/// the group), for the time the cost model gives over `group` (its ranks' device indices); the
/// compute stream waits for it unless `async`. With `peer` >= 0 it is a message between `self`
/// and rank `peer` of the group, over the link between their two devices.
Work run_collective(Device self, sim::Collective kind, double bytes, std::span<const int> group,
                    double start, bool async, std::string_view group_name, int peer = -1);

/// Hands `work` to the caller of an async collective (`async` not null).
inline void hand_over(const Work& work, Work* async) {
  if (async != nullptr) *async = work;
}

}  // namespace dlf::parallel::detail
