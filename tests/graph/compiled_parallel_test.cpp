// A data-parallel training step captured as a graph: DDP's bucket reductions are ops of the
// step, captured in the order backward launched them (between backward's other ops, not after
// them) and replayed there; two ranks train compiled as they train eagerly, ZeRO-1 and -2's
// sharded updates and gathers included, and ZeRO-3's gathered parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>

#include <unistd.h>

#include <dlf/dlf.h>

#include "test_util.h"

using namespace dlf;

namespace {

using Batch = std::vector<Tensor>;

// Two sequences of 16 tokens and their targets, on `device`.
Batch rank_batch(Generator& data, int64_t vocab, Device device) {
  return {randint(0, vocab, {2, 16}, {.dtype = DType::i64}, &data).to(device),
          randint(0, vocab, {2, 16}, {.dtype = DType::i64}, &data).to(device)};
}

struct RankRun {
  std::vector<float> losses;       // each step's loss on this rank
  double compute = 0, comm = 0;    // sim devices: where the two streams are after the steps
  parallel::CommSeconds seconds;   // what the group's collectives cost
  std::vector<float> weights;      // every weight after the last step
  std::vector<std::string> nodes;  // the compiled step's ops, in order
  int captures = 0;
};

// Rank `rank` of `world` trains gpt-nano five clipped AdamW steps under DDP (small buckets, so
// there are several), eagerly or as one captured graph per step; with ZeRO stage `zero` (1 or
// 2) the optimizer is sharded over the ranks.
RankRun train_rank(parallel::Communicator& world, bool compiled, int steps, int zero) {
  constexpr double kClip = 0.5;
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  manual_seed(42);
  models::GPT model(config);
  model.to(world.device());
  parallel::DistributedDataParallel ddp(model, world,
                                        {.bucket_bytes = 16 << 10, .shard_gradients = zero >= 2});
  REQUIRE(ddp.num_buckets() > 2);
  const std::vector<Tensor> params = model.parameters();
  nn::optim::AdamW opt(params, {.lr = 1e-3});
  std::optional<parallel::ZeroOptimizer> sharded;
  if (zero > 0) {
    sharded.emplace(opt, world, ddp);
    sharded->init_state();
  } else {
    opt.init_state();
  }
  const auto loss = [&](const Batch& b) { return model.loss(b[0], b[1]); };
  Tensor norm = zeros({}, {.dtype = DType::f64, .device = world.device()});
  graph::Compiled step(graph::backward_step(loss, [&] {
    ddp.synchronize();
    norm.copy_(sharded ? sharded->clip_and_update(params, kClip)
                       : nn::optim::clip_and_update(opt, params, kClip));
  }));
  const graph::StepFn eager_step = graph::backward_step(loss);
  Generator data(uint64_t(7 + world.rank()));  // each rank its own share of the batch
  RankRun run;
  for (int i = 0; i < steps; ++i) {
    const Batch b = rank_batch(data, config.vocab, world.device());
    opt.set_lr(1e-3 / double(i + 1));
    opt.zero_grad();
    if (compiled) {
      if (sharded) {
        sharded->begin_step();
      } else {
        opt.begin_step();
      }
      run.losses.push_back(step(b)[0].item<float>());
    } else {
      run.losses.push_back(eager_step(b)[0].item<float>());
      ddp.synchronize();
      if (sharded) {
        sharded->clip_grad_norm(params, kClip);
        sharded->step();
      } else {
        nn::optim::clip_grad_norm(params, kClip);
        opt.step();
      }
    }
  }
  for (const Tensor& p : params)
    for (float x : p.to_vector<float>()) run.weights.push_back(x);
  if (world.device().type == DeviceType::sim) {
    run.compute = sim::timeline(world.device()).now(sim::Stream::compute);
    run.comm = sim::timeline(world.device()).now(sim::Stream::comm);
    run.seconds = world.seconds();
  }
  if (compiled) {
    run.captures = step.captures();
    for (const graph::Node& n : step.last_executable().graph().nodes)
      run.nodes.push_back(n.op->name);
  }
  return run;
}

std::vector<RankRun> train_replicas(bool compiled, const std::vector<Device>& devices = {kCPU, kCPU},
                           int steps = 5, int zero = 0) {
  std::vector<RankRun> runs(devices.size());
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    runs[size_t(world.rank())] = train_rank(world, compiled, steps, zero);
  });
  return runs;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

