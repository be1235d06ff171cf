#include <dlf/models/gpt.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/fsdp.h>
#include <dlf/parallel/zero.h>

#include <mutex>
#include <optional>

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
// ZeRO-Offload: the optimizer's state and update in host memory; params: ZeRO-3's shards too
enum class Offload { none, optimizer, params };

// Trains gpt-nano for kSteps with clipping, the global batch split over the ranks; returns
// rank 0's parameters and the (global) losses.
struct Trained {
  nn::NamedTensors params, optimizer_state;  // rank 0's; the state consolidated under ZeRO
  std::vector<double> losses;
};

Trained train_replicas(const std::vector<Device>& devices, const Batches& data, Optimizer which,
              int zero = 0, double max_norm = 1.0, Offload offload = Offload::none) {
  nn::NamedTensors params, state;
  std::vector<double> losses;
  std::mutex mutex;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    const int n = world.size(), r = world.rank();
    manual_seed(r == 0 ? 1234 : 99 + r);  // replicas start apart: DDP broadcasts rank 0's
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    std::optional<parallel::DistributedDataParallel> ddp;
    std::optional<parallel::FullyShardedDataParallel> fsdp;
    if (zero == 3) {
      fsdp.emplace(model, world,
                   parallel::FSDPOptions{.shards_on = offload == Offload::params
                                                          ? std::optional<Device>(kCPU)
                                                          : std::nullopt});
    } else {
      ddp.emplace(model, world,
                  parallel::DDPOptions{.bucket_bytes = 64 << 10, .shard_gradients = zero >= 2});
    }
    const auto groups = nn::optim::decay_groups(model.named_parameters(), 0.1);
    std::unique_ptr<nn::optim::Optimizer> opt;
    if (which == Optimizer::sgd)
      opt = std::make_unique<nn::optim::SGD>(groups,
                                             nn::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    else
      opt = std::make_unique<nn::optim::AdamW>(
          groups, nn::optim::AdamWOptions{.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
    if (offload != Offload::none) opt->offload();
    std::optional<parallel::ZeroOptimizer> sharded;
    if (zero > 0)
      sharded.emplace(*opt, world, fsdp ? static_cast<parallel::ShardedParameters&>(*fsdp) : *ddp);
    for (int s = 0; s < kSteps; ++s) {
      const int64_t rows = kBatch / n;
      Tensor x = data.x[s].narrow(0, r * rows, rows).to(world.device());
      Tensor y = data.y[s].narrow(0, r * rows, rows).to(world.device());
      opt->zero_grad();
      if (fsdp) fsdp->unshard();
      Tensor loss = model.loss(x, y);
      loss.backward();
      if (fsdp) {
        fsdp->synchronize();
      } else {
        ddp->synchronize();
      }
      if (sharded) {
        sharded->clip_grad_norm(model.parameters(), max_norm);
      } else {
        nn::optim::clip_grad_norm(model.parameters(), max_norm);
      }
      if (sharded) {
        sharded->step();
      } else {
        opt->step();
      }
      Tensor global = loss.detach().clone();
      world.allreduce(global, parallel::ReduceOp::avg);
      if (r == 0) losses.push_back(global.item<double>());
    }
    nn::NamedTensors whole = sharded ? sharded->consolidated_state_dict() : opt->state_dict();
    if (fsdp) fsdp->gather_whole();
    if (r == 0) {
      std::lock_guard lock(mutex);
      for (auto& [name, t] : model.named_parameters()) params.emplace_back(name, t.to(kCPU));
      for (auto& [name, t] : whole) state.emplace_back(name, t.to(kCPU));
    }
  });
  return {params, state, losses};
}

}  // namespace

