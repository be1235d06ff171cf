#include <dlf/models/gpt.h>
#include <dlf/parallel/ddp.h>

#include <mutex>

#include "test_util.h"

namespace dlf {
namespace {

constexpr int64_t kBatch = 24, kSeq = 16;  // 24: a multiple of 2, 3, 4 and 8
constexpr int kSteps = 3;

struct Batches {
  std::vector<Tensor> x, y;
};

Batches make_batches() {
  Generator gen(7);
  Batches b;
  for (int s = 0; s < kSteps; ++s) {
    b.x.push_back(randint(0, 256, {kBatch, kSeq}, {.dtype = DType::i64}, &gen));
    b.y.push_back(randint(0, 256, {kBatch, kSeq}, {.dtype = DType::i64}, &gen));
  }
  return b;
}

enum class Optimizer { sgd, adamw };

// Trains gpt-nano for kSteps with clipping, the global batch split over the ranks; returns
// rank 0's parameters and the (global) losses.
std::pair<nn::NamedTensors, std::vector<double>> train(const std::vector<Device>& devices,
                                                       const Batches& data, Optimizer which) {
  nn::NamedTensors params;
  std::vector<double> losses;
  std::mutex mutex;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    const int n = world.size(), r = world.rank();
    manual_seed(r == 0 ? 1234 : 99 + r);  // replicas start apart: DDP broadcasts rank 0's
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    parallel::DistributedDataParallel ddp(model, world, {.bucket_bytes = 64 << 10});
    const auto groups = nn::optim::decay_groups(model.named_parameters(), 0.1);
    std::unique_ptr<nn::optim::Optimizer> opt;
    if (which == Optimizer::sgd)
      opt = std::make_unique<nn::optim::SGD>(groups,
                                             nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    else
      opt = std::make_unique<nn::optim::Adam>(
          nn::optim::AdamW(groups, {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8}));
    for (int s = 0; s < kSteps; ++s) {
      const int64_t rows = kBatch / n;
      Tensor x = data.x[s].narrow(0, r * rows, rows).to(world.device());
      Tensor y = data.y[s].narrow(0, r * rows, rows).to(world.device());
      opt->zero_grad();
      Tensor loss = model.loss(x, y);
      loss.backward();
      ddp.synchronize();
      nn::optim::clip_grad_norm(model.parameters(), 1.0);
      opt->step();
      Tensor global = loss.detach().clone();
      world.allreduce(global, parallel::ReduceOp::avg);
      if (r == 0) losses.push_back(global.item<double>());
    }
    if (r == 0) {
      std::lock_guard lock(mutex);
      for (auto& [name, t] : model.named_parameters()) params.emplace_back(name, t.to(kCPU));
    }
  });
  return {params, losses};
}

double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    norm += y[i] * y[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace

// SGD for the parameters: Adam divides each gradient by its own running scale, so where the
// exact gradient is zero (the key bias of attention: softmax ignores a constant shift of a
// row's scores) it turns rounding noise of either run into full-size steps; no two f32 runs
// that add in another order agree there. AdamW is checked by the losses.
TEST_CASE("DDP: dp=N with global batch B gives one device's parameters after 3 steps") {
  const Batches data = make_batches();
  const auto [reference, reference_losses] = train({kCPU}, data, Optimizer::sgd);
  REQUIRE(reference_losses.size() == kSteps);
  CHECK(reference_losses.back() < reference_losses.front());
  for (int n : {2, 3, 4, 8}) {
    for (DeviceType type : {DeviceType::cpu, DeviceType::sim}) {
      if (type == DeviceType::sim && n != 4) continue;  // the sim path once: same numerics
      CAPTURE(n);
      INFO("device type ", Device{type, 0}.str());
      const auto [params, losses] = train(parallel::devices_of(type, n), data, Optimizer::sgd);
      REQUIRE(params.size() == reference.size());
      for (size_t i = 0; i < params.size(); ++i) {
        CAPTURE(params[i].first);
        CHECK(relative_difference(params[i].second, reference[i].second) <= 1e-5);
      }
      for (int s = 0; s < kSteps; ++s)
        CHECK(losses[s] == doctest::Approx(reference_losses[s]).epsilon(1e-5));
    }
  }
}

TEST_CASE("DDP: AdamW under dp=N gives one device's losses") {
  const Batches data = make_batches();
  const auto reference = train({kCPU}, data, Optimizer::adamw).second;
  for (int n : {2, 3, 8}) {
    CAPTURE(n);
    const auto losses =
        train(parallel::devices_of(DeviceType::cpu, n), data, Optimizer::adamw).second;
    for (int s = 0; s < kSteps; ++s)
      CHECK(losses[s] == doctest::Approx(reference[s]).epsilon(1e-5));
  }
}

TEST_CASE("DDP: buckets' allreduces overlap backward on the simulated clock") {
  const int n = 4;
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, n);
  for (Device d : devices) sim::configure(d, sim_preset("l4-24gb"));  // a slow link: visible
  std::vector<double> comm(n), exposed(n);
  std::vector<int> buckets(n);
  const Batches data = make_batches();
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    manual_seed(5);
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    parallel::DistributedDataParallel ddp(model, world, {.bucket_bytes = 32 << 10});
    Tensor x = data.x[0].narrow(0, 0, 6).to(world.device());
    Tensor loss = model.loss(x, data.y[0].narrow(0, 0, 6).to(world.device()));
    loss.backward();
    ddp.synchronize();
    comm[world.rank()] = ddp.comm_seconds();
    exposed[world.rank()] = ddp.exposed_comm_seconds();
    buckets[world.rank()] = ddp.num_buckets();
  });
  // gpt-nano: 120,576 f32 parameters = 471 KiB, in buckets of >= 32 KiB (wte alone is 64 KiB).
  CHECK(buckets[0] >= 5);
  CHECK(comm[0] > 0);
  CHECK(exposed[0] < comm[0]);  // most of the communication hid under backward
  CHECK(exposed[0] == doctest::Approx(exposed[n - 1]));
}

}  // namespace dlf
