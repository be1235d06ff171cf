// The zoo's family records, each defined in its family's file.
#pragma once
#include <string>
#include <vector>

#include <dlf/models/family.h>

namespace dlf::models {

const Family& gpt_family();
const Family& bert_family();
const Family& vit_family();
const Family& unet_family();

/// The GPT configs' names, in order.
std::vector<std::string> gpt_names();
/// A text family's data: the files of `paths` (the default corpus when empty).
TrainData text_data(const std::vector<std::string>& paths, double val_fraction);

}  // namespace dlf::models
