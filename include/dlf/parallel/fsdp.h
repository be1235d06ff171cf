// ZeRO-3 (Rajbhandari et al. 2020), as PyTorch's FSDP FULL_SHARD does it: every block of the
// module (Module::is_block: a transformer block, a BERT layer, a UNet resnet block) is a unit
// whose parameters are flattened and cut into one equal part per rank. A rank keeps only its
// part (the shard); the unit's whole parameters exist only while it runs: gathered (allgather)
// before its forward and freed after, gathered again when its output's gradient arrives in
// backward and freed once the unit's gradients are reduce-scattered into this rank's part.
// The parameters outside every block (embeddings, final norms, heads) form one more unit that
// stays whole (its gradients and update are sharded, as ZeRO-2's). Parameters keep their
// tensors (storage released and materialized in place), so modules and saved tensors need no
// change. With a ZeroOptimizer over it, each rank updates its shards only.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>
#include <dlf/parallel/sharded_parameters.h>

namespace dlf::parallel {

/// ZeRO-3 over a communicator (see above); a ShardedParameters for the ZeroOptimizer.
class FullyShardedDataParallel : public ShardedParameters {
 public:
  /// Broadcasts rank 0's parameters and buffers, shards every block's parameters and frees
  /// their whole values. Every rank of `comm` constructs it with the same module structure.
  /// `backward_passes`: backward passes per step (micro-batches) whose gradients accumulate
  /// before they are reduced. `reduce_in_bf16`: the gradients are reduce-scattered in bf16
  /// (DDPOptions::reduce_in_bf16).
  FullyShardedDataParallel(nn::Module& module, Communicator& comm, int backward_passes = 1,
                           bool reduce_in_bf16 = false);
  ~FullyShardedDataParallel() override;
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  /// After backward: reduces what is left (units whose parameters got no gradient, with
  /// zeros) so every rank holds its part of every gradient. Call before the optimizer step.
  void synchronize();
  /// Every parameter whole (collective), to read them — a checkpoint, an evaluation outside
  /// the blocks' forward — until release_whole().
  void gather_whole();
  void release_whole();  ///< frees what gather_whole() gathered (the blocks' parameters)
  /// Copies of the tensors `read` gives while every parameter is whole (collective), where
  /// `keep` (the rank that saves); nothing elsewhere.
  nn::NamedTensors whole_copy(const std::function<nn::NamedTensors()>& read, bool keep);

  int num_buckets() const override;  ///< one per block, then the rest
  const std::vector<Tensor>& bucket_params(int b) const override;
  int64_t part_size(int b) const override;
  std::vector<OwnedPiece> owned_pieces() const override;
  Tensor piece_gradient(const OwnedPiece& piece) const override;
  bool whole_gradients() const override { return false; }
  void publish_updates(const std::vector<OwnedPiece>& mine) override;

  struct State;

 private:
  std::shared_ptr<State> state_;  // the block hooks hold it weakly
};

}  // namespace dlf::parallel
