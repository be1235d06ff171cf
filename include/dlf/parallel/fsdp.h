// ZeRO-3 (Rajbhandari et al. 2020), as PyTorch's FSDP FULL_SHARD does it: every block of the
// module (Module::is_block: a transformer block, a BERT layer, a UNet resnet block) is a unit
// whose parameters are flattened and cut into one equal part per rank. A rank keeps only its
// part (the shard); the unit's whole parameters exist only while it runs: gathered (allgather)
// before its forward and freed after, gathered again when its output's gradient arrives in
// backward and freed once the unit's gradients are reduce-scattered into this rank's part.
// The parameters outside every block (embeddings, final norms, heads) form one more unit, the
// root (PyTorch FSDP's root module): unshard() gathers it before a forward — dlf's modules have
// no common forward to hook, so the caller says when one starts — and it stays whole until
// backward has reduce-scattered its gradients (or reshard(), after a forward with no
// backward). So between steps a rank holds its shards only: 1/N of the parameters, gradients
// and optimizer state (the ZeRO paper's 16Ψ/N in fp32). Parameters keep their tensors
// (storage released and materialized in place), so modules and saved tensors need no change.
// With a ZeroOptimizer over it, each rank updates its shards only.
//
// Communication overlaps compute, as FSDP's forward and backward prefetch do: when a block
// starts its forward, the allgather of the block the forward runs next (in the order the first
// forward ran them) starts on the communication stream; when backward reaches a block, the
// allgather of the block backward reaches next starts; the reduce-scatters of gradients run
// while backward goes on, and synchronize() waits for them. So two blocks are whole at a time.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>
#include <dlf/parallel/sharded_parameters.h>

namespace dlf::parallel {

/// How FullyShardedDataParallel runs.
struct FSDPOptions {
  /// backward passes per step (micro-batches) whose gradients accumulate before reduction
  int backward_passes = 1;
  bool reduce_in_bf16 = false;  ///< reduce-scatter the gradients in bf16 (as DDPOptions's)
  bool prefetch = true;         ///< start the next block's allgather early (see above)
  /// Parameters outside every block that each form a unit of their own, gathered with the
  /// root: a weight tied to a copy on another rank (see sum_tied_gradient()).
  std::vector<Tensor> own_units = {};
  /// ZeRO-Infinity's parameter offload: every unit's shard (its part of the parameters) is
  /// kept on this device, the host, and uploaded when the unit is gathered, on the host stream
  /// ahead of the allgather that needs it (a sim device: it overlaps compute as the gather
  /// does). With a ZeroOptimizer over an optimizer offloaded to the same host, the update runs
  /// on the shards in place.
  std::optional<Device> shards_on = std::nullopt;
};

/// ZeRO-3 over a communicator (see above); a ShardedParameters for the ZeroOptimizer.
class FullyShardedDataParallel : public ShardedParameters {
 public:
  /// Broadcasts rank 0's parameters and buffers, shards every block's parameters and frees
  /// their whole values. Every rank of `comm` constructs it with the same module structure.
  FullyShardedDataParallel(nn::Module& module, Communicator& comm, FSDPOptions options = {});
  ~FullyShardedDataParallel() override;
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  /// Before a forward (collective): gathers the root unit — what no block holds — and starts
  /// the first block's gather. Until then using those parameters is a dlf::Error.
  void unshard();
  /// Frees the root unit's whole parameters: after a forward that has no backward (an
  /// evaluation). Backward frees them itself once their gradients are reduced.
  void reshard();
  /// After backward: reduces what is left (units whose parameters got no gradient, with
  /// zeros) and waits for the reduce-scatters, so every rank holds its part of every gradient.
  /// Call before the optimizer step.
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
  void offload_gradients(Device host) override;

  struct State;

 private:
  std::shared_ptr<State> state_;  // the block hooks hold it weakly
};

}  // namespace dlf::parallel
