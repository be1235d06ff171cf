#include <dlf/models/registry.h>
#include <dlf/train/rank_model.h>

#include <mutex>

#include "models/one_device_reference.h"
#include "test_util.h"

namespace dlf {
namespace {

constexpr int kSteps = 3;

struct Batches {
  std::vector<Tensor> x, y;
};

Batches make_batches(int64_t vocab, int64_t batch, uint64_t seed) {
  Generator gen(seed);
  Batches b;
  for (int s = 0; s < kSteps; ++s) {
    b.x.push_back(randint(0, vocab, {batch, 16}, {.dtype = DType::i64}, &gen));
    b.y.push_back(randint(0, vocab, {batch, 16}, {.dtype = DType::i64}, &gen));
  }
  return b;
}

nn::NamedTensors copies(const nn::NamedTensors& tensors) {
  nn::NamedTensors out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, t.clone());
  return out;
}

}  // namespace

TEST_CASE("tensor-parallel GPT: tp = 2 and 4 give one device's losses and gradients") {
  // 255 words do not split over 2 or 4 ranks: the padded rows must not change a thing.
  for (int64_t vocab : {256, 255}) {
    models::GPTConfig config = models::gpt_config("gpt-nano");
    config.vocab = vocab;
    const Batches data = make_batches(vocab, 4, 3);
    manual_seed(11);
    models::GPT whole(config);
    const nn::NamedTensors initial = copies(whole.state_dict());
    std::vector<double> losses;
    std::map<std::string, Tensor> first_grads;
    nn::optim::SGD opt({{.params = whole.parameters()}}, {.lr = 0.1});
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      Tensor loss = whole.loss(data.x[s], data.y[s]);
      loss.backward();
      if (s == 0) {
        for (auto& [name, p] : whole.named_parameters()) first_grads[name] = p.grad();
      }
      opt.step();
      losses.push_back(loss.item<double>());
    }
    for (int n : {2, 4}) {
      CAPTURE(vocab);
      CAPTURE(n);
      std::mutex mutex;
      parallel::run_ranks(
          parallel::devices_of(DeviceType::cpu, n), [&](parallel::Communicator& tp) {
            models::ParallelGPT model(config, tp);
            model.load_shard(initial);
            nn::optim::SGD sgd({{.params = model.parameters()}}, {.lr = 0.1});
            for (int s = 0; s < kSteps; ++s) {
              sgd.zero_grad();
              Tensor loss = model.loss(data.x[s], data.y[s]);
              loss.backward();
              if (s == 0) {
                // Each gradient's shard is the whole model's gradient, sharded the same way.
                std::lock_guard lock(mutex);
                for (auto& [name, p] : model.named_parameters()) {
                  CAPTURE(name);
                  const std::string source =
                      name == "lm_head.weight" ? "transformer.wte.weight" : name;
                  test::check_close(p.grad(), model.shard(name, first_grads.at(source)), 2e-6,
                                    1e-4);
                }
              }
              sgd.step();
              std::lock_guard lock(mutex);
              CHECK(loss.item<double>() == doctest::Approx(losses[s]).epsilon(1e-5));
            }
          });
    }
  }
  test::check_error(
      [&] {
        parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 3),
                            [&](parallel::Communicator& tp) {
                              models::ParallelGPT model(models::gpt_config("gpt-nano"), tp);
                            });
      },
      {"do not split over 3 tensor-parallel ranks"});
}

TEST_CASE("pipeline stages: balanced by FLOPs, the head counted on the last stage") {
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  const models::GPTConfig small = models::gpt_config("gpt-small");
  // A block is 24·C² + 4·T·C = 17.3 MFLOP per token; the head 2·C·V = 77.2, 4.46 blocks.
  CHECK(models::gpt_stage_blocks(small, 1) == Blocks{{0, 12}});
  CHECK(models::gpt_stage_blocks(small, 2) == Blocks{{0, 8}, {8, 12}});  // 8 | 4 + 4.46
  CHECK(models::gpt_stage_blocks(small, 4) == Blocks{{0, 4}, {4, 8}, {8, 12}, {12, 12}});
  const models::GPTConfig nano = models::gpt_config("gpt-nano");
  CHECK(models::gpt_stage_blocks(nano, 2) == Blocks{{0, 1}, {1, 2}});
  CHECK(models::gpt_stage_blocks(nano, 3) == Blocks{{0, 1}, {1, 2}, {2, 2}});
  test::check_error([&] { models::gpt_stage_blocks(nano, 4); },
                    {"2 blocks and the head make at most 3 pipeline stages, not 4"});
  // a split given in the config is the cut, checked against the stages and blocks
  models::GPTConfig split = small;
  split.pipeline_split = {2, 6, 4, 0};
  CHECK(models::gpt_stage_blocks(split, 4) == Blocks{{0, 2}, {2, 8}, {8, 12}, {12, 12}});
  test::check_error([&] { models::gpt_stage_blocks(split, 2); },
                    {"a pipeline split of 4 stages does not cut 12 blocks into 2 stages"});
  split.pipeline_split = {6, 7};
  test::check_error([&] { models::gpt_stage_blocks(split, 2); },
                    {"does not cut 12 blocks into 2 stages"});
}

