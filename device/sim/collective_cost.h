// The pieces of sim::collective_seconds: a flat ring at one link's alpha and beta, and the
// hierarchical collectives of Topology::torus.
#pragma once
#include <span>

#include <dlf/device/sim_device.h>

namespace dlf::sim::internal {

// `kind` over n devices whose every step costs at most `slowest`: ring reduce-scatter and
// allgather, both for allreduce, pairwise exchange for all-to-all, a binomial tree for
// broadcast, a dissemination barrier, one message for send/recv.
double ring_seconds(Collective kind, double bytes, int n, LinkSpec slowest);

// `kind` over `group` on a Topology::torus spec, level by level (collective_seconds).
double torus_collective_seconds(const SimSpec& spec, Collective kind, double bytes,
                                std::span<const int> group);

}  // namespace dlf::sim::internal
