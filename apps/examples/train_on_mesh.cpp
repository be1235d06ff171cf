// Training a zoo model under a layout with the library alone (dlf::train): a model of the zoo
// on four simulated A100s as two data-parallel replicas of two tensor-parallel ranks each, on
// its family's own data with its family's recipe. What `dlf train --dp 2 --tp 2` runs.
//
//   example_train_on_mesh [MODEL] [STEPS]     (default: gpt-nano, 20 steps)
#include <cstdio>
#include <string>

#include <dlf/dlf.h>

using namespace dlf;

int main(int argc, char** argv) {
  try {
    train::RunConfig run;
    run.model = argc > 1 ? argv[1] : "gpt-nano";
    run.steps = argc > 2 ? std::stoll(argv[2]) : 20;
    const models::Family& family = models::family_of(run.model);
    run.batch = family.default_batch(run.model);
    train::apply_recipe(run, {});
    const models::TrainData data = train::load_data(run);
    const nn::NamedTensors initial = train::initial_state(run);

    std::vector<Device> devices = parallel::devices_of(DeviceType::sim, 4);
    for (Device d : devices) sim::configure(d, sim_preset("a100-40gb"));
    parallel::run_ranks(devices, [&](parallel::Communicator& world) {
      const train::TrainResult r = train::train_rank(
          world, {.run = run,
                  .family = family,
                  .layout = {.dp = 2, .tp = 2},
                  .data = data,
                  .initial = initial,
                  .parameters = train::parameter_count(run.model)});
      if (world.rank() == 0)
        std::printf("%s: loss %.4f after %lld steps\n", run.model.c_str(), r.loss,
                    static_cast<long long>(r.steps));
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_train_on_mesh: %s\n", e.what());
    return 1;
  }
  return 0;
}
