// The zoo's family records, each defined in its family's file.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/models/family.h>

namespace dlf::models {

const Family& gpt_family();
const Family& bert_family();
const Family& vit_family();
const Family& unet_family();
const Family& llama_family();

/// The GPT configs' names, in order.
std::vector<std::string> gpt_names();
/// Next-token prediction on the run's text (GPT's and Llama's task), sequences of `seq` tokens.
std::unique_ptr<Task> next_token_task(const TaskSetup& setup, int64_t seq);
/// A random next-token batch {x, y} for a model of `vocab` tokens and `context` positions
/// (batch 0: 8 rows, 4 past a byte vocabulary; seq 0: up to 256 tokens).
ExampleBatch next_token_batch(int64_t vocab, int64_t context, int64_t batch, int64_t seq,
                              Generator& gen);
/// A text family's data: the files of `paths` (the default corpus when empty).
TrainData text_data(const std::vector<std::string>& paths, double val_fraction);
/// The run's text as bytes; a dlf::Error for token shards, which `model` does not read.
const nn::data::TextDataset& byte_text(const TrainData& data, const std::string& model);

}  // namespace dlf::models