TEST_CASE("every dp x tp x pp layout of gpt-nano gives one device's losses after 3 steps") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  constexpr int64_t kBatch = 16;
  constexpr double kClip = 0.5;  // below the gradients' norm: the global norm must be right
  const Batches data = make_batches(config.vocab, kBatch, 4);
  const test::OneDeviceRun one = test::train_one_device(config, 12, data.x, data.y, kClip);
  // gpt-nano's 4 heads allow tp <= 4; its 2 blocks and head, pp <= 3.
  const parallel::Layout layouts[] = {
      {.dp = 2},          {.tp = 2},          {.pp = 2},           // 2 devices
      {.dp = 4},          {.tp = 4},          {.dp = 2, .tp = 2},  // 4
      {.dp = 2, .pp = 2}, {.tp = 2, .pp = 2},                      //
      {.dp = 8},          {.dp = 4, .tp = 2}, {.dp = 2, .tp = 4},  // 8
      {.dp = 4, .pp = 2}, {.tp = 4, .pp = 2}, {.dp = 2, .tp = 2, .pp = 2}};
  int case_index = 0;
  for (const parallel::Layout& layout : layouts) {
    CAPTURE(layout.dp);
    CAPTURE(layout.tp);
    CAPTURE(layout.pp);
    // Two micro-batches per replica (DDP reduces once, after the second); both schedules.
    const auto schedule = case_index++ % 2 ? parallel::PipelineSchedule::gpipe
                                           : parallel::PipelineSchedule::one_f_one_b;
    std::vector<double> losses;
    std::mutex mutex;
    parallel::run_ranks(
        parallel::devices_of(DeviceType::cpu, layout.devices()),
        [&](parallel::Communicator& world) {
          parallel::Mesh mesh(world, layout);
          const auto gpt = train::make_pipeline_model(config, mesh, one.initial,
                                                      {.micro_batches = 2, .schedule = schedule});
          nn::optim::SGD opt({{.params = gpt->module().parameters()}},
                             {.lr = 0.1, .momentum = 0.9});
          const int64_t rows = kBatch / layout.dp, first = mesh.dp_rank() * rows;
          for (int s = 0; s < kSteps; ++s) {
            opt.zero_grad();
            const double loss =
                gpt->step({data.x[s].narrow(0, first, rows), data.y[s].narrow(0, first, rows)});
            parallel::clip_grad_norm(gpt->module().parameters(), kClip, gpt->norm_scope());
            opt.step();
            std::lock_guard lock(mutex);
            if (world.rank() == 0) losses.push_back(loss);
          }
        });
    REQUIRE(losses.size() == kSteps);
    for (int s = 0; s < kSteps; ++s)
      CHECK(losses[s] == doctest::Approx(one.losses[s]).epsilon(1e-5));
  }
}

TEST_CASE("model-parallel GPT: the gathered whole is the model and its optimizer state") {
  models::GPTConfig config = models::gpt_config("gpt-nano");
  config.vocab = 255;  // padded over 2 ranks
  manual_seed(13);
  models::GPT whole(config);
  const nn::NamedTensors expected = whole.state_dict();
  // A whole optimizer state by name: a tensor like each parameter's, twice.
  nn::NamedTensors state = {{"step", from_vector<int64_t>({7}, {})}};
  for (const auto& [name, p] : whole.named_parameters()) {
    state.emplace_back(name + ".exp_avg", p * 2.0);
    state.emplace_back(name + ".exp_avg_sq", p * 3.0);
  }
  const parallel::Layout layouts[] = {{.tp = 2}, {.pp = 2}, {.tp = 2, .pp = 2}, {.pp = 3}};
  for (const parallel::Layout& layout : layouts) {
    CAPTURE(layout.tp);
    CAPTURE(layout.pp);
    std::pair<nn::NamedTensors, nn::NamedTensors> gathered;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, layout.devices()),
                        [&](parallel::Communicator& world) {
                          parallel::Mesh mesh(world, layout);
                          const auto gpt = train::make_pipeline_model(config, mesh, expected, {});
                          auto mine = gpt->gather_whole(gpt->shard_optimizer_state(state));
                          if (world.rank() == 0) gathered = std::move(mine);
                        });
    using Pair = std::pair<const nn::NamedTensors*, const nn::NamedTensors*>;
    for (const auto& [got, want] :
         {Pair{&gathered.first, &expected}, Pair{&gathered.second, &state}}) {
      REQUIRE(got->size() == want->size());
      for (size_t i = 0; i < want->size(); ++i) {
        CAPTURE((*want)[i].first);
        CHECK((*got)[i].first == (*want)[i].first);
        test::check_close((*got)[i].second, (*want)[i].second, 0, 0);
      }
    }
  }
}

TEST_CASE(
    "ParallelGPT's chunks: each its own blocks; a chunk out of range or an unknown schedule") {
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  const models::GPTConfig config = models::gpt_config("gpt-nano");  // 2 blocks
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 1), [&](parallel::Communicator& tp) {
    const models::ParallelGPT model(config, tp, /*stage=*/0, /*stages=*/1, /*chunks=*/2);
    CHECK(model.chunk_blocks == Blocks{{0, 1}, {1, 2}});
    const Tensor idx = zeros({1, 4}, {.dtype = DType::i64});
    for (int chunk : {-1, 2}) {
      test::check_error([&] { (void)model.forward(Tensor(), idx, idx, chunk); },
                        {"ParallelGPT: chunk " + std::to_string(chunk) + " is not in 0..1"});
    }
  });
  for (auto s : {parallel::PipelineSchedule::gpipe, parallel::PipelineSchedule::one_f_one_b,
                 parallel::PipelineSchedule::interleaved}) {
    CHECK(parallel::parse_schedule(parallel::schedule_name(s)) == s);
  }
  test::check_error([] { (void)parallel::parse_schedule("zero-bubble"); },
                    {"unknown pipeline schedule 'zero-bubble'", "1f1b, gpipe or interleaved"});
}

}  // namespace dlf
