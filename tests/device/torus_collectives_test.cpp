// Collectives on Topology::torus against their closed forms, worked out here by hand.
#include "test_util.h"

namespace dlf {
namespace {

using sim::Collective;

constexpr double B = 64e6;  // bytes
constexpr LinkSpec kLink = {100e9, 2e-6}, kOtherLink = {50e9, 3e-6}, kChip = {400e9, 1e-6},
                   kNetwork = {80e9, 20e-6};

// Nodes of `dims` chips with `per_chip` devices each, joined by kNetwork.
SimSpec torus_spec(std::vector<TorusDimension> dims, int per_chip = 1) {
  SimSpec s = sim_preset("a100-40gb");
  s.name = "test-torus";
  s.topology = Topology::torus;
  s.torus = std::move(dims);
  s.devices_per_chip = per_chip;
  s.interconnect = kChip;
  s.network = kNetwork;
  s.node_size = per_chip;
  for (const TorusDimension& d : s.torus) s.node_size *= d.size;
  s.validate();
  return s;
}

std::vector<int> range(int first, int count, int stride = 1) {
  std::vector<int> r(size_t(count), 0);
  for (int i = 0; i < count; ++i) r[size_t(i)] = first + i * stride;
  return r;
}

double seconds(const SimSpec& s, Collective kind, const std::vector<int>& group, double bytes = B) {
  return sim::collective_seconds(s, kind, bytes, group);
}

}  // namespace

TEST_CASE("torus collectives: a ring inside a node is the ring's closed form") {
  const SimSpec s = torus_spec({{8, kLink}});
  const double n = 8, a = kLink.latency, b = kLink.bandwidth;
  const std::vector<int> all = range(0, 8);
  CHECK(seconds(s, Collective::allreduce, all) ==
        doctest::Approx(2 * (n - 1) / n * B / b + 2 * (n - 1) * a));
  CHECK(seconds(s, Collective::reduce_scatter, all) ==
        doctest::Approx((n - 1) / n * B / b + (n - 1) * a));
  CHECK(seconds(s, Collective::allgather, all) == seconds(s, Collective::reduce_scatter, all));
  // all-to-all on a ring: a k-th of the buffer to each of the others, k - 1 steps, and a
  // message to the device d places on crosses d links: (k-1)/2 of the buffer on every link
  CHECK(seconds(s, Collective::all_to_all, all) == doctest::Approx((n - 1) * a + 3.5 * B / b));
  // send/recv takes the shorter way round: 6 places on is 2 back
  CHECK(seconds(s, Collective::send_recv, {1, 7}) == doctest::Approx(2 * a + B / (b / 2)));
  CHECK(seconds(s, Collective::broadcast, all) == doctest::Approx(3 * (a + B / b)));
  CHECK(seconds(s, Collective::allreduce, {5}) == 0);
  // every other chip: a step crosses two links, each shared with the other such ring
  CHECK(seconds(s, Collective::allreduce, range(1, 4, 2)) ==
        doctest::Approx(2 * 3 * (2 * a + B / 4 / (b / 2))));
}

TEST_CASE("torus collectives: a 2D torus runs the two dimensions' rings") {
  const SimSpec s = torus_spec({{4, kLink}, {2, kOtherLink}});
  const double a0 = kLink.latency, b0 = kLink.bandwidth;
  const double a1 = kOtherLink.latency, b1 = kOtherLink.bandwidth;
  // reduce-scatter along dimension 0 (4 chips), then along 1 on a quarter; allgather back
  const double reduce_scatter = 3 * (a0 + B / 4 / b0) + 1 * (a1 + B / 4 / 2 / b1);
  const std::vector<int> all = range(0, 8);
  CHECK(seconds(s, Collective::reduce_scatter, all) == doctest::Approx(reduce_scatter));
  CHECK(seconds(s, Collective::allgather, all) == doctest::Approx(reduce_scatter));
  CHECK(seconds(s, Collective::allreduce, all) == doctest::Approx(2 * reduce_scatter));
  // all-to-all dimension by dimension: the whole buffer each time
  CHECK(seconds(s, Collective::all_to_all, all) ==
        doctest::Approx(3 * a0 + 1.5 * B / b0 + (a1 + B / 2 / b1)));
  // a column (one chip of each row) is dimension 1's ring alone
  CHECK(seconds(s, Collective::allreduce, {2, 6}) == doctest::Approx(2 * (a1 + B / 2 / b1)));
  // a diagonal message crosses a link of each dimension: latencies add, the slower link sets
  // the rate
  CHECK(seconds(s, Collective::send_recv, {0, 5}) == doctest::Approx(a0 + a1 + B / b1));
  // not a product of whole rings (3 of 4 chips in one row, 1 in the other): one ring at the
  // slowest step, which on dimension 0 crosses two links (2 -> 0 the long way)
  CHECK(seconds(s, Collective::allreduce, {0, 1, 2, 4}) ==
        doctest::Approx(2 * 3 * (std::max(2 * a0, a1) + B / 4 / std::min(b0 / 2, b1))));
}

TEST_CASE("torus collectives: across nodes, reduce-scatter inside, allreduce over the network") {
  const SimSpec s = torus_spec({{4, kLink}});
  const double a = kLink.latency, b = kLink.bandwidth;
  const double an = kNetwork.latency, per_device = kNetwork.bandwidth / 4;
  // 3 nodes of 4: reduce-scatter in the ring, allreduce of a quarter across the nodes over
  // each device's quarter of its node's network, allgather back
  const double inside = 3 * (a + B / 4 / b);
  const double across = 2 * 2 * (an + B / 4 / 3 / per_device);
  CHECK(seconds(s, Collective::allreduce, range(0, 12)) ==
        doctest::Approx(inside + across + inside));
  // one device a node (dp across nodes, tp inside): the network's quarter carries the whole
  // buffer, as each of the node's four such groups runs at once
  CHECK(seconds(s, Collective::allreduce, range(1, 3, 4)) ==
        doctest::Approx(2 * 2 * (an + B / 3 / per_device)));
  CHECK(seconds(s, Collective::send_recv, {3, 4}) == doctest::Approx(an + B / per_device));
  CHECK(seconds(s, Collective::all_to_all, range(0, 8)) ==
        doctest::Approx(3 * a + 1.5 * B / b + (an + B / 2 / per_device)));
  CHECK(seconds(s, Collective::barrier, range(0, 8)) == doctest::Approx(3 * an));
}

TEST_CASE("torus collectives: the devices of a chip share its links") {
  const SimSpec s = torus_spec({{4, kLink}}, 2);  // trn1-like: two cores a chip
  const double a = kLink.latency, b = kLink.bandwidth;
  // a chip's two cores: over the on-chip link
  CHECK(seconds(s, Collective::allreduce, {0, 1}) ==
        doctest::Approx(2 * (kChip.latency + B / 2 / kChip.bandwidth)));
  // one core of each chip: the ring at half each link (the other core's ring has the rest)
  CHECK(seconds(s, Collective::reduce_scatter, range(0, 4, 2)) ==
        doctest::Approx(3 * (a + B / 4 / (b / 2))));
  // both: on the chip first, then a half each over the ring at half the link
  CHECK(seconds(s, Collective::reduce_scatter, range(0, 8)) ==
        doctest::Approx(kChip.latency + B / 2 / kChip.bandwidth + 3 * (a + B / 2 / 4 / (b / 2))));
}

TEST_CASE("torus collectives: trn1's dp allreduce across 4 nodes, by hand from its figures") {
  const SimSpec s = sim_preset("trn1");
  const double gb = 1e9;
  // tp 32 in each node, dp 4 across them: core 0 of each node; 32 groups share each EFA
  const double per_core = 800e9 / 8 / 32;
  CHECK(seconds(s, Collective::allreduce, range(0, 4, 32)) ==
        doctest::Approx(2 * 3 * (15e-6 + B / 4 / per_core)));
  // all 128 cores: the chip (1 TB/s), each dimension of the 4 x 4 torus (192 GB/s a chip,
  // 96 a core), then the nodes, then back
  const double chip = 2e-6 + B / 2 / (1000 * gb);
  const double dim0 = 3 * (2e-6 + B / 2 / 4 / (96 * gb));
  const double dim1 = 3 * (2e-6 + B / 2 / 4 / 4 / (96 * gb));
  const double nodes = 3 * (15e-6 + B / 32 / 4 / per_core);
  CHECK(seconds(s, Collective::allreduce, range(0, 128)) ==
        doctest::Approx(2 * (chip + dim0 + dim1 + nodes)));
}

TEST_CASE("torus collectives: an UltraServer's 3D torus, the instances' ring the third") {
  const SimSpec s = sim_preset("trn2-ultra");
  const double gb = 1e9;
  // 4 x 4 chips of an instance at 512 GB/s a dimension, then the ring of the four instances'
  // chips at equal coordinates at 256 GB/s: each ring a quarter of what the one before left
  const double rings = 3 * (2e-6 + B / 4 / (512 * gb)) + 3 * (2e-6 + B / 16 / (512 * gb)) +
                       3 * (2e-6 + B / 64 / (256 * gb));
  CHECK(seconds(s, Collective::allreduce, range(0, 64)) == doctest::Approx(2 * rings));
  // the same chip of each instance: the third dimension's ring alone
  CHECK(seconds(s, Collective::allgather, range(5, 4, 16)) ==
        doctest::Approx(3 * (2e-6 + B / 4 / (256 * gb))));
}

}  // namespace dlf
