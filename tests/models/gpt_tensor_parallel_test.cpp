#include <dlf/models/gpt_tensor_parallel.h>
#include <dlf/models/registry.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/mesh.h>

#include <mutex>

#include "models/one_device_reference.h"
#include "test_util.h"

namespace dlf {
namespace {

constexpr int kSteps = 3;

// Losses of kSteps SGD steps on fixed batches; the model's gradients after the first.
struct Run {
  std::vector<double> losses;
  std::map<std::string, Tensor> first_grads;
};

}  // namespace

TEST_CASE("tensor-parallel GPT: tp = 2 and 4 give one device's losses and gradients") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  Generator gen(3);
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < kSteps; ++s) {
    xs.push_back(randint(0, config.vocab, {4, 16}, {.dtype = DType::i64}, &gen));
    ys.push_back(randint(0, config.vocab, {4, 16}, {.dtype = DType::i64}, &gen));
  }
  manual_seed(11);
  models::GPT whole(config);
  const nn::NamedTensors initial = [&] {
    nn::NamedTensors copy;
    for (auto& [name, t] : whole.state_dict()) copy.emplace_back(name, t.clone());
    return copy;
  }();
  Run reference;
  {
    nn::optim::SGD opt({{.params = whole.parameters()}}, {.lr = 0.1});
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      Tensor loss = whole.loss(xs[s], ys[s]);
      loss.backward();
      if (s == 0) {
        for (auto& [name, p] : whole.named_parameters()) reference.first_grads[name] = p.grad();
      }
      opt.step();
      reference.losses.push_back(loss.item<double>());
    }
  }
  for (int n : {2, 4}) {
    CAPTURE(n);
    std::mutex mutex;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](parallel::Communicator& tp) {
      models::TensorParallelGPT model(config, tp);
      model.load_shard(initial);
      nn::optim::SGD opt({{.params = model.parameters()}}, {.lr = 0.1});
      for (int s = 0; s < kSteps; ++s) {
        opt.zero_grad();
        Tensor loss = model.loss(xs[s], ys[s]);
        loss.backward();
        if (s == 0) {
          // The shard of each gradient is the whole model's gradient, sharded the same way.
          models::TensorParallelGPT expected(config, tp);
          nn::NamedTensors grads;
          for (auto& [name, g] : reference.first_grads) grads.emplace_back(name, g);
          expected.load_shard(grads);
          const nn::NamedTensors mine = model.named_parameters();
          const nn::NamedTensors want = expected.named_parameters();
          std::lock_guard lock(mutex);
          for (size_t i = 0; i < mine.size(); ++i) {
            CAPTURE(mine[i].first);
            test::check_close(mine[i].second.grad(), want[i].second, 2e-6, 1e-4);
          }
        }
        opt.step();
        std::lock_guard lock(mutex);
        CHECK(loss.item<double>() == doctest::Approx(reference.losses[s]).epsilon(1e-5));
      }
    });
  }
  test::check_error(
      [&] {
        parallel::run_ranks(
            parallel::devices_of(DeviceType::cpu, 3),
            [&](parallel::Communicator& tp) { models::TensorParallelGPT model(config, tp); });
      },
      {"do not split over 3 tensor-parallel ranks"});
}

TEST_CASE("dp x tp layouts of gpt-nano give one device's losses after 3 steps") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  constexpr int64_t kBatch = 8;
  Generator gen(4);
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < kSteps; ++s) {
    xs.push_back(randint(0, config.vocab, {kBatch, 16}, {.dtype = DType::i64}, &gen));
    ys.push_back(randint(0, config.vocab, {kBatch, 16}, {.dtype = DType::i64}, &gen));
  }
  const test::OneDeviceRun one = test::train_one_device(config, 12, xs, ys);
  const nn::NamedTensors& initial = one.initial;
  const std::vector<double>& reference = one.losses;
  const parallel::Layout layouts[] = {{.dp = 2}, {.tp = 2},         {.dp = 2, .tp = 2},
                                      {.dp = 4}, {.tp = 4},         {.dp = 4, .tp = 2},
                                      {.dp = 8}, {.dp = 2, .tp = 4}};
  for (const parallel::Layout& layout : layouts) {
    CAPTURE(layout.dp);
    CAPTURE(layout.tp);
    std::vector<double> losses;
    std::mutex mutex;
    parallel::run_ranks(
        parallel::devices_of(DeviceType::cpu, layout.devices()),
        [&](parallel::Communicator& world) {
          parallel::Mesh mesh(world, layout);
          models::TensorParallelGPT model(config, mesh.tp());
          model.load_shard(initial);
          parallel::DistributedDataParallel ddp(model, mesh.dp());
          nn::optim::SGD opt({{.params = model.parameters()}}, {.lr = 0.1, .momentum = 0.9});
          const int64_t rows = kBatch / layout.dp, first = mesh.dp_rank() * rows;
          for (int s = 0; s < kSteps; ++s) {
            opt.zero_grad();
            Tensor loss = model.loss(xs[s].narrow(0, first, rows), ys[s].narrow(0, first, rows));
            loss.backward();
            ddp.synchronize();
            opt.step();
            Tensor global = loss.detach().clone();
            mesh.dp().allreduce(global, parallel::ReduceOp::avg);
            std::lock_guard lock(mutex);
            if (world.rank() == 0) losses.push_back(global.item<double>());
          }
        });
    REQUIRE(losses.size() == kSteps);
    for (int s = 0; s < kSteps; ++s)
      CHECK(losses[s] == doctest::Approx(reference[s]).epsilon(1e-5));
  }
}

TEST_CASE("tensor-parallel GPT: the gathered shards are the whole model, name for name") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  manual_seed(13);
  models::GPT whole(config);
  const nn::NamedTensors expected = whole.state_dict();
  for (int n : {2, 4}) {
    CAPTURE(n);
    std::mutex mutex;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](parallel::Communicator& tp) {
      models::TensorParallelGPT model(config, tp);
      model.load_shard(expected);
      const nn::NamedTensors gathered = model.whole_state_dict();
      std::lock_guard lock(mutex);
      REQUIRE(gathered.size() == expected.size());
      std::map<std::string, Tensor> by_name(gathered.begin(), gathered.end());
      for (const auto& [name, t] : expected) {
        CAPTURE(name);
        REQUIRE(by_name.contains(name));
        test::check_close(by_name.at(name), t, 0, 0);
      }
    });
  }
}

}  // namespace dlf
