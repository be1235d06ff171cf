// One rank's training step: its part of the model (RankModel) with AdamW — its state sharded
// over the replicas under ZeRO, or offloaded to the host — the gradients' norm clipped over
// every rank that holds a part of the model, the step under the run's mixed precision, and
// under graph mode the clipping and update captured inside the model's step. What `dlf train`,
// `dlf plan` and a library user's training loop run.
#pragma once
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/zero.h>
#include <dlf/train/rank_model.h>

namespace dlf::train {

/// How a rank's step runs beyond its part of the model.
struct StepOptions {
  PartOptions part = {};  ///< the rank's part of the model
  /// AdamW's (weight decay on matrices and embeddings only)
  nn::optim::AdamWOptions adamw = {.lr = 1e-3, .beta2 = 0.95, .weight_decay = 0.1};
  double grad_clip = 1.0;  ///< the global gradient norm clipped to this
  /// The optimizer state and its update in host memory (ZeRO-Offload): for sim devices.
  bool offload_optimizer = false;
  DType precision = DType::f32;  ///< bf16: the step under autocast (AutocastGuard)
};

/// One rank's training step (see above). Every rank of the mesh makes the same calls.
class RankStep {
 public:
  /// `model`'s parameters under AdamW (decay on matrices and embeddings), sharded over the
  /// mesh's replicas when `options.part.zero` > 0 and there are several.
  RankStep(std::unique_ptr<RankModel> model, parallel::Mesh& mesh, const StepOptions& options);

  /// What forward_backward() found: the global batch's mean loss and the gradients' global
  /// norm before clipping, on every rank.
  struct Result {
    double loss = 0;       ///< the global batch's mean
    double grad_norm = 0;  ///< before clipping
  };
  /// Forward and backward of this replica's rows `batch` (on the host), the gradients reduced
  /// and clipped. Under graph mode with a capturable optimizer the update ran inside the step;
  /// otherwise update() applies it: a caller checks the result before.
  Result forward_backward(const std::vector<Tensor>& batch);
  /// The gradients' global norm, and every gradient scaled to the clip if above it (what
  /// forward_backward() does after the model's step; on a meta device the norm is unknown and
  /// taken as above: parallel::squares_on_host). Not under graph mode, where the step clips.
  double clip_gradients();
  /// The optimizer's update of the last forward_backward() (nothing when it ran inside it).
  void update();
  /// forward_backward() of a step whose update runs inside its graph (update_in_graph())
  /// without reading a value on the host: what a planner runs on a meta device.
  void run_captured(const std::vector<Tensor>& batch);
  /// Drops the gradients (before an evaluation or a save: the bytes are needed).
  void zero_grad() { optimizer_.zero_grad(); }

  /// The whole model and the whole optimizer state (by parameter name), gathered onto world
  /// rank 0; the other ranks get nothing (collective).
  std::pair<nn::NamedTensors, nn::NamedTensors> gather_whole();
  /// Takes this rank's share of a whole optimizer state by parameter name (what gather_whole()
  /// gave, as a checkpoint keeps it).
  void load_optimizer_state(const nn::NamedTensors& whole);
  /// The family's score of the model, under the step's precision (collective).
  models::Evaluation evaluate(const models::Task& task);

  RankModel& model() { return *model_; }                ///< the rank's part of the model
  nn::optim::AdamW& optimizer() { return optimizer_; }  ///< its optimizer (ZeRO's: unsharded)
  /// This rank's parameters, by name.
  const nn::NamedTensors& parameters() const { return params_; }
  /// Whether the update runs inside the captured step.
  bool update_in_graph() const { return update_in_graph_; }

 private:
  std::unique_ptr<RankModel> model_;
  parallel::Mesh& mesh_;
  StepOptions options_;
  nn::NamedTensors params_;
  std::vector<Tensor> tensors_;
  parallel::NormScope norm_scope_;
  nn::optim::AdamW optimizer_;
  std::optional<parallel::ZeroOptimizer> zero_;  // the optimizer state sharded over dp
  std::optional<DType> autocast_;                // autocast_for(the precision, the rank's device)
  // The optimizer's state made once, and its step's learning rate and count set: before a
  // captured step.
  void begin_captured_step();

  bool update_in_graph_ = false;
  bool state_made_ = false;  // the optimizer state a captured update updates
  Tensor norm_out_;          // the norm the captured step computed
};

}  // namespace dlf::train
