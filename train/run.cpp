#include <dlf/core/random.h>
#include <dlf/device/device.h>
#include <dlf/train/run.h>

#include <algorithm>

namespace dlf::train {
namespace {

// The run's model, initialised from its seed, on the default device.
std::unique_ptr<nn::Module> build(const RunConfig& run) {
  manual_seed(run.seed);
  return models::family_of(run.model).build(run.model, {});
}

}  // namespace

void apply_recipe(RunConfig& run, const std::set<std::string>& given) {
  const models::Recipe& r = models::family_of(run.model).recipe;
  if (!given.contains("--weight-decay")) run.weight_decay = r.weight_decay;
  if (!given.contains("--warmup") && r.warmup > 0)
    run.warmup = std::min<int64_t>(r.warmup, run.steps - 1);
  if (!given.contains("--min-lr")) {
    if (r.min_lr_share >= 0) run.min_lr = r.min_lr_share * run.lr;
    if (run.min_lr > run.lr) run.min_lr = run.lr / 10;
  }
  DLF_CHECK(run.min_lr <= run.lr, "--min-lr ", run.min_lr, " is above --lr ", run.lr,
            ": the cosine decays from --lr down to --min-lr");
}

models::TrainData load_data(const RunConfig& run) {
  return models::family_of(run.model).load_data(run.data, run.val_fraction);
}

int64_t default_eval_every(const RunConfig& run, const models::TrainData& data) {
  if (models::family_of(run.model).recipe.eval_every >= 0)
    return models::family_of(run.model).recipe.eval_every;
  return data.train->images.size(0) / run.batch;  // an epoch
}

nn::NamedTensors initial_state(const RunConfig& run) { return build(run)->state_dict(); }

nn::NamedTensors state_from_weights(const RunConfig& run, const nn::NamedTensors& weights) {
  std::unique_ptr<nn::Module> model;
  {
    DefaultDeviceGuard meta(kMeta);  // shapes only: the weights give the values
    model = build(run);
  }
  model->to_empty(kCPU);
  try {
    model->load_state_dict(weights);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the weights are not " + run.model + "'s)");
  }
  return model->state_dict();
}

int64_t parameter_count(const std::string& model) {
  DefaultDeviceGuard meta(kMeta);
  return models::family_of(model).build(model, {})->num_parameters();
}

}  // namespace dlf::train
