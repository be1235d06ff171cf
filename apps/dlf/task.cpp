#include "task.h"

#include <dlf/models/registry.h>

#include "gpt_task.h"
#include "model_io.h"

namespace dlf::app {

TaskData load_task_data(const RunConfig& run) { return {.text = open_dataset(run)}; }

nn::NamedTensors initial_state(const RunConfig& run) { return build_model(run)->state_dict(); }

int64_t parameter_count(const RunConfig& run) {
  return models::gpt_parameter_count(models::gpt_config(run.model));
}

std::unique_ptr<RankTask> make_task(const TaskSetup& setup, const TaskData& data) {
  return make_gpt_task(setup, *data.text);
}

}  // namespace dlf::app