// Each rank's compiled run: one capture, eager's losses and weights to 1e-6, and the replicas'
// weights equal (they took the same steps).
void check_trains_as_eager(const std::vector<RankRun>& eager,
                           const std::vector<RankRun>& compiled) {
  for (size_t r = 0; r < compiled.size(); ++r) {
    INFO("rank " << r);
    CHECK(compiled[r].captures == 1);
    CHECK(max_difference(compiled[r].losses, eager[r].losses) <= 1e-6);
    CHECK(max_difference(compiled[r].weights, eager[r].weights) <= 1e-6);
    CHECK(compiled[r].weights == compiled[0].weights);
  }
  // The ranks saw different data: their losses differ, so the test compares real reductions.
  CHECK(compiled[0].losses != compiled[1].losses);
}

}  // namespace

TEST_CASE("graph: a data-parallel step compiles with its reductions; two ranks train as eager") {
  const std::vector<RankRun> eager = train_replicas(false), compiled = train_replicas(true);
  check_trains_as_eager(eager, compiled);
  for (const RankRun& c : compiled) {
    // One reduction a bucket, launched while backward runs: the first comes before backward's
    // last matmul, not after all of backward.
    const auto first = std::find(c.nodes.begin(), c.nodes.end(), "allreduce_");
    REQUIRE(first != c.nodes.end());
    CHECK(std::count(c.nodes.begin(), c.nodes.end(), "allreduce_") > 2);
    const auto last_matmul = std::find(c.nodes.rbegin(), c.nodes.rend(), "matmul");
    REQUIRE(last_matmul != c.nodes.rend());
    CHECK(first < last_matmul.base());
  }
}

TEST_CASE("graph: ZeRO-1 and -2 compile with their sharded update; two ranks train as eager") {
  for (const int zero : {1, 2}) {
    INFO("ZeRO-" << zero);
    const std::vector<RankRun> eager = train_replicas(false, {kCPU, kCPU}, 5, zero);
    const std::vector<RankRun> compiled = train_replicas(true, {kCPU, kCPU}, 5, zero);
    check_trains_as_eager(eager, compiled);  // every rank gathered the others' pieces
    for (const RankRun& c : compiled) {
      // ZeRO-2 reduce-scatters the buckets instead of reducing them whole; both stages update
      // a piece each and gather the others', a bucket at a time, at the step's end.
      const std::string reduction = zero == 2 ? "reduce_scatter" : "allreduce_";
      CHECK(std::count(c.nodes.begin(), c.nodes.end(), reduction) > 2);
      const auto last_update = std::find(c.nodes.rbegin(), c.nodes.rend(), "adam_update_");
      const auto first_gather = std::find(c.nodes.begin(), c.nodes.end(), "allgather");
      REQUIRE(last_update != c.nodes.rend());
      REQUIRE(first_gather != c.nodes.end());
      CHECK(last_update.base() <= first_gather);
      CHECK(std::count(c.nodes.begin(), c.nodes.end(), "allgather") > 2);
    }
  }
}