// SGD for the parameters: Adam divides each gradient by its own running scale, so where the
// exact gradient is zero (the key bias of attention: softmax ignores a constant shift of a
// row's scores) it turns rounding noise of either run into full-size steps; no two f32 runs
// that add in another order agree there. AdamW is checked by the losses.
TEST_CASE("DDP: dp=N with global batch B gives one device's parameters after 3 steps") {
  const Batches data = make_batches();
  const auto [reference, reference_state, reference_losses] = train_replicas({kCPU}, data, Optimizer::sgd);
  REQUIRE(reference_losses.size() == kSteps);
  CHECK(reference_losses.back() < reference_losses.front());
  for (int n : {2, 3, 4, 8}) {
    for (DeviceType type : {DeviceType::cpu, DeviceType::sim}) {
      if (type == DeviceType::sim && n != 4) continue;  // the sim path once: same numerics
      CAPTURE(n);
      INFO("device type ", Device{type, 0}.str());
      const auto [params, state, losses] =
          train_replicas(parallel::devices_of(type, n), data, Optimizer::sgd);
      REQUIRE(params.size() == reference.size());
      for (size_t i = 0; i < params.size(); ++i) {
        CAPTURE(params[i].first);
        CHECK(test::relative_error(params[i].second, reference[i].second) <= 1e-5);
      }
      for (int s = 0; s < kSteps; ++s)
        CHECK(losses[s] == doctest::Approx(reference_losses[s]).epsilon(1e-5));
    }
  }
}

TEST_CASE(
    "DDP: gradients averaged in bf16 are the bf16 rounding of the ranks' bf16 gradients' mean") {
  parallel::run_ranks({kCPU, kCPU}, [](parallel::Communicator& world) {
    manual_seed(5);
    nn::Linear layer(16, 8);
    Generator data(11 + uint64_t(world.rank()));
    const Tensor x = randn({4, 16}, {}, &data);
    auto backward = [&] {
      layer.weight.set_grad(Tensor());
      layer.bias.set_grad(Tensor());
      (layer.forward(x) * layer.forward(x)).sum().backward();
    };
    backward();
    const Tensor local = layer.weight.grad().clone();
    Tensor exact = local.clone(), rounded = local.to(DType::bf16).to(DType::f32);
    world.allreduce(exact, parallel::ReduceOp::avg);
    world.allreduce(rounded, parallel::ReduceOp::avg);  // two bf16 values: their f32 mean is exact
    parallel::DistributedDataParallel ddp(layer, world, {.reduce_in_bf16 = true});
    backward();
    ddp.synchronize();
    CHECK(layer.weight.grad().dtype() == DType::f32);
    CHECK(test::bitwise_equal(layer.weight.grad(), rounded.to(DType::bf16).to(DType::f32)));
    CHECK_FALSE(test::bitwise_equal(layer.weight.grad(), exact));
    CHECK(test::relative_error(layer.weight.grad(), exact) < 1e-2);
  });
}

TEST_CASE("DDP: AdamW under dp=N gives one device's losses") {
  const Batches data = make_batches();
  const auto reference = train_replicas({kCPU}, data, Optimizer::adamw).losses;
  for (int n : {2, 3, 8}) {
    CAPTURE(n);
    const auto losses =
        train_replicas(parallel::devices_of(DeviceType::cpu, n), data, Optimizer::adamw).losses;
    for (int s = 0; s < kSteps; ++s)
      CHECK(losses[s] == doctest::Approx(reference[s]).epsilon(1e-5));
  }
}

TEST_CASE("ZeRO-1: sharded optimizer state gives the unsharded run's parameters and state") {
  const Batches data = make_batches();
  for (int n : {2, 3}) {
    CAPTURE(n);
    const auto devices = parallel::devices_of(DeviceType::cpu, n);
    const Trained plain = train_replicas(devices, data, Optimizer::adamw);
    const Trained sharded = train_replicas(devices, data, Optimizer::adamw, /*zero=*/1);
    REQUIRE(plain.params.size() == sharded.params.size());
    for (size_t i = 0; i < plain.params.size(); ++i) {
      CAPTURE(plain.params[i].first);
      test::check_close(sharded.params[i].second, plain.params[i].second, 0, 0);  // bit for bit
    }
    REQUIRE(plain.optimizer_state.size() == sharded.optimizer_state.size());
    for (size_t i = 0; i < plain.optimizer_state.size(); ++i) {
      CAPTURE(plain.optimizer_state[i].first);
      CHECK(sharded.optimizer_state[i].first == plain.optimizer_state[i].first);
      test::check_close(sharded.optimizer_state[i].second, plain.optimizer_state[i].second, 0, 0);
    }
    CHECK(sharded.losses == plain.losses);
  }
}

