// What `dlf train` trains, per model family: one rank's part of the model, its share of each
// batch, the loss, the evaluation, and the whole state for checkpoints. The training loop
// (train.cpp) — schedule, clipping, optimizer, logging, checkpoints — is the same for all.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <dlf/nn/data/idx.h>
#include <dlf/nn/data/text_dataset.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/grad_norm.h>
#include <dlf/parallel/mesh.h>
#include <dlf/parallel/pipeline.h>

#include "run_config.h"

namespace dlf::app {

/// A task's score on held-out data.
struct Evaluation {
  double loss = 0;
  std::string metric;  ///< what `value` is ("accuracy"); empty: loss only
  double value = 0;
};

/// What every rank's task is built from.
struct TaskSetup {
  const RunConfig& run;
  parallel::Mesh& mesh;
  const nn::NamedTensors& initial;  ///< the whole model's state to start from
  int64_t micro_batch = 0;          ///< sequences per micro-batch (pipelines)
  parallel::PipelineSchedule schedule = parallel::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;                    ///< chunks of layers per pipeline rank
  int64_t bucket_bytes = int64_t(25) << 20;  ///< DDP's
  int64_t eval_batches = 4;                  ///< held-out batches per evaluation; 0: all of them
  int64_t first_step = 0;                    ///< where batches start (resume)
  /// activation recompute of every block (Module::recompute)
  autograd::Recompute recompute = autograd::Recompute::none;
  int zero =
      0;  ///< ZeRO stage: 2 reduce-scatters the gradients (DDP), 3 shards the parameters (FSDP)
  /// ZeRO-3's parameter shards in host memory (parallel::FSDPOptions::shards_on)
  bool offload_params = false;
  bool reduce_in_bf16 = false;  ///< the data-parallel gradient average crosses the wire in bf16
  bool compile = false;         ///< each rank's training step as one captured graph
};

class RankTask {
 public:
  virtual ~RankTask() = default;
  /// This rank's parameters, named as the whole model names them.
  virtual nn::NamedTensors named_parameters() const = 0;
  /// Forward and backward of this rank's share of the next training batch: afterwards every
  /// gradient is ready for the optimizer. The batch's mean loss, on every rank.
  virtual double forward_backward() = 0;
  /// Under --compile, what the captured step runs after backward, inside its graph (the
  /// training loop's clipping and optimizer update); set before the first step.
  virtual void set_after_backward(std::function<void()> after) = 0;
  /// How this rank's gradients add up to the global gradient norm (each parameter of the whole
  /// model counted once) over the model-parallel ranks; the data-parallel ones hold the same.
  virtual parallel::NormScope norm_scope() const = 0;
  /// The held-out score, the same on every rank (collective).
  virtual Evaluation evaluate() = 0;
  /// The whole model and optimizer state (by parameter name) on world rank 0, nothing on the
  /// others (collective).
  virtual std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole(
      const nn::NamedTensors& optimizer_state) = 0;
  /// This rank's share of a whole optimizer state by parameter name.
  virtual nn::NamedTensors shard_optimizer_state(const nn::NamedTensors& whole) const = 0;
  /// How the data-parallel wrapper lays the parameters out for a ZeroOptimizer, and what its
  /// collectives took on the simulated clock; null without one (a single replica).
  virtual parallel::ShardedParameters* shards() = 0;
  /// What one training step consumes ("8 x 256 tokens") and how many items that is.
  virtual std::string batch_description() const = 0;
  virtual double items_per_step() const = 0;
  virtual const char* item_unit() const = 0;  ///< "tok", "img"
};

/// The data a run reads, loaded once per process and shared by its ranks.
struct TaskData {
  std::optional<nn::data::TextDataset> text;          ///< GPT, BERT
  std::optional<nn::data::ImageDataset> train, test;  ///< ViT, UNet: Fashion-MNIST, prepared
};
TaskData load_task_data(const RunConfig& run);

/// The whole model a run starts from, initialised from the run's seed: its state dict.
nn::NamedTensors initial_state(const RunConfig& run);
/// The run's whole model holding `weights` (a state from a file): its state dict. Every tensor
/// must be given with the model's shape (a tied one under either name) and no other name; a
/// dlf::Error names the first that is not.
nn::NamedTensors state_from_weights(const RunConfig& run, const nn::NamedTensors& weights);
/// Parameters of the run's model (tied ones once), without building a big one.
int64_t parameter_count(const RunConfig& run);
/// The optimizer recipe of the run's family where the command line (`given`, "--warmup") says
/// nothing. GPT, BERT, UNet: nanoGPT's (the RunConfig defaults: decay 0.1, warmup 5 % of the
/// steps, cosine to lr / 10). ViT: the small-ViT recipe — decay 0.05, 100 warm-up steps, cosine
/// to 0 — with which vit-tiny learns Fashion-MNIST in one epoch as the peer does.
void apply_family_defaults(RunConfig& run, const std::set<std::string>& given);
/// AdamW's beta2: 0.999 (PyTorch's and timm's) for ViT, nanoGPT's 0.95 for the rest.
double adam_beta2(const std::string& model);
/// Held-out batches per evaluation when the command line gives none: the whole test set (0)
/// for the classifier, else 4.
int64_t default_eval_batches(const RunConfig& run);
/// Steps between evaluations when the command line gives none: an epoch for the classifier
/// (test accuracy each epoch), otherwise 0 (at the end only).
int64_t default_eval_every(const RunConfig& run, const TaskData& data);

/// The task of the run's model family.
std::unique_ptr<RankTask> make_task(const TaskSetup& setup, const TaskData& data);

}  // namespace dlf::app
