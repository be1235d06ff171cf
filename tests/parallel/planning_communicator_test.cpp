#include <dlf/parallel/planning_communicator.h>

#include "test_util.h"

namespace dlf {
namespace {

using parallel::PlannedCollective;
using sim::Collective;

}  // namespace

TEST_CASE("planning communicator: shapes without peers, every collective recorded") {
  parallel::PlanningCommunicator group(kMeta, 1, 4, "tp");
  CHECK(group.rank() == 1);
  CHECK(group.size() == 4);
  Tensor t = Tensor::empty({8, 3}, DType::f32, kMeta);
  group.allreduce(t);
  const Tensor gathered = group.allgather(t);
  CHECK(gathered.shape() == Shape{32, 3});
  CHECK(gathered.device() == kMeta);
  const Tensor scattered = group.reduce_scatter(t);
  CHECK(scattered.shape() == Shape{2, 3});
  group.send(t, 0);
  CHECK(group.recv({8, 3}, DType::f32, 2).device() == kMeta);
  group.broadcast(t, 0);
  CHECK(group.host_max(7) == 7);
  const std::vector<PlannedCollective>& done = group.collectives();
  REQUIRE(done.size() == 6);
  // Bytes as sim::collective_seconds takes them: allgather's output, the others' buffer.
  const std::vector<std::pair<Collective, double>> expected = {
      {Collective::allreduce, 96}, {Collective::allgather, 384}, {Collective::reduce_scatter, 96},
      {Collective::send_recv, 96}, {Collective::send_recv, 96},  {Collective::broadcast, 96}};
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(done[i].kind == expected[i].first);
    CHECK(done[i].bytes == expected[i].second);
  }
  group.clear();
  CHECK(group.collectives().empty());
}

TEST_CASE("planning communicator: meta only, whole splits of dim 0, no split into groups") {
  test::check_error([] { parallel::PlanningCommunicator(kCPU, 0, 2); }, {"meta"});
  test::check_error([] { parallel::PlanningCommunicator(kMeta, 2, 2); }, {"0..1"});
  parallel::PlanningCommunicator group(kMeta, 0, 3);
  test::check_error([&] { group.reduce_scatter(Tensor::empty({4}, DType::f32, kMeta)); },
                    {"divide into 3 equal parts"});
  Tensor on_cpu = zeros({2});
  test::check_error([&] { group.allreduce(on_cpu); }, {"on cpu"});
  test::check_error([&] { group.split(0, 0, "dp"); }, {"cannot split"});
}

}  // namespace dlf
