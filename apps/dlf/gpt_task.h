// `dlf train --model gpt-*`: next-byte prediction on text, over any dp x tp x pp layout.
#pragma once
#include <memory>

#include <dlf/nn/data/text_dataset.h>

#include "task.h"

namespace dlf::app {

std::unique_ptr<RankTask> make_gpt_task(const TaskSetup& setup, const nn::data::TextDataset& data);

}  // namespace dlf::app
