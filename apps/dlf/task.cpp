#include "task.h"

#include <dlf/models/registry.h>

#include <algorithm>

#include "bert_task.h"
#include "gpt_task.h"
#include "image_tasks.h"
#include "model_io.h"

namespace dlf::app {

using models::ModelFamily;

TaskData load_task_data(const RunConfig& run) {
  const ModelFamily family = models::model_family(run.model);
  TaskData data;
  if (family == ModelFamily::gpt || family == ModelFamily::bert) {
    data.text = open_dataset(run);
  } else {
    data.train = prepared_images(family == ModelFamily::vit, true, run);
    data.test = prepared_images(family == ModelFamily::vit, false, run);
  }
  return data;
}

namespace {

// The run's model, initialised from its seed (all but the GPTs, which can be too big to build
// for a count).
std::unique_ptr<nn::Module> build_small(const RunConfig& run) {
  manual_seed(run.seed);
  switch (models::model_family(run.model)) {
    case ModelFamily::bert:
      return std::make_unique<models::BertForMaskedLM>(models::bert_config(run.model));
    case ModelFamily::vit:
      return std::make_unique<models::VisionTransformer>(models::vit_config(run.model));
    case ModelFamily::unet:
      return std::make_unique<models::UNet>(models::unet_config(run.model));
    case ModelFamily::gpt:
      break;
  }
  return build_model(run);
}

}  // namespace

nn::NamedTensors initial_state(const RunConfig& run) { return build_small(run)->state_dict(); }

nn::NamedTensors state_from_weights(const RunConfig& run, const nn::NamedTensors& weights) {
  std::unique_ptr<nn::Module> model;
  {
    DefaultDeviceGuard meta(kMeta);  // shapes only: the weights give the values
    model = build_small(run);
  }
  model->to_empty(kCPU);
  try {
    model->load_state_dict(weights);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the weights are not " + run.model + "'s)");
  }
  return model->state_dict();
}

int64_t parameter_count(const RunConfig& run) {
  if (models::model_family(run.model) == ModelFamily::gpt)
    return models::gpt_parameter_count(models::gpt_config(run.model));
  return build_small(run)->num_parameters();
}

void apply_family_defaults(RunConfig& run, const std::set<std::string>& given) {
  if (models::model_family(run.model) != ModelFamily::vit) return;
  if (!given.contains("--weight-decay")) run.weight_decay = 0.05;
  if (!given.contains("--warmup")) run.warmup = std::min<int64_t>(100, run.steps - 1);
  if (!given.contains("--min-lr")) run.min_lr = 0;
}

double adam_beta2(const std::string& model) {
  return models::model_family(model) == ModelFamily::vit ? 0.999 : 0.95;
}

int64_t default_eval_batches(const RunConfig& run) {
  return models::model_family(run.model) == ModelFamily::vit ? 0 : 4;
}

int64_t default_eval_every(const RunConfig& run, const TaskData& data) {
  if (models::model_family(run.model) != ModelFamily::vit) return 0;
  return data.train->images.size(0) / run.batch;
}

std::unique_ptr<RankTask> make_task(const TaskSetup& setup, const TaskData& data) {
  switch (models::model_family(setup.run.model)) {
    case ModelFamily::gpt:
      return make_gpt_task(setup, *data.text);
    case ModelFamily::bert:
      return make_bert_task(setup, *data.text);
    case ModelFamily::vit:
      return make_vit_task(setup, *data.train, *data.test);
    case ModelFamily::unet:
      return make_unet_task(setup, *data.train, *data.test);
  }
  return nullptr;
}

}  // namespace dlf::app