// ZeRO-2 and -3 against plain DDP: bit for bit without clipping; with it the global norm adds
// the pieces' squares in another order, so the losses agree to rounding.
void check_matches_unsharded(int zero) {
  const Batches data = make_batches();
  for (int n : {2, 3}) {
    CAPTURE(n);
    const auto devices = parallel::devices_of(DeviceType::cpu, n);
    const double no_clip = 1e30;
    const Trained plain = train_replicas(devices, data, Optimizer::adamw, 0, no_clip);
    const Trained sharded = train_replicas(devices, data, Optimizer::adamw, zero, no_clip);
    REQUIRE(plain.params.size() == sharded.params.size());
    for (size_t i = 0; i < plain.params.size(); ++i) {
      CAPTURE(plain.params[i].first);
      test::check_close(sharded.params[i].second, plain.params[i].second, 0, 0);
    }
    REQUIRE(plain.optimizer_state.size() == sharded.optimizer_state.size());
    for (size_t i = 0; i < plain.optimizer_state.size(); ++i) {
      CHECK(sharded.optimizer_state[i].first == plain.optimizer_state[i].first);
      test::check_close(sharded.optimizer_state[i].second, plain.optimizer_state[i].second, 0, 0);
    }
    CHECK(sharded.losses == plain.losses);
    const Trained clipped = train_replicas(devices, data, Optimizer::adamw, 0);
    const Trained clipped_sharded = train_replicas(devices, data, Optimizer::adamw, zero);
    for (int s = 0; s < kSteps; ++s)
      CHECK(clipped_sharded.losses[s] == doctest::Approx(clipped.losses[s]).epsilon(1e-6));
  }
}

TEST_CASE(
    "ZeRO-Offload: each rank's part of the state and update (and ZeRO-3's parameter shards) in "
    "host memory, bit for bit") {
  const Batches data = make_batches();
  const auto devices = parallel::devices_of(DeviceType::sim, 2);
  const std::pair<int, Offload> cases[] = {{0, Offload::optimizer},
                                           {2, Offload::optimizer},
                                           {3, Offload::optimizer},
                                           {3, Offload::params}};
  for (const auto& c : cases) {
    const int zero = c.first;
    const bool params = c.second == Offload::params;
    CAPTURE(zero);
    CAPTURE(params);
    const Trained kept = train_replicas(devices, data, Optimizer::adamw, zero);
    const Trained offloaded = train_replicas(devices, data, Optimizer::adamw, zero, 1.0, c.second);
    CHECK(offloaded.losses == kept.losses);
    REQUIRE(offloaded.params.size() == kept.params.size());
    for (size_t i = 0; i < kept.params.size(); ++i)
      test::check_close(offloaded.params[i].second, kept.params[i].second, 0, 0);
    REQUIRE(offloaded.optimizer_state.size() == kept.optimizer_state.size());
    for (size_t i = 0; i < kept.optimizer_state.size(); ++i) {
      CHECK(offloaded.optimizer_state[i].first == kept.optimizer_state[i].first);
      test::check_close(offloaded.optimizer_state[i].second, kept.optimizer_state[i].second, 0, 0);
    }
  }
}

TEST_CASE("ZeRO-2: sharded gradients too; bit for bit without clipping, to rounding with it") {
  check_matches_unsharded(2);
}

TEST_CASE("ZeRO-3: sharded parameters too; bit for bit without clipping, to rounding with it") {
  check_matches_unsharded(3);
}

