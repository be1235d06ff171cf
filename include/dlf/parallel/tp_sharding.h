// A whole model's state and its tensor-parallel shards: how each parameter is split over the
// tp group (a rule on its name), this rank's part of a whole tensor, and the whole again from
// the ranks' parts. Checkpoints hold whole tensors, so a run resumes under any tp.
#pragma once
#include <functional>
#include <string>

#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// How one parameter of the whole model is split over the tp group.
enum class Split {
  none,        ///< replicated: embeddings of a small vocabulary, LayerNorms, row-parallel biases
  rows,        ///< column-parallel weights and biases: dim 0 in n equal parts
  columns,     ///< row-parallel weights: dim 1 in n equal parts
  qkv_rows,    ///< a fused q | k | v projection: this rank's heads of q, of k and of v
  vocab_rows,  ///< a vocabulary-parallel table: ⌈V/n⌉ rows each, the last ranks zero-padded
};

/// A model's rule: the split of its parameter `name`.
using SplitRule = std::function<Split(const std::string& name)>;

/// This rank's part of `whole` (a parameter or optimizer state of the parameter's shape).
Tensor shard_of(Split split, const Tensor& whole, const Communicator& group);
/// The whole tensor from every rank's `shard` (collective over `group`); `vocab` is the whole's
/// row count for vocab_rows (the padding is dropped).
Tensor gather_of(Split split, const Tensor& shard, Communicator& group, int64_t vocab = 0);

/// Copies this rank's part of each parameter of `module` from `whole` (state_dict names).
/// dlf::Error names a parameter that `whole` lacks or whose part has another shape.
void load_shards(nn::Module& module, const nn::NamedTensors& whole, const SplitRule& rule,
                 const Communicator& group);
/// `module`'s state_dict whole (collective over `group`; rules without vocab_rows).
nn::NamedTensors gather_state_dict(const nn::Module& module, const SplitRule& rule,
                                   Communicator& group);
/// This rank's part of a whole optimizer state ("param.slot" names, and "step").
nn::NamedTensors shard_state(const nn::NamedTensors& whole, const SplitRule& rule,
                             const Communicator& group);
/// An optimizer state's parts whole again (collective over `group`; rules without vocab_rows).
nn::NamedTensors gather_state(const nn::NamedTensors& shards, const SplitRule& rule,
                              Communicator& group);

}  // namespace dlf::parallel
