// Tensor parallelism as Megatron-LM does it (Shoeybi et al. 2019): a column-parallel Linear
// splits its output features over the tp group, a row-parallel Linear its input features, so
// an MLP or an attention block needs one allreduce forward and one backward. The region
// functions are those collectives with their gradients (Megatron's f and g).
#pragma once
#include <dlf/nn/linear.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Megatron's f: x unchanged forward; backward, the gradient summed over the group.
Tensor copy_to_tp_region(const Tensor& x, Communicator& group);
/// Megatron's g: x summed over the group forward; backward, the gradient unchanged.
Tensor reduce_from_tp_region(const Tensor& x, Communicator& group);
/// The ranks' x concatenated along the last dim forward; backward, this rank's slice.
Tensor gather_from_tp_region(const Tensor& x, Communicator& group);

/// y = x Wᵀ + b with the output features split over `group`: this rank holds W's rows
/// [r·out/n, (r+1)·out/n) ([out/n, in]) and the matching bias, and returns its slice of y
/// (or all of y with gather_output). Initialised as nn::Linear(in, out) would be.
class ColumnParallelLinear : public nn::Linear {
 public:
  /// `out` split over `group` by rows (column parallelism).
  ColumnParallelLinear(int64_t in, int64_t out, Communicator& group, nn::LinearOptions options = {},
                       bool gather_output = false);
  /// The activation runs on this rank's columns.
  Tensor forward(const Tensor& x, Activation activation = Activation::none) const override;

 private:
  Communicator& group_;
  bool gather_output_;
};

/// y = x Wᵀ + b with the input features split over `group`: this rank holds W's columns
/// [r·in/n, (r+1)·in/n) ([out, in/n]) and the whole bias, takes its slice of x (a
/// column-parallel output) and returns all of y. Initialised as nn::Linear(in, out) would be;
/// the bias is replicated, so the group's ranks must draw it from the same seed.
class RowParallelLinear : public nn::Linear {
 public:
  /// `in` split over `group` by columns (row parallelism).
  RowParallelLinear(int64_t in, int64_t out, Communicator& group, nn::LinearOptions options = {});
  /// dlf::Error for an activation: it would have to follow the sum over the group.
  Tensor forward(const Tensor& x, Activation activation = Activation::none) const override;

 private:
  Communicator& group_;
};

/// Column- and row-parallel Linear layers over `group` for a model's nn::LinearMaker (a
/// transformer's heads and MLP split as Megatron-LM splits them). `group` must outlive them.
nn::LinearMaker megatron_linears(Communicator& group);

/// An embedding table with its rows (the vocabulary) split over `group`: this rank holds rows
/// [r·k, (r+1)·k) with k = ⌈V/n⌉, looks up the ids that fall there, and the ranks' partial
/// lookups are summed. Rows past V (padding, on the last ranks when n does not divide V) are
/// zero and never looked up. Initialised N(0, 1) as nn::Embedding.
class VocabParallelEmbedding : public nn::Module {
 public:
  /// `vocab` rows split over `group` (padded to divide).
  VocabParallelEmbedding(int64_t vocab, int64_t dim, Communicator& group, DType dtype = DType::f32);
  Tensor forward(const Tensor& indices) const;  ///< ids [...] -> [..., dim], summed over the group
  /// The first id this rank holds.
  int64_t first_row() const { return first_; }

  Tensor weight;  ///< this rank's rows

 private:
  Communicator& group_;
  int64_t first_;
};

/// Rows per rank when `vocab` rows are split over `ranks`: ⌈vocab / ranks⌉ (the last ranks pad).
int64_t vocab_shard_rows(int64_t vocab, int ranks);

/// Mean cross-entropy of logits split over `group` along the vocabulary (this rank's [N, k],
/// columns from r·k) against targets [N] of the whole vocabulary — without ever gathering the
/// logits: the max, the sum of exponentials and the target's logit are reduced over the group
/// (Megatron-LM's vocab-parallel cross-entropy). Columns at or past `vocab` (padding) take no
/// part; 0 means every column is a word.
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets,
                                    Communicator& group, int64_t vocab = 0);

}  // namespace dlf::parallel