TEST_CASE(
    "ZeRO-3: between steps a rank holds its shards only, unshard() gathers the rest for a "
    "forward") {
  const int n = 4;
  std::vector<int64_t> param_bytes(n), unsharded_bytes(n);
  parallel::run_ranks(parallel::devices_of(DeviceType::sim, n), [&](parallel::Communicator& world) {
    manual_seed(3);
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    parallel::FullyShardedDataParallel fsdp(model, world);
    nn::optim::AdamW opt(model.parameters(), {.lr = 1e-3});
    parallel::ZeroOptimizer zero(opt, world, fsdp);
    const Tensor x = zeros({2, 8}, {.dtype = DType::i64, .device = world.device()});
    auto live_parameters = [&] {
      return allocator_for(world.device())
          .stats()
          .live_by[static_cast<int>(MemoryCategory::parameters)];
    };
    // What no block holds (the embeddings) is a shard too until a forward asks for it.
    test::check_error([&] { (void)model.loss(x, x); }, {"released", "unshard()"});
    fsdp.unshard();
    unsharded_bytes[world.rank()] = live_parameters();
    model.loss(x, x).backward();
    fsdp.synchronize();
    zero.step();
    param_bytes[world.rank()] = live_parameters();
    test::check_error([&] { (*model.transformer->h)[0].attn->c_attn->weight.to_vector<float>(); },
                      {"released", "ZeRO-3"});
    fsdp.unshard();  // a forward that has no backward (an evaluation), then reshard()
    (void)model.loss(x, x).item<double>();
    fsdp.reshard();
    CHECK(live_parameters() == param_bytes[world.rank()]);
  });
  const models::GPT reference(models::gpt_config("gpt-nano"));
  int64_t outside = 0;  // wte, wpe, ln_f
  for (const auto& [name, p] : reference.named_parameters())
    if (name.find(".h.") == std::string::npos) outside += 4 * p.numel();
  const int64_t blocks = 4 * reference.num_parameters() - outside;
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    // This rank's part of the rest and of each block (padding aside)...
    CHECK(param_bytes[r] >= outside / n + blocks / n);
    CHECK(param_bytes[r] <= outside / n + blocks / n + 2 * 4 * 4 * n);
    // ... and, unsharded before the first forward, the whole rest besides (no block is
    // prefetched yet: the first forward learns which block runs first).
    CHECK(unsharded_bytes[r] - param_bytes[r] == outside);
  }
}

TEST_CASE("ZeRO-2: a rank keeps 1/N of the gradients once its buckets are reduced") {
  const int n = 4;
  std::vector<int64_t> grad_bytes(n);
  std::vector<int> undefined(n);
  parallel::run_ranks(parallel::devices_of(DeviceType::sim, n), [&](parallel::Communicator& world) {
    manual_seed(3);
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    parallel::DistributedDataParallel ddp(model, world,
                                          {.bucket_bytes = 16 << 10, .shard_gradients = true});
    const Tensor x = zeros({2, 8}, {.dtype = DType::i64, .device = world.device()});
    model.loss(x, x).backward();
    ddp.synchronize();
    grad_bytes[world.rank()] =
        allocator_for(world.device()).stats().live_by[static_cast<int>(MemoryCategory::gradients)];
    for (const Tensor& p : model.parameters()) undefined[world.rank()] += !p.grad().defined();
  });
  const models::GPT reference(models::gpt_config("gpt-nano"));
  const int64_t whole = 4 * reference.num_parameters();
  for (int r = 0; r < n; ++r) {
    CHECK(undefined[r] == int(reference.parameters().size()));
    CHECK(grad_bytes[r] <= whole / n + 4 * 64 * n);  // a part of each bucket, padding at most
    CHECK(grad_bytes[r] >= whole / n);
  }
}

