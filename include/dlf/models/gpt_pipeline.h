// One pipeline stage of a GPT: an equal share of the blocks (named by their place in the whole
// model, transformer.h.{i}), the embeddings on the first stage, ln_f and the head on the last.
// The head is tied to wte: the last stage keeps its own copy under the name lm_head.weight,
// and tie_gradients() sums the two copies' gradients, as Megatron-LM does.
#pragma once
#include <memory>
#include <vector>

#include <dlf/models/gpt.h>
#include <dlf/parallel/communicator.h>

namespace dlf::models {

class GPTStage : public nn::Module {
 public:
  /// Stage `stage` of `stages`; dlf::Error when the layers do not split evenly.
  GPTStage(const GPTConfig& config, int stage, int stages);
  /// The first stage embeds idx [B, T] (x undefined); the others continue x [B, T, C]. The
  /// last stage returns the mean loss against targets [B, T], the others their activations.
  Tensor forward(const Tensor& x, const Tensor& idx, const Tensor& targets) const;
  /// Copies its parameters from a whole GPT's state_dict, by name (the embeddings, ln_f and
  /// the head start uninitialised: load them before training).
  void load_from(const nn::NamedTensors& whole);
  /// Sums wte's gradient on the first stage and lm_head's on the last over `pp` (collective
  /// for every stage; a no-op with one stage). The first call makes the two ends' group.
  void tie_gradients(parallel::Communicator& pp);

  bool first, last;
  Tensor wte, wpe, head, ln_f_weight, ln_f_bias;  ///< undefined where the stage has none
  std::vector<std::shared_ptr<nn::TransformerBlock>> blocks;

 private:
  GPTConfig config_;
  std::unique_ptr<parallel::Communicator> ends_;  // the first and last stage
};

}  // namespace dlf::models
