#include <dlf/device/sim_device.h>
#include <dlf/models/registry.h>
#include <dlf/train/rank_model.h>

#include <mutex>

#include "models/one_device_reference.h"
#include "test_util.h"

namespace dlf {
namespace {

constexpr int kSteps = 3;
constexpr int64_t kBatch = 8, kSeq = 16;

struct Data {
  std::vector<Tensor> x, y;
};

Data make_data(int64_t vocab) {
  Generator gen(6);
  Data d;
  for (int s = 0; s < kSteps; ++s) {
    d.x.push_back(randint(0, vocab, {kBatch, kSeq}, {.dtype = DType::i64}, &gen));
    d.y.push_back(randint(0, vocab, {kBatch, kSeq}, {.dtype = DType::i64}, &gen));
  }
  return d;
}

// Losses of kSteps SGD steps through a pp-stage pipeline; each stage's peak memory.
std::pair<std::vector<double>, std::vector<int64_t>> train_pipeline(
    const models::GPTConfig& config, const nn::NamedTensors& initial, const Data& data, int pp,
    parallel::PipelineSchedule schedule, DeviceType type, int micro = 4, int chunks = 1,
    double* sim_seconds = nullptr) {
  std::vector<double> losses;
  std::vector<int64_t> peaks(pp);
  std::mutex mutex;
  parallel::run_ranks(parallel::devices_of(type, pp), [&](parallel::Communicator& world) {
    if (type != DeviceType::cpu) sim::reset(world.device());  // the clock of an earlier run
    parallel::Mesh mesh(world, {.pp = pp});
    const auto gpt = train::make_pipeline_model(
        config, mesh, initial,
        {.micro_batches = micro, .schedule = schedule, .virtual_stages = chunks});
    nn::optim::SGD opt({{.params = gpt->module().parameters()}}, {.lr = 0.1, .momentum = 0.9});
    const Device dev = world.device();
    if (type != DeviceType::cpu) allocator_for(dev).reset_peak();
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      const double loss = gpt->step({data.x[s], data.y[s]});
      opt.step();
      std::lock_guard lock(mutex);
      if (world.rank() == 0) losses.push_back(loss);
    }
    if (type != DeviceType::cpu) peaks[world.rank()] = allocator_for(dev).stats().peak_bytes;
    if (sim_seconds != nullptr && world.rank() == 0) *sim_seconds = sim::timeline(dev).now();
  });
  return {losses, peaks};
}

}  // namespace

TEST_CASE(
    "pipeline: GPipe and 1F1B over 1, 2 and 4 stages give one device's losses; 1F1B holds less") {
  models::GPTConfig config = models::gpt_config("gpt-nano");
  config.layers = 4;  // four blocks: two per stage, or one per stage over four
  const Data data = make_data(config.vocab);
  const test::OneDeviceRun one = test::train_one_device(config, 21, data.x, data.y);
  for (int pp : {1, 2, 4}) {
    for (auto schedule :
         {parallel::PipelineSchedule::gpipe, parallel::PipelineSchedule::one_f_one_b}) {
      CAPTURE(pp);
      CAPTURE(int(schedule));
      const auto losses =
          train_pipeline(config, one.initial, data, pp, schedule, DeviceType::cpu).first;
      REQUIRE(losses.size() == kSteps);
      for (int s = 0; s < kSteps; ++s)
        CHECK(losses[s] == doctest::Approx(one.losses[s]).epsilon(1e-5));
    }
  }
  // Per-stage peak memory on sim devices, 8 micro-batches over 4 stages: under GPipe every
  // stage holds all 8 micro-batches' activations at once, under 1F1B stage s at most 4 - s.
  const auto gpipe = train_pipeline(config, one.initial, data, 4, parallel::PipelineSchedule::gpipe,
                                    DeviceType::sim, 8);
  const auto one_f_one_b = train_pipeline(
      config, one.initial, data, 4, parallel::PipelineSchedule::one_f_one_b, DeviceType::sim, 8);
  CHECK(one_f_one_b.first == gpipe.first);  // the same arithmetic in another order of micro-batches
  CHECK(one_f_one_b.second[0] < gpipe.second[0]);
  CHECK(one_f_one_b.second[3] < gpipe.second[3]);
}