TEST_CASE("ZeRO-1: each rank keeps the state of its own parameters only") {
  std::vector<int64_t> state_bytes(4);
  parallel::run_ranks(parallel::devices_of(DeviceType::sim, 4), [&](parallel::Communicator& world) {
    manual_seed(3);
    models::GPT model(models::gpt_config("gpt-nano"));
    model.to(world.device());
    nn::optim::AdamW opt({{.params = model.parameters()}}, {.lr = 1e-3});
    parallel::DistributedDataParallel ddp(model, world, {.bucket_bytes = 16 << 10});
    parallel::ZeroOptimizer zero(opt, world, ddp);
    const Tensor x = zeros({2, 8}, {.dtype = DType::i64, .device = world.device()});
    model.loss(x, x).backward();
    ddp.synchronize();
    zero.step();
    const MemoryStats stats = allocator_for(world.device()).stats();
    state_bytes[world.rank()] = stats.live_by[static_cast<int>(MemoryCategory::optimizer_state)];
  });
  const int64_t n = models::GPT(models::gpt_config("gpt-nano")).num_parameters();
  int64_t sum = 0;
  for (int64_t b : state_bytes) {
    CHECK(b > 0);
    CHECK(b < 8 * n / 2);  // well under the whole state
    sum += b;
  }
  CHECK(sum == 8 * n);  // Adam's two moments, each parameter on exactly one rank
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
    const parallel::CommSeconds before = world.seconds();
    Tensor loss = model.loss(x, data.y[0].narrow(0, 0, 6).to(world.device()));
    loss.backward();
    ddp.synchronize();
    comm[world.rank()] = world.seconds().busy - before.busy;
    exposed[world.rank()] = world.seconds().exposed - before.exposed;
    buckets[world.rank()] = ddp.num_buckets();
  });
  // gpt-nano: 120,576 f32 parameters = 471 KiB, in buckets of >= 32 KiB (wte alone is 64 KiB).
  CHECK(buckets[0] >= 5);
  CHECK(comm[0] > 0);
  CHECK(exposed[0] < comm[0]);  // most of the communication hid under backward
  CHECK(exposed[0] == doctest::Approx(exposed[n - 1]));
}

// One training step of gpt-nano on 4 simulated L4s (a slow link), after a first step that
// lets FSDP learn the blocks' order: its simulated time, communication and the bytes each
// rank sent; the parameters after both steps.
struct SimStep {
  double seconds = 0, comm = 0, exposed = 0, bytes_sent = 0;
  nn::NamedTensors params;
};

// gpt-nano on this rank's device, wrapped for data parallelism as ZeRO stage `zero` lays it
// out: FSDP for 3, DDP otherwise (sharding the gradients for 2).
struct Replica {
  models::GPT model;
  std::optional<parallel::DistributedDataParallel> ddp;
  std::optional<parallel::FullyShardedDataParallel> fsdp;
  parallel::ShardedParameters* dp = nullptr;

  Replica(parallel::Communicator& world, int zero, parallel::FSDPOptions fsdp_options = {})
      : model(models::gpt_config("gpt-nano")) {
    model.to(world.device());
    if (zero == 3) {
      dp = &fsdp.emplace(model, world, fsdp_options);
    } else {
      dp = &ddp.emplace(
          model, world,
          parallel::DDPOptions{.bucket_bytes = 32 << 10, .shard_gradients = zero == 2});
    }
  }
};

SimStep sim_step(int zero, bool prefetch) {
  const int n = 4;
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, n);
  for (Device d : devices) sim::configure(d, sim_preset("l4-24gb"));
  const Batches data = make_batches();
  SimStep out;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    manual_seed(5);
    Replica replica(world, zero, parallel::FSDPOptions{.prefetch = prefetch});
    models::GPT& model = replica.model;
    auto& ddp = replica.ddp;
    auto& fsdp = replica.fsdp;
    parallel::ShardedParameters* dp = replica.dp;
    nn::optim::AdamW opt(model.parameters(), {.lr = 1e-3});
    std::optional<parallel::ZeroOptimizer> sharded;
    if (zero == 3) sharded.emplace(opt, world, *dp);
    const sim::Timeline& clock = sim::timeline(world.device());
    double began = 0;
    parallel::CommTotals before;
    parallel::CommSeconds group_before;
    for (int s = 0; s < 2; ++s) {
      began = clock.now();
      before = parallel::comm_totals(world.device());
      group_before = world.seconds();
      opt.zero_grad();
      const int64_t rows = kBatch / n, r = world.rank();
      if (fsdp) fsdp->unshard();
      model
          .loss(data.x[s].narrow(0, r * rows, rows).to(world.device()),
                data.y[s].narrow(0, r * rows, rows).to(world.device()))
          .backward();
      if (fsdp) fsdp->synchronize();
      if (ddp) ddp->synchronize();
      if (sharded) {
        sharded->step();
      } else {
        opt.step();
      }
    }
    const double seconds = clock.now() - began;
    const double sent = parallel::comm_totals(world.device()).bytes_sent - before.bytes_sent;
    const parallel::CommSeconds group = world.seconds();
    if (fsdp) fsdp->gather_whole();  // collective
    if (world.rank() != 0) return;
    out = {seconds, group.busy - group_before.busy, group.exposed - group_before.exposed, sent, {}};
    for (auto& [name, t] : model.named_parameters()) out.params.emplace_back(name, t.to(kCPU));
  });
  return out;
}

