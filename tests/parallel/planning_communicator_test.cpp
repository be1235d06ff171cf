#include <dlf/parallel/planning_communicator.h>

#include "test_util.h"

namespace dlf {
namespace {

using sim::Collective;
using sim::Stream;

// A meta device with the a100's links: 8 to a node, slower between nodes.
constexpr Device kPlanned{DeviceType::meta, 7};
void configure_planned() {
  sim::configure(kPlanned, sim_preset("a100-40gb"));
  sim::reset(kPlanned);
}

}  // namespace

TEST_CASE("planning communicator: shapes without peers, each collective on the clock") {
  configure_planned();
  const SimSpec& spec = sim::spec_of(kPlanned);
  // ranks on devices 0, 8, 16, 24: one a node, so the ring crosses the network
  const std::vector<int> devices = {0, 8, 16, 24};
  parallel::PlanningCommunicator group(kPlanned, 1, 4, "dp", devices);
  CHECK(group.rank() == 1);
  CHECK(group.size() == 4);
  sim::Timeline& clock = sim::timeline(kPlanned);
  Tensor t = Tensor::empty({8, 3}, DType::f32, kPlanned);  // 96 bytes
  auto seconds = [&](Collective kind, double bytes, std::vector<int> on) {
    return sim::collective_seconds(spec, kind, bytes, on);
  };
  group.allreduce(t);  // blocking: compute waits
  double at = seconds(Collective::allreduce, 96, devices);
  CHECK(at > seconds(Collective::allreduce, 96, {0, 1, 2, 3}));  // the network, not NVLink
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  parallel::Work work;
  const Tensor gathered = group.allgather(t, &work);  // async: compute goes on
  CHECK(gathered.shape() == Shape{32, 3});
  CHECK(gathered.device() == kPlanned);
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  at += seconds(Collective::allgather, 384, devices);
  CHECK(clock.now(Stream::comm) == doctest::Approx(at));
  group.wait(work);
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  const Tensor scattered = group.reduce_scatter(t);
  CHECK(scattered.shape() == Shape{2, 3});
  at += seconds(Collective::reduce_scatter, 96, devices);
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  group.send(t, 0);  // over the link between this rank's device (8) and rank 0's (0)
  at += seconds(Collective::send_recv, 96, {8, 0});
  CHECK(clock.now(Stream::comm) == doctest::Approx(at));
  CHECK(group.recv({8, 3}, DType::f32, 2).device() == kPlanned);
  at += seconds(Collective::send_recv, 96, {8, 16});
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  group.broadcast(t, 0);
  at += seconds(Collective::broadcast, 96, devices);
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
  CHECK(group.host_max(7) == 7);
  CHECK(group.seconds().busy == doctest::Approx(at - seconds(Collective::broadcast, 96, devices)));
  // a subgroup keeps its members' devices
  const std::unique_ptr<parallel::Communicator> pair = group.subgroup({1, 2}, "pair");
  CHECK(pair->rank() == 0);
  CHECK(pair->size() == 2);
  pair->allreduce(t);
  at += seconds(Collective::allreduce, 96, {8, 16});
  CHECK(clock.now(Stream::compute) == doctest::Approx(at));
}

TEST_CASE("planning communicator: meta only, whole splits of dim 0, no split into groups") {
  test::check_error([] { parallel::PlanningCommunicator(kCPU, 0, 2); }, {"meta"});
  test::check_error([] { parallel::PlanningCommunicator(kMeta, 2, 2); }, {"0..1"});
  test::check_error([] { parallel::PlanningCommunicator(kMeta, 0, 2, "dp", {0}); },
                    {"names 1 devices"});
  configure_planned();
  parallel::PlanningCommunicator group(kPlanned, 0, 3);
  test::check_error([&] { group.reduce_scatter(Tensor::empty({4}, DType::f32, kPlanned)); },
                    {"divide into 3 equal parts"});
  Tensor on_cpu = zeros({2});
  test::check_error([&] { group.allreduce(on_cpu); }, {"on cpu"});
  test::check_error([&] { group.split(0, 0, "dp"); }, {"cannot split"});
}

}  // namespace dlf