TEST_CASE(
    "pipeline: the interleaved schedule gives one device's losses with a smaller bubble than "
    "1F1B") {
  models::GPTConfig config = models::gpt_config("gpt-nano");
  config.layers = 8;  // two chunks of two blocks on each of two stages, or of one on four
  const Data data = make_data(config.vocab);
  const test::OneDeviceRun one = test::train_one_device(config, 22, data.x, data.y);
  using parallel::PipelineSchedule;
  // Twice as many micro-batches as stages: past the warm-up, one forward then one backward.
  for (int pp : {2, 4}) {
    CAPTURE(pp);
    const auto losses = train_pipeline(config, one.initial, data, pp, PipelineSchedule::interleaved,
                                       DeviceType::cpu, 2 * pp, 2)
                            .first;
    REQUIRE(losses.size() == kSteps);
    for (int s = 0; s < kSteps; ++s)
      CHECK(losses[s] == doctest::Approx(one.losses[s]).epsilon(1e-5));
  }
  // On sim devices: the same arithmetic as 1F1B, and the step is shorter — each stage waits
  // (pp - 1) / V chunk-times instead of pp - 1 stage-times at the start and the end.
  double plain = 0, interleaved = 0;
  const auto a = train_pipeline(config, one.initial, data, 2, PipelineSchedule::one_f_one_b,
                                DeviceType::sim, 2, 1, &plain);
  const auto b = train_pipeline(config, one.initial, data, 2, PipelineSchedule::interleaved,
                                DeviceType::sim, 2, 2, &interleaved);
  CHECK(a.first == b.first);
  CHECK(interleaved < plain);
  MESSAGE("sim time of 3 steps, gpt-nano x8 layers over 2 stages: 1F1B ", plain * 1e3,
          " ms, interleaved (2 chunks) ", interleaved * 1e3, " ms");

  test::check_error(
      [&] {
        train_pipeline(config, one.initial, data, 2, PipelineSchedule::interleaved, DeviceType::cpu,
                       1, 2);
      },
      {"micro-batches a multiple of them (got 1)"});
  test::check_error(
      [&] {
        train_pipeline(config, one.initial, data, 2, PipelineSchedule::one_f_one_b, DeviceType::cpu,
                       4, 2);
      },
      {"2 virtual stages need the interleaved schedule"});
}

TEST_CASE("pipeline: the forward-only pass (evaluation) gives the stage-less loss, no gradients") {
  models::GPTConfig config = models::gpt_config("gpt-nano");
  const Data data = make_data(config.vocab);
  manual_seed(5);
  models::GPT whole(config);
  double expected = 0;
  {
    autograd::NoGradGuard no_grad;
    expected = whole.loss(data.x[0], data.y[0]).item<double>();
  }
  std::mutex mutex;
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 4), [&](parallel::Communicator& world) {
    parallel::Mesh mesh(world, {.dp = 2, .pp = 2});
    const auto gpt =
        train::make_pipeline_model(config, mesh, whole.state_dict(), {.micro_batches = 2});
    const int64_t rows = kBatch / 2, first = mesh.dp_rank() * rows;
    const double loss =
        gpt->loss({data.x[0].narrow(0, first, rows), data.y[0].narrow(0, first, rows)});
    std::lock_guard lock(mutex);
    CHECK(loss == doctest::Approx(expected).epsilon(1e-6));
    for (const Tensor& p : gpt->module().parameters()) CHECK(!p.grad().defined());
  });
  test::check_error(
      [&] {
        parallel::run_ranks(
            parallel::devices_of(DeviceType::cpu, 1), [&](parallel::Communicator& world) {
              parallel::Mesh mesh(world, {});
              train::make_pipeline_model(config, mesh, whole.state_dict(), {.micro_batches = 3})
                  ->loss({data.x[0], data.y[0]});
            });
      },
      {"batch of 8 sequences does not split into 3 micro-batches"});
}

}  // namespace dlf