namespace {

struct ShardedRun {
  RankRun run;
  size_t parameter_buffers = 0;  // external buffers of the graph over a parameter's storage
  size_t gathered_bytes = 0;     // the arena buffers the allgathers write
};

// Rank `rank` of `world` trains gpt-nano five clipped AdamW steps under ZeRO-3 (FSDP: each block
// a unit, gathered before its forward and again before its backward), eagerly or as one captured
// graph per step, leaving out the passes `skip` names.
ShardedRun train_fsdp_rank(parallel::Communicator& world, bool compiled,
                           const std::vector<std::string>& skip = {}) {
  constexpr double kClip = 0.5;
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  manual_seed(42);
  models::GPT model(config);
  model.to(world.device());
  const std::vector<Tensor> params = model.parameters();
  parallel::FullyShardedDataParallel fsdp(model, world);
  nn::optim::AdamW opt(params, {.lr = 1e-3});
  parallel::ZeroOptimizer sharded(opt, world, fsdp);
  sharded.init_state();
  const auto loss = [&](const Batch& b) {
    fsdp.unshard();
    return model.loss(b[0], b[1]);
  };
  graph::Compiled step(graph::backward_step(loss,
                                            [&] {
                                              fsdp.synchronize();
                                              (void)sharded.clip_and_update(params, kClip);
                                            }),
                       skip);
  const graph::StepFn eager_step = graph::backward_step(loss);
  Generator data(uint64_t(7 + world.rank()));
  ShardedRun out;
  for (int i = 0; i < 5; ++i) {
    const Batch b = rank_batch(data, config.vocab, world.device());
    opt.set_lr(1e-3 / double(i + 1));
    opt.zero_grad();
    if (compiled) {
      sharded.begin_step();
      out.run.losses.push_back(step(b)[0].item<float>());
    } else {
      out.run.losses.push_back(eager_step(b)[0].item<float>());
      fsdp.synchronize();
      sharded.clip_grad_norm(params, kClip);
      sharded.step();
    }
  }
  fsdp.gather_whole();
  for (const Tensor& p : params)
    for (float x : p.to_vector<float>()) out.run.weights.push_back(x);
  fsdp.release_whole();
  if (world.device().type == DeviceType::sim) {
    out.run.compute = sim::timeline(world.device()).now(sim::Stream::compute);
    out.run.seconds = world.seconds();
  }
  if (!compiled) return out;
  out.run.captures = step.captures();
  const graph::Graph& g = step.last_executable().graph();
  for (const graph::Node& n : g.nodes) {
    out.run.nodes.push_back(n.op->name);
    if (n.op->name == "allgather")
      out.gathered_bytes += g.buffers[size_t(g.values[size_t(n.outputs[0])].buffer)].nbytes;
  }
  for (const graph::Buffer& b : g.buffers)
    for (const Tensor& p : params)
      out.parameter_buffers += b.kind == graph::BufferKind::external && b.storage == p.storage();
  return out;
}

}  // namespace

TEST_CASE("graph: ZeRO-3 compiles; its gathered parameters are arena values; two ranks as eager") {
  std::vector<ShardedRun> eager(2), compiled(2);
  for (const bool c : {false, true}) {
    parallel::run_ranks({kCPU, kCPU}, [&](parallel::Communicator& world) {
      (c ? compiled : eager)[size_t(world.rank())] = train_fsdp_rank(world, c);
    });
  }
  std::vector<RankRun> e, k;
  for (int r = 0; r < 2; ++r) {
    e.push_back(eager[size_t(r)].run);
    k.push_back(compiled[size_t(r)].run);
  }
  check_trains_as_eager(e, k);
  const int64_t parameter_bytes = [] {
    manual_seed(42);
    int64_t n = 0;
    for (const Tensor& p : models::GPT(models::gpt_config("gpt-nano")).parameters())
      n += int64_t(p.nbytes());
    return n;
  }();
  for (const ShardedRun& c : compiled) {
    // The graph reads no parameter's own (released) bytes: every read is of a gather.
    CHECK(c.parameter_buffers == 0);
    // Each block gathered twice (forward, backward), the rest once; each gather the whole unit
    // (padded to the ranks), so between one and two times the parameters' bytes, more than once.
    CHECK(int64_t(c.gathered_bytes) > parameter_bytes);
    CHECK(int64_t(c.gathered_bytes) < 2 * parameter_bytes + 4096);
    const auto count = [&](const char* op) {
      return std::count(c.run.nodes.begin(), c.run.nodes.end(), op);
    };
    const int64_t blocks = models::gpt_config("gpt-nano").layers;
    CHECK(count("allgather") == 2 * blocks + 1);  // and the root's once
    CHECK(count("reduce_scatter") == blocks + 1);
  }
}

namespace {

// `body` on each of two cpu ranks, without gradients: gpt-nano under ZeRO-3 and a batch of the
// rank's own.
void on_two_fsdp_ranks(const std::function<void(models::GPT&, parallel::FullyShardedDataParallel&,
                                                const Batch&)>& body) {
  parallel::run_ranks({kCPU, kCPU}, [&](parallel::Communicator& world) {
    manual_seed(42);
    models::GPT model(models::gpt_config("gpt-nano"));
    parallel::FullyShardedDataParallel fsdp(model, world);
    Generator data(uint64_t(7 + world.rank()));
    const Batch b = rank_batch(data, model.config().vocab, world.device());
    autograd::NoGradGuard no_grad;
    body(model, fsdp, b);
  });
}

}  // namespace

