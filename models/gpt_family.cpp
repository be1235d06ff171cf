// The GPT family: next-byte prediction on text, in pipeline stages over any dp x tp x pp mesh.
#include <dlf/core/factory.h>
#include <dlf/models/family.h>
#include <dlf/models/gpt.h>
#include <dlf/models/gpt_names.h>
#include <dlf/models/registry.h>

#include <algorithm>

#include "families.h"

namespace dlf::models {
namespace {

using nn::data::Split;
using nn::data::TextBatch;

// Next-token prediction on the run's text or token shards, sequences of `seq` tokens (GPT's
// and Llama's). From shards, each replica reads only its own rows.
class NextTokenTask final : public Task {
 public:
  NextTokenTask(const TaskSetup& s, int64_t seq)
      : data_(s.data),
        batch_(s.batch),
        seq_(seq),
        rows_(s.batch / s.replicas),
        row0_(s.replica * rows_),
        seed_(s.seed),
        eval_batches_(s.eval_batches) {}

  std::vector<Tensor> batch(int64_t step) const override {
    if (data_.tokens) return whole(data_.tokens->sample(step, batch_, seq_, seed_, row0_, rows_));
    return mine(data_.text->sample(Split::train, step, batch_, seq_, seed_));
  }
  Evaluation evaluate(const EvalModel& model) const override {
    double total = 0;
    for (int64_t i = 0; i < eval_batches_; ++i)
      total += model.loss(data_.tokens ? whole(data_.tokens->window(i, batch_, seq_, row0_, rows_))
                                       : mine(data_.text->window(Split::val, i, batch_, seq_)));
    return {.loss = total / double(eval_batches_)};
  }
  std::string batch_description() const override {
    return std::to_string(batch_) + " x " + std::to_string(seq_) + " tokens";
  }
  double items_per_step() const override { return double(batch_ * seq_); }

 private:
  static std::vector<Tensor> whole(const TextBatch& b) { return {b.x, b.y}; }
  // This replica's rows of a batch.
  std::vector<Tensor> mine(const TextBatch& b) const {
    if (rows_ == batch_) return whole(b);
    return {b.x.narrow(0, row0_, rows_).contiguous(), b.y.narrow(0, row0_, rows_).contiguous()};
  }

  const TrainData& data_;
  int64_t batch_, seq_, rows_, row0_;
  uint64_t seed_;
  int64_t eval_batches_;
};

}  // namespace

std::unique_ptr<Task> next_token_task(const TaskSetup& setup, int64_t seq) {
  return std::make_unique<NextTokenTask>(setup, seq);
}

ExampleBatch next_token_batch(int64_t vocab, int64_t context, int64_t batch, int64_t seq,
                              Generator& gen) {
  const bool small_batch = vocab > 256;  // the peer's gpt-small runs 4 x 256
  const int64_t B = batch ? batch : (small_batch ? 4 : 8);
  const int64_t T = seq ? seq : std::min<int64_t>(context, 256);
  const Tensor x = randint(0, vocab, {B, T}, {.dtype = DType::i64}, &gen);
  const Tensor y = randint(0, vocab, {B, T}, {.dtype = DType::i64}, &gen);
  return {{x, y}, T};
}

ExampleBatch gpt_batch(const GPTConfig& config, int64_t batch, int64_t seq, Generator& gen) {
  return next_token_batch(config.vocab, config.context, batch, seq, gen);
}

TrainData text_data(const std::vector<std::string>& paths, double val_fraction) {
  if (paths.size() == 1 && nn::data::TokenShards::is_shard_folder(paths[0]))
    return {.tokens = nn::data::TokenShards(paths[0], val_fraction)};
  return {.text = nn::data::TextDataset(paths.empty() ? nn::data::default_corpus_paths() : paths,
                                        val_fraction)};
}

const nn::data::TextDataset& byte_text(const TrainData& data, const std::string& model) {
  DLF_CHECK(data.text, model,
            " trains on text as bytes, not on token shards: give --data text "
            "files or folders");
  return *data.text;
}

const Family& gpt_family() {
  static const Family family{
      .name = "gpt",
      .models = gpt_names(),
      .unit = "tok",
      .generates = Generates::text,
      .build =
          [](const std::string& name, const BuildOptions& o) {
            DLF_CHECK(!o.linears, name, "'s layers are its own: a GPT is sharded in its stages");
            return std::unique_ptr<nn::Module>(
                std::make_unique<GPT>(gpt_family().gpt(name, o.vocab)));
          },
      .gpt =
          [](const std::string& name, int64_t vocab) {
            GPTConfig c = gpt_config(name);
            if (vocab > 0) c.vocab = vocab;
            return c;
          },
      .hf = {.model_class = "GPT2Model",
             .to_hf = gpt_to_hf,
             .from_hf = gpt_from_hf,
             .recognises = is_hf_gpt},
      .load_data = text_data,
      .loss =
          [](const nn::Module& model, const std::vector<Tensor>& b) {
            return static_cast<const GPT&>(model).loss(b[0], b[1]);
          },
      .task =
          [](const TaskSetup& s) {
            return next_token_task(s, gpt_family().sequence(s.model, s.seq));
          },
      .example_batch = [](const std::string& name, int64_t batch, int64_t seq,
                          Generator& gen) { return gpt_batch(gpt_config(name), batch, seq, gen); },
      // Megatron-LM's batches for the planning sizes (Narayanan et al. 2021, table 1): 1536
      // sequences for GPT-3 175B, 3072 for the 1T GPT.
      .default_batch = [](const std::string& name) -> int64_t {
        return name == "gpt3-175b" ? 1536 : name == "gpt-1t" ? 3072 : 8;
      },
      .sequence =
          [](const std::string& name, int64_t seq) {
            const int64_t context = gpt_config(name).context;
            DLF_CHECK(seq <= context, "--seq ", seq, " is longer than ", name, "'s context of ",
                      context, " tokens");
            return seq > 0 ? seq : context;
          },
  };
  return family;
}

}  // namespace dlf::models
