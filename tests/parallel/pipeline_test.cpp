#include <dlf/parallel/launch.h>
#include <dlf/parallel/pipeline.h>
#include <dlf/parallel/transfer.h>

#include "test_util.h"

namespace dlf {

TEST_CASE(
    "partition_by_cost: contiguous runs, the costliest as cheap as can be, later ones fuller") {
  using Cuts = std::vector<int>;
  CHECK(parallel::partition_by_cost(std::vector<double>{1, 1, 1, 1}, 2) == Cuts{0, 2, 4});
  CHECK(parallel::partition_by_cost(std::vector<double>{1, 1, 1, 1, 1}, 2) == Cuts{0, 2, 5});
  CHECK(parallel::partition_by_cost(std::vector<double>{5, 1, 1, 1}, 2) == Cuts{0, 1, 4});
  CHECK(parallel::partition_by_cost(std::vector<double>{1, 1, 1, 1, 1, 1, 4.5}, 3) ==
        Cuts{0, 2, 6, 7});  // 2 | 4 | 4.5: the best cap is 4.5, filled from the back
  CHECK(parallel::partition_by_cost(std::vector<double>{2, 2, 2}, 3) == Cuts{0, 1, 2, 3});
  CHECK(parallel::partition_by_cost(std::vector<double>{3}, 1) == Cuts{0, 1});
  test::check_error(
      [] {
        parallel::partition_by_cost(std::vector<double>{1, 1}, 3);
      },
      {"2 layers cannot make 3 non-empty stages"});
}

TEST_CASE("send_named / recv_named: names, dtypes, shapes and values arrive in order") {
  const nn::NamedTensors sent = {
      {"transformer.wte.weight", arange(6.0).reshape({2, 3})},
      {"step", from_vector<int64_t>({7}, {})},
      {"h.0.ln_1.bias", full({4}, 0.5, {.dtype = DType::bf16})},
  };
  nn::NamedTensors received;
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 2), [&](parallel::Communicator& c) {
    if (c.rank() == 1) {
      parallel::send_named(c, sent, 0);
    } else {
      received = parallel::recv_named(c, 1);
    }
  });
  REQUIRE(received.size() == sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    CAPTURE(sent[i].first);
    CHECK(received[i].first == sent[i].first);
    CHECK(received[i].second.dtype() == sent[i].second.dtype());
    test::check_close(received[i].second, sent[i].second, 0, 0);
  }
}

}  // namespace dlf