TEST_CASE("ZeRO-3: the next block's gather and the reduce-scatters overlap compute (prefetch)") {
  const SimStep plain = sim_step(0, false);
  const SimStep blocking = sim_step(3, false), prefetched = sim_step(3, true);
  // The same arithmetic, bit for bit.
  REQUIRE(prefetched.params.size() == blocking.params.size());
  for (size_t i = 0; i < blocking.params.size(); ++i) {
    CAPTURE(blocking.params[i].first);
    CHECK(prefetched.params[i].second.to_vector<float>() ==
          blocking.params[i].second.to_vector<float>());
  }
  MESSAGE("simulated step: DDP ", plain.seconds * 1e3, " ms; ZeRO-3 ", blocking.seconds * 1e3,
          " ms without prefetch, ", prefetched.seconds * 1e3, " ms with; exposed ",
          blocking.exposed * 1e3, " ms, ", prefetched.exposed * 1e3, " ms of ",
          prefetched.comm * 1e3, " ms");
  CHECK(prefetched.comm == doctest::Approx(blocking.comm));
  CHECK(prefetched.exposed < 0.7 * blocking.exposed);
  CHECK(prefetched.seconds < blocking.seconds);
  // Bytes sent a step (the ZeRO paper's count): DDP's allreduce moves 2 x the parameters'
  // (n-1)/n; ZeRO-3 gathers each block twice and reduce-scatters its gradients (3 x), and
  // gathers what no block holds once (it stays whole through backward) and reduce-scatters it.
  const models::GPT reference(models::gpt_config("gpt-nano"));
  double outside = 0, all = 0;
  for (const auto& [name, p] : reference.named_parameters()) {
    all += double(p.numel());
    if (name.find(".h.") == std::string::npos) outside += double(p.numel());
  }
  const double share = 4 * 3.0 / 4;  // f32 bytes x (n-1)/n
  CHECK(plain.bytes_sent == doctest::Approx(2 * share * all).epsilon(0.01));
  CHECK(prefetched.bytes_sent ==
        doctest::Approx(share * (3 * (all - outside) + 2 * outside)).epsilon(0.01));
}

TEST_CASE("ZeRO-Offload: a gradient part goes down as soon as it is reduced, during backward") {
  const Batches data = make_batches();
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    parallel::run_ranks(
        parallel::devices_of(DeviceType::sim, 2), [&](parallel::Communicator& world) {
          manual_seed(5);
          Replica replica(world, zero);
          models::GPT& model = replica.model;
          auto& ddp = replica.ddp;
          auto& fsdp = replica.fsdp;
          parallel::ShardedParameters* dp = replica.dp;
          nn::optim::AdamW opt(model.parameters(), {.lr = 1e-3});
          opt.offload();
          parallel::ZeroOptimizer sharded(opt, world, *dp);
          const int64_t rows = kBatch / 2, r = world.rank();
          const Tensor x = data.x[0].narrow(0, r * rows, rows).to(world.device());
          const Tensor y = data.y[0].narrow(0, r * rows, rows).to(world.device());
          const sim::Timeline& clock = sim::timeline(world.device());
          const double host_before = clock.now(sim::Stream::host);  // after the batch's upload
          if (fsdp) fsdp->unshard();
          model.loss(x, y).backward();
          // Before synchronize(): the parts reduced so far are on their way down (ZeRO-2, -3);
          // whole gradients (ZeRO-1) go down at the step.
          const double copied_in_backward = clock.now(sim::Stream::host) - host_before;
          if (fsdp) fsdp->synchronize();
          if (ddp) ddp->synchronize();
          if (zero == 1) {
            CHECK(copied_in_backward == 0);
          } else {
            CHECK(copied_in_backward > 0);
            for (const parallel::OwnedPiece& piece : dp->owned_pieces())
              CHECK(dp->piece_gradient(piece).device() == kCPU);
          }
          sharded.step();
        });
  }
}

}  // namespace dlf
