// A model family described once, as an OpDef describes an op: its models, how one is built,
// the data it trains on, its batches, loss and evaluation, its default batch and optimizer
// recipe, and what generating with it means. The training floor (dlf/train) runs any family
// under any layout from this record alone; adding a family is its model file, its record and
// its tests.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/models/gpt.h>
#include <dlf/nn/data/idx.h>
#include <dlf/nn/data/text_dataset.h>
#include <dlf/nn/data/token_stream.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/tp_sharding.h>

namespace dlf::models {

/// A model's score on held-out data.
struct Evaluation {
  double loss = 0;          ///< the mean loss
  std::string metric = {};  ///< what `value` is ("accuracy"); empty: the loss alone
  double value = 0;         ///< the metric's
};

/// The data of a run, loaded once per process and shared by its ranks.
struct TrainData {
  std::optional<nn::data::TextDataset> text = {};    ///< text families: bytes, or
  std::optional<nn::data::TokenShards> tokens = {};  ///< next-token families: token shards
  /// image families' training and test images
  ///@{
  std::optional<nn::data::ImageDataset> train = {}, test = {};
  ///@}
};

/// What a family's task reads of a run, and where this rank's replica stands in it.
struct TaskSetup {
  std::string model;      ///< a registered name
  const TrainData& data;  ///< loaded by the family's load_data
  int64_t batch = 0;      ///< the global batch, in sequences or images
  int64_t seq = 0;        ///< tokens a sequence (0: the family's default)
  uint64_t seed = 0;      ///< of the batches (and of the initialisation)
  /// data-parallel ranks, and this one's
  ///@{
  int replicas = 1, replica = 0;
  ///@}
  /// held-out batches an evaluation takes (0: the whole test set, where the family has one)
  int64_t eval_batches = 0;
  int64_t first_step = 0;  ///< where training batches start (resume)
  /// told how far an evaluation got (images done, of how many), on one rank; may be empty
  std::function<void(int64_t done, int64_t total)> eval_progress = {};
};

/// The model an evaluation scores, as a rank holds it.
struct EvalModel {
  /// This replica's whole module, or null when a pipeline holds it in stages.
  const nn::Module* module = nullptr;
  /// The mean loss of a batch of the family's form (its replica's rows, on the host) without
  /// gradients, averaged over the replicas, on every rank.
  std::function<double(const std::vector<Tensor>& batch)> loss = {};
  /// `value` averaged over the data-parallel replicas (collective).
  std::function<double(double value)> average = {};
  Device device = kCPU;  ///< where the model is
};

/// A family's training task on one replica: its rows of each batch, and its score.
class Task {
 public:
  virtual ~Task() = default;
  /// This replica's rows of training batch `step`, on the host, in the form the family's loss
  /// takes. A function of the run's seed and `step` alone (a resumed run draws what the
  /// uninterrupted one would have), safe to call from a prefetching thread.
  virtual std::vector<Tensor> batch(int64_t step) const = 0;
  /// The held-out score (collective over the replicas).
  virtual Evaluation evaluate(const EvalModel& model) const = 0;
  /// What one training step consumes ("8 x 256 tokens") and how many items that is.
  virtual std::string batch_description() const = 0;
  virtual double items_per_step() const = 0;  ///< tokens or images a step
};

/// What a family's model is built with besides its name.
struct BuildOptions {
  /// Makes its Linear layers (one tensor-parallel rank's shards, where the family has a rule);
  /// empty: whole layers.
  nn::LinearMaker linears = {};
  /// Tokens it embeds and predicts, its tokenizer's (dlf train --tokenizer); 0: the model's own.
  /// A family without a vocabulary refuses one.
  int64_t vocab = 0;
};

/// A random batch of a family's form (Family::example_batch).
struct ExampleBatch {
  std::vector<Tensor> batch;  ///< on the host
  int64_t seq = 0;            ///< a row's length: tokens, patches + 1 (ViT), pixels (UNet)
};

/// The optimizer recipe of a family (AdamW, warmup then cosine).
struct Recipe {
  double weight_decay = 0.1;  ///< of matrices and embeddings
  /// warmup steps; 0: 5 % of the run
  int64_t warmup = 0;
  /// the cosine's end as a share of the peak lr; -1: lr / 10 (nanoGPT's)
  double min_lr_share = -1;
  double beta2 = 0.95;  ///< AdamW's second moment's decay
  /// steps between evaluations: -1 an epoch of the training set, 0 at the end only
  int64_t eval_every = 0;
};

/// What `dlf generate` makes with a family's model.
enum class Generates {
  text,          ///< continues a prompt (a language model)
  filled_masks,  ///< fills a prompt's masks
  images,        ///< samples images
  nothing,       ///< (a classifier)
};

/// A family's weights under the names and layout of Hugging Face's class for it.
struct HfLayout {
  std::string model_class;  ///< Hugging Face's class ("GPT2Model", "LlamaForCausalLM")
  /// A whole state in dlf's names to Hugging Face's layout.
  std::function<nn::NamedTensors(const nn::NamedTensors& state)> to_hf;
  /// A state in Hugging Face's layout (as its files hold it) to dlf's names.
  std::function<nn::NamedTensors(const nn::NamedTensors& state)> from_hf;
  /// Whether a state is in this layout (one that from_hf reads).
  std::function<bool(const nn::NamedTensors& state)> recognises;
};

/// One model family.
struct Family {
  std::string name;                          ///< "gpt"
  std::vector<std::string> models;           ///< its registered names, smallest first
  std::string unit;                          ///< what a batch holds: "tok" or "img"
  Generates generates = Generates::nothing;  ///< what `dlf generate` makes
  Recipe recipe = {};                        ///< its optimizer's
  /// Held-out batches an evaluation takes by default (0: the whole test set).
  int64_t eval_batches = 4;
  /// The model `name` on the default device (initialised from the default generator), built as
  /// `options` say: its Linear layers, and its vocabulary following a tokenizer's.
  std::function<std::unique_ptr<nn::Module>(const std::string& name, const BuildOptions& options)>
      build;
  /// How each parameter splits over a tensor-parallel group; empty: data-parallel only (or,
  /// with `gpt`, the GPT's own sharding).
  parallel::SplitRule tp_split = {};
  /// A GPT's configuration, with `vocab` tokens (0: the model's own): the family runs in
  /// pipeline stages (models::ParallelGPT).
  std::function<GPTConfig(const std::string& name, int64_t vocab)> gpt = {};
  /// Its weights in Hugging Face's layout (`dlf convert --names hf`); no functions: none.
  HfLayout hf = {};
  /// The run's data: text or Fashion-MNIST as the family takes it. `paths` empty: the default.
  std::function<TrainData(const std::vector<std::string>& paths, double val_fraction)> load_data;
  /// The loss of a whole model built by `build` on a batch of the family's form (on its
  /// device), whose mean over the replicas is the global batch's mean loss.
  std::function<Tensor(const nn::Module& model, const std::vector<Tensor>& batch)> loss;
  /// The family's task on one replica (its batches and evaluation).
  std::function<std::unique_ptr<Task>(const TaskSetup& setup)> task;
  /// A random batch for model `name` of `batch` rows (0: the benchmarks') and `seq` tokens
  /// (0: the benchmarks'), in the form `loss` takes, drawn from `gen` on the host: what
  /// benchmarks, graph captures and planners run. Its rows' length in `seq` (tokens, patches
  /// + 1, pixels).
  std::function<ExampleBatch(const std::string& name, int64_t batch, int64_t seq, Generator& gen)>
      example_batch;
  /// dlf train's global batch for model `name` when the run gives none.
  std::function<int64_t(const std::string& name)> default_batch;
  /// Tokens a sequence of model `name` at the run's `seq` (0: the family's default); 0 for a
  /// family without sequences.
  std::function<int64_t(const std::string& name, int64_t seq)> sequence;
};

/// A random batch of a GPT of `config` (one of the zoo's, or one by its dimensions), as the GPT
/// family's example_batch draws it.
ExampleBatch gpt_batch(const GPTConfig& config, int64_t batch, int64_t seq, Generator& gen);

/// Every family, GPT first.
const std::vector<Family>& families();
/// The family named `name` ("gpt"); a dlf::Error lists the families otherwise.
const Family& family(const std::string& name);
/// The family of model `name`; a dlf::Error lists the known names otherwise.
const Family& family_of(const std::string& name);
/// The family whose Hugging Face layout `state` is in (HfLayout::recognises), or null.
const Family* family_of_hf_state(const nn::NamedTensors& state);

}  // namespace dlf::models