TEST_CASE("graph: a ZeRO-3 capture that throws leaves FSDP to gather again, eagerly or captured") {
  on_two_fsdp_ranks([](models::GPT& model, parallel::FullyShardedDataParallel& fsdp,
                       const Batch& b) {
    bool fail = true;
    graph::Compiled loss([&](const Batch& x) {
      fsdp.unshard();  // the root unit whole, aliased in the capture
      const Tensor l = model.loss(x[0], x[1]);
      if (fail) throw Error("on purpose");  // before reshard(): the root stays "whole"
      fsdp.reshard();
      return std::vector<Tensor>{l};
    });
    CHECK_THROWS_WITH_AS(loss(b), doctest::Contains("on purpose"), Error);
    fsdp.unshard();  // gathers the root again: its bytes were never there
    const float eager = model.loss(b[0], b[1]).item<float>();
    fsdp.reshard();
    CHECK_THROWS_WITH_AS(loss(b), doctest::Contains("on purpose"), Error);
    fail = false;
    CHECK(loss(b)[0].item<float>() == doctest::Approx(eager).epsilon(1e-6));  // the root's gather
  });
}

TEST_CASE("graph: ZeRO-3 refuses a capture that runs the step, or finds parameters whole") {
  on_two_fsdp_ranks(
      [](models::GPT& model, parallel::FullyShardedDataParallel& fsdp, const Batch& b) {
        const graph::StepFn forward = [&](const Batch& x) {
          fsdp.unshard();
          const Tensor l = model.loss(x[0], x[1]);
          fsdp.reshard();
          return std::vector<Tensor>{l};
        };
        // Both refusals come before any collective, on every rank alike.
        test::check_error([&] { (void)graph::capture(forward, b, graph::CaptureMode::eager); },
                          {"FSDP", "captured without running it"});
        fsdp.gather_whole();
        test::check_error([&] { (void)graph::Compiled(forward)(b); },
                          {"FSDP", "whole", "release them first"});
        fsdp.release_whole();
        CHECK(graph::Compiled(forward)(b)[0].defined());
      });
}

TEST_CASE("graph: on sim devices ZeRO-3's compiled gathers overlap compute as eager's prefetch") {
  // The capture's forward could not prefetch (FSDP learns the blocks' order by running them):
  // gather prefetch moves each block's gather up a block, and the replayed steps hide as much
  // communication as eager's.
  const std::vector<Device> devices = parallel::devices_of(DeviceType::sim, 2);
  auto run = [&](bool compiled, std::vector<std::string> skip) {
    for (Device d : devices) sim::reset(d);
    std::vector<ShardedRun> runs(2);
    parallel::run_ranks(devices, [&](parallel::Communicator& world) {
      runs[size_t(world.rank())] = train_fsdp_rank(world, compiled, skip);
    });
    return runs[0].run;
  };
  const RankRun eager = run(false, {}), compiled = run(true, {}),
                unmoved = run(true, {"gather prefetch"});
  MESSAGE("sim: eager ", eager.compute * 1e3, " ms (", eager.seconds.exposed * 1e3,
          " exposed), compiled ", compiled.compute * 1e3, " (", compiled.seconds.exposed * 1e3,
          "), without gather prefetch ", unmoved.compute * 1e3, " (", unmoved.seconds.exposed * 1e3,
          ")");
  CHECK(compiled.losses == unmoved.losses);
  CHECK(compiled.seconds.busy == doctest::Approx(eager.seconds.busy).epsilon(0.01));
  CHECK(compiled.seconds.exposed <= 1.1 * eager.seconds.exposed);
  CHECK(unmoved.seconds.exposed > 1.25 * compiled.seconds.exposed);
  CHECK(compiled.compute < unmoved.compute);
}

