#include <dlf/core/ops/reduce.h>
#include <dlf/nn/linear.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/fsdp.h>
#include <dlf/parallel/launch.h>

#include <optional>

#include "test_util.h"

namespace dlf {
namespace {

// 4 ranks: two data-parallel pairs {0, 1} and {2, 3}, each pair one "end" of a pipeline, whose
// Linear(3, 5) weights are tied across the ends ({0, 2} and {1, 3}). Loss sum(m * (x W^T + b))
// with x = rank + 1 and m[., i] = i + 1 over 2 rows: dW[i, j] = 2 (i + 1)(rank + 1), so its
// average over a pair is 3 (i + 1) and 7 (i + 1), and summed over the ends 10 (i + 1); the
// bias, not tied, keeps its average 2 (i + 1) (summed, it would double).
void check_tied_parts(int zero, bool own_bucket) {
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 4), [&](parallel::Communicator& world) {
    const int r = world.rank();
    auto dp = world.split(r / 2, r, "dp");
    auto ends = world.split(r % 2, r, "ends");
    nn::Linear linear(3, 5);
    const std::vector<Tensor> tied =
        own_bucket ? std::vector<Tensor>{linear.weight} : std::vector<Tensor>{};
    std::optional<parallel::DistributedDataParallel> ddp;
    std::optional<parallel::FullyShardedDataParallel> fsdp;
    parallel::ShardedParameters* sharded = nullptr;
    if (zero == 3) {
      sharded = &fsdp.emplace(linear, *dp, parallel::FSDPOptions{.own_units = tied});
      fsdp->unshard();
    } else {
      sharded = &ddp.emplace(
          linear, *dp, parallel::DDPOptions{.shard_gradients = zero == 2, .own_buckets = tied});
    }
    const Tensor x = full({2, 3}, double(r + 1));
    const Tensor m = (arange(5.0) + 1.0).reshape({1, 5}).expand({2, 5});
    sum(linear.forward(x) * m).backward();
    if (fsdp) fsdp->synchronize();
    if (ddp) ddp->synchronize();
    parallel::sum_tied_gradient(linear.weight, *ends, sharded);
    int64_t weight_elements = 0;
    for (const parallel::OwnedPiece& piece : sharded->owned_pieces()) {
      const Tensor g = sharded->piece_gradient(piece).contiguous();
      const bool weight = piece.param.storage() == linear.weight.storage();
      for (int64_t e = 0; e < g.numel(); ++e) {
        const int64_t k = piece.begin + e;  // the flattened element
        const double expected = weight ? 10.0 * double(k / 3 + 1) : 2.0 * double(k + 1);
        CHECK(g.data<float>()[e] == doctest::Approx(expected));
      }
      if (weight) weight_elements += piece.end - piece.begin;
    }
    if (own_bucket) CHECK(weight_elements == (dp->rank() == 0 ? 8 : 7));  // 15 in parts of 8
  });
}

}  // namespace

TEST_CASE("sum_tied_gradient: a tied weight's sharded gradient summed part by part (ZeRO-2, -3)") {
  for (int zero : {2, 3}) {
    CAPTURE(zero);
    check_tied_parts(zero, /*own_bucket=*/true);
  }
}

TEST_CASE("sum_tied_gradient: whole gradients (ZeRO-1) are summed whole") {
  check_tied_parts(1, /*own_bucket=*/false);
}

TEST_CASE("sum_tied_gradient: a sharded tied weight sharing its bucket is refused") {
  test::check_error([] { check_tied_parts(2, /*own_bucket=*/false); },
                    {"a tied weight's gradient is summed part by part", "bucket of its own"});
}

}  // namespace dlf
