#include <dlf/device/sim_device.h>
#include <dlf/train/run.h>
#include <dlf/train/trainer.h>

#include <sstream>

#include "test_util.h"

namespace dlf {
namespace {

// The losses of `steps` steps of `run` over `layout` on `devices`, from the metrics the lead
// rank writes.
std::vector<double> losses_of(const train::RunConfig& run, parallel::Layout layout,
                              const std::vector<Device>& devices, train::PartOptions part = {}) {
  const models::Family& family = models::family_of(run.model);
  const models::TrainData data = train::load_data(run);
  const nn::NamedTensors initial = train::initial_state(run);
  std::ostringstream metrics;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    train::train_rank(world, {.run = run,
                              .family = family,
                              .layout = layout,
                              .part = part,
                              .data = data,
                              .initial = initial,
                              .evaluate = false,
                              .metrics = &metrics});
  });
  std::vector<double> losses;
  std::istringstream lines(metrics.str());
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("\"loss\":");
    if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 7)));
  }
  return losses;
}

// A run of `steps` steps of `batch` sequences (or images) of `seq` tokens.
train::RunConfig run_of(const std::string& model, int64_t steps, int64_t batch, int64_t seq = 0) {
  train::RunConfig run;
  run.model = model;
  run.steps = steps;
  run.batch = batch;
  run.seq = seq;
  return run;
}

std::vector<Device> sim_devices(int n) {
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, n);
  for (Device d : devices) {
    sim::configure(d, sim_preset("a100-40gb"));
    sim::reset(d);
  }
  return devices;
}

}  // namespace

TEST_CASE("trainer: every family trains under a mesh on sim devices as on one device") {
  struct Case {
    std::string model;
    parallel::Layout layout;
  };
  for (const Case& c : {Case{"gpt-nano", {.dp = 2, .tp = 2}}, Case{"gpt-nano", {.pp = 2}},
                        Case{"bert-tiny", {.dp = 2, .tp = 2}}, Case{"unet-tiny", {.dp = 2}}}) {
    CAPTURE(c.model);
    CAPTURE(c.layout.devices());
    train::RunConfig run = run_of(c.model, 3, 4, 32);
    train::apply_recipe(run, {});
    const std::vector<double> one = losses_of(run, {}, {kCPU});
    const std::vector<double> mesh = losses_of(run, c.layout, sim_devices(c.layout.devices()));
    REQUIRE(one.size() == 3);
    REQUIRE(mesh.size() == 3);
    for (size_t s = 0; s < one.size(); ++s) CHECK(mesh[s] == doctest::Approx(one[s]).epsilon(1e-5));
  }
}

TEST_CASE("trainer: graph mode and ZeRO-1 train as eager does") {
  const train::RunConfig run = run_of("gpt-nano", 3, 4, 32);
  const std::vector<double> eager = losses_of(run, {.dp = 2}, {kCPU, kCPU});
  const std::vector<double> compiled =
      losses_of(run, {.dp = 2}, {kCPU, kCPU}, {.zero = 1, .compile = true});
  REQUIRE(eager.size() == 3);
  REQUIRE(compiled.size() == 3);
  for (size_t s = 0; s < eager.size(); ++s)
    CHECK(compiled[s] == doctest::Approx(eager[s]).epsilon(1e-5));
}

TEST_CASE("trainer: a layout the family does not run is refused by name") {
  train::RunConfig run = run_of("unet-tiny", 1, 4);
  test::check_error(
      [&] {
        losses_of(run, {.tp = 2}, {kCPU, kCPU});
      },
      {"unet-tiny trains data-parallel only"});
  run.model = "bert-tiny";
  test::check_error(
      [&] {
        losses_of(run, {.pp = 2}, {kCPU, kCPU});
      },
      {"bert-tiny has no pipeline stages"});
}

}  // namespace dlf