TEST_CASE("graph: gather prefetch starts an async allgather where the one before it is used") {
  parallel::run_ranks({kCPU}, [&](parallel::Communicator& world) {
    const graph::StepFn step = [&](const std::vector<Tensor>& in) {
      parallel::Work w;
      const Tensor first = world.allgather(in[0], &w) * 2.0;
      const Tensor second = world.allgather(in[1], &w) * 3.0;  // nothing between: moves up
      const Tensor made = in[2] + 1.0;
      Tensor third = made * 5.0;                             // computes between the two
      third = third + world.allgather(made, &w) * 4.0;       // after its input's maker
      const Tensor again = world.allgather(made, &w) * 7.0;  // the same bytes again: stays
      const Tensor blocking = world.allgather(in[1]) * 6.0;  // not async: stays
      return std::vector<Tensor>{first + second + third + again + blocking};
    };
    const std::vector<Tensor> inputs = {ones({4}), full({4}, 2.0), full({4}, 3.0)};
    graph::Graph g = graph::capture(step, inputs).graph;
    auto names = [&] {
      std::vector<std::string> out;
      for (const graph::Node& n : g.nodes) out.push_back(n.op->name);
      return out;
    };
    using V = std::vector<std::string>;
    REQUIRE(names() == V{"allgather", "mul_scalar", "allgather", "mul_scalar", "add_scalar",
                         "mul_scalar", "allgather", "mul_scalar", "add", "allgather", "mul_scalar",
                         "allgather", "mul_scalar", "add", "add", "add", "add"});
    CHECK(graph::prefetch_gathers(g) == 2);
    CHECK(names() == V{"allgather", "allgather", "mul_scalar", "mul_scalar", "add_scalar",
                       "allgather", "mul_scalar", "mul_scalar", "add", "allgather", "mul_scalar",
                       "allgather", "mul_scalar", "add", "add", "add", "add"});
    const graph::Executable moved(g);
    CHECK(moved.run(inputs)[0].to_vector<float>() ==
          std::vector<float>(4, 2 + 6 + (4 * 5 + 4 * 4) + 4 * 7 + 12));
  });
}

TEST_CASE("graph: on sim devices a compiled step waits for its reductions as the eager one does") {
  // A slow link: each bucket's allreduce takes far longer than backward's remaining ops, so a
  // step that did not wait for them would end on the compute stream before they arrive.
  const std::vector<Device> devices = parallel::devices_of(DeviceType::sim, 2);
  const SimSpec before = sim::spec_of(devices[0]);
  auto slow_link = [&] {
    for (Device d : devices) {
      sim::reset(d);
      SimSpec spec = sim::spec_of(d);
      spec.interconnect.latency = 0.01;
      sim::configure(d, spec);
    }
  };
  for (const int zero : {0, 2}) {  // allreduces, or ZeRO-2's reduce-scatters
    INFO("ZeRO-" << zero);
    slow_link();
    const std::vector<RankRun> eager = train_replicas(false, devices, 1, zero);
    slow_link();
    const std::vector<RankRun> compiled = train_replicas(true, devices, 1, zero);
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r);
      const RankRun &e = eager[size_t(r)], &c = compiled[size_t(r)];
      CHECK(e.comm > 0.03);  // several buckets, 10 ms each
      CHECK(e.compute >= e.comm);
      CHECK(c.compute >= c.comm);  // the update ran after the reductions arrived
      CHECK(c.comm == doctest::Approx(e.comm).epsilon(0.05));
      // The group's figures come from the collectives as they run: a replayed step has them too.
      CHECK(c.seconds.busy == doctest::Approx(e.seconds.busy).epsilon(0.05));
      CHECK(c.seconds.exposed > 0.5 * c.seconds.busy);  // the slow link shows
      CHECK(c.seconds.exposed == doctest::Approx(e.seconds.exposed).epsilon(0.1));
    }
  }
  for (Device d : devices) sim::configure(d, before);
}

