#include "task.h"

#include <dlf/models/registry.h>

#include "bert_task.h"
#include "gpt_task.h"
#include "model_io.h"

namespace dlf::app {

using models::ModelFamily;

TaskData load_task_data(const RunConfig& run) { return {.text = open_dataset(run)}; }

nn::NamedTensors initial_state(const RunConfig& run) {
  switch (models::model_family(run.model)) {
    case ModelFamily::gpt:
      return build_model(run)->state_dict();
    case ModelFamily::bert:
      manual_seed(run.seed);
      return models::BertForMaskedLM(models::bert_config(run.model)).state_dict();
  }
  return {};
}

int64_t parameter_count(const RunConfig& run) {
  switch (models::model_family(run.model)) {
    case ModelFamily::gpt:
      return models::gpt_parameter_count(models::gpt_config(run.model));
    case ModelFamily::bert:
      return models::BertForMaskedLM(models::bert_config(run.model)).num_parameters();
  }
  return 0;
}

int64_t default_batch(const std::string& model) {
  return models::model_family(model) == ModelFamily::bert ? 16 : 8;
}

std::unique_ptr<RankTask> make_task(const TaskSetup& setup, const TaskData& data) {
  switch (models::model_family(setup.run.model)) {
    case ModelFamily::gpt:
      return make_gpt_task(setup, *data.text);
    case ModelFamily::bert:
      return make_bert_task(setup, *data.text);
  }
  return nullptr;
}

}  // namespace dlf::app