namespace {

// Losses and this rank's weights of gpt-nano (4 blocks) trained three clipped AdamW steps by
// train::make_pipeline_model over `layout`, eagerly or compiled: each rank's step one graph.
std::vector<RankRun> train_mesh(parallel::Layout layout, int micro_batches,
                                parallel::PipelineSchedule schedule, bool compiled) {
  constexpr double kClip = 0.5;
  models::GPTConfig config = models::gpt_config("gpt-nano");
  config.layers = 4;
  manual_seed(42);
  const nn::NamedTensors initial = models::GPT(config).state_dict();
  std::vector<RankRun> runs(size_t(layout.devices()));
  parallel::run_ranks(std::vector<Device>(size_t(layout.devices()), kCPU), [&](parallel::
                                                                                   Communicator&
                                                                                       world) {
    parallel::Mesh mesh(world, layout);
    const auto gpt = train::make_pipeline_model(
        config, mesh, initial,
        {.micro_batches = micro_batches, .schedule = schedule, .compile = compiled});
    const std::vector<Tensor> params = gpt->module().parameters();
    nn::optim::AdamW opt(params, {.lr = 1e-3});
    opt.init_state();
    if (compiled) {
      gpt->set_after_backward([&] {
        nn::optim::clip_and_update(opt, params, kClip, [&](const auto& ps) {
          return parallel::global_norm_on_device(ps, gpt->norm_scope());
        });
      });
    }
    Generator data(9);
    RankRun& run = runs[size_t(world.rank())];
    for (int i = 0; i < 3; ++i) {
      const Tensor x = randint(0, config.vocab, {4 * layout.dp, 16}, {.dtype = DType::i64}, &data);
      const Tensor y = randint(0, config.vocab, {4 * layout.dp, 16}, {.dtype = DType::i64}, &data);
      const int64_t rows = 4;
      const Tensor mine_x = x.narrow(0, mesh.dp_rank() * rows, rows);
      const Tensor mine_y = y.narrow(0, mesh.dp_rank() * rows, rows);
      opt.zero_grad();
      if (compiled) opt.begin_step();
      run.losses.push_back(float(gpt->step({mine_x, mine_y})));
      if (!compiled) {
        parallel::clip_grad_norm(params, kClip, gpt->norm_scope());
        opt.step();
      }
    }
    for (const Tensor& p : params)
      for (float v : p.to_vector<float>()) run.weights.push_back(v);
  });
  return runs;
}

}  // namespace

TEST_CASE(
    "graph: a pipeline step compiles whole (sends, receives, backwards) and trains as eager") {
  struct Case {
    parallel::Layout layout;
    int micro_batches;
    parallel::PipelineSchedule schedule;
  };
  for (const Case& c : {Case{{.pp = 2}, 4, parallel::PipelineSchedule::one_f_one_b},
                        Case{{.pp = 2}, 2, parallel::PipelineSchedule::gpipe},
                        Case{{.dp = 2, .tp = 2}, 2, parallel::PipelineSchedule::one_f_one_b},
                        Case{{.tp = 2, .pp = 2}, 2, parallel::PipelineSchedule::one_f_one_b}}) {
    CAPTURE(c.layout.dp);
    CAPTURE(c.layout.tp);
    CAPTURE(c.layout.pp);
    const std::vector<RankRun> eager = train_mesh(c.layout, c.micro_batches, c.schedule, false);
    const std::vector<RankRun> compiled = train_mesh(c.layout, c.micro_batches, c.schedule, true);
    for (size_t r = 0; r < eager.size(); ++r) {
      CAPTURE(r);
      CHECK(max_difference(compiled[r].losses, eager[r].losses) <= 1e-6);
      CHECK(max_difference(compiled[r].weights, eager[r].weights) <= 1e-6);
    }
  }
}

TEST_CASE("graph: a saved graph holding a collective does not load") {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("dlf_collective_graph_" + std::to_string(::getpid()) + ".json");
  parallel::run_ranks({kCPU}, [&](parallel::Communicator& world) {
    const graph::StepFn step = [&](const std::vector<Tensor>& in) {
      Tensor t = in[0] * 2.0;
      world.allreduce(t);
      return std::vector<Tensor>{t};
    };
    const graph::Graph g = graph::capture(step, {ones({4})}).graph;
    REQUIRE(std::any_of(g.nodes.begin(), g.nodes.end(),
                        [](const graph::Node& n) { return n.op->collective; }));
    graph::save(g, path);
  });
  test::check_error([&] { (void)graph::load(path); }, {"holds a collective (allreduce_)"});
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".safetensors");
}

TEST_CASE("graph: a captured collective names its group when that group is gone") {
  CHECK_THROWS_WITH_AS(parallel::Communicator::by_handle(-1), doctest::Contains("no longer exists"),
                       Error);
}
