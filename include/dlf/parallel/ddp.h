// Data parallelism: every rank holds a replica of the module and a slice of the batch; their
// gradients are averaged so the replicas take the same optimizer step.
//
// Gradients travel in buckets (parameters in reverse order, about `bucket_bytes` each, as
// PyTorch's DDP does). The autograd engine says when a parameter's gradient is final; when a
// bucket's last one is, the bucket is flattened and allreduced on the communication stream
// while backward goes on — the overlap shows on the simulated clock and in the trace. Each
// gradient is then a view of its reduced bucket.
//
// Under ZeRO (zero.h) each bucket, padded to a multiple of the ranks, is cut into one equal
// part per rank (Megatron-LM's distributed optimizer): rank r owns part r of every bucket —
// the pieces of parameters that fall in it. With shard_gradients (ZeRO-2) a bucket is
// reduce-scattered instead of allreduced: each rank gets its part of the average and the
// bucket's whole gradients are dropped.
#pragma once
#include <memory>

#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>
#include <dlf/parallel/sharded_parameters.h>

namespace dlf::parallel {

/// DDP's options.
struct DDPOptions {
  int64_t bucket_bytes = int64_t(25) << 20;  ///< PyTorch's default bucket_cap_mb = 25
  /// Backward passes per step (micro-batches) whose gradients accumulate before they are
  /// averaged: a bucket goes when its gradients are final in the last of them.
  int backward_passes = 1;
  /// ZeRO-2: each rank keeps only its part of each bucket's averaged gradient
  /// (gradient_part()); the parameters' own gradients are dropped once their bucket goes.
  bool shard_gradients = false;
  /// Gradients cross the wire in bf16 (PyTorch's bf16_compress_hook): half the bytes; each
  /// rank's share is summed in f32 and the average rounded to bf16 once, then widened back into
  /// the gradients' own dtype.
  bool reduce_in_bf16 = false;
  /// Parameters that each get a bucket of their own: a weight tied to a copy on another rank
  /// (see sum_tied_gradient()).
  std::vector<Tensor> own_buckets = {};
};

/// Data parallelism over a communicator (see above); a ShardedParameters for ZeRO-1 and -2.
class DistributedDataParallel : public ShardedParameters {
 public:
  /// Broadcasts rank 0's parameters and buffers, so every replica starts alike, and registers
  /// the gradient hooks.
  /// Every rank of `comm` must construct it, with the same module structure.
  DistributedDataParallel(nn::Module& module, Communicator& comm, DDPOptions options = {});
  ~DistributedDataParallel() override;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Finishes this backward's reductions (a bucket whose parameters got no gradient is reduced
  /// with zeros) and makes the compute stream wait for them. Call after backward(), before the
  /// optimizer step.
  void synchronize();

  // ShardedParameters: the buckets; a piece's value is a view of its parameter, its gradient
  // a view of the parameter's averaged gradient or (shard_gradients) of this rank's part of
  // the bucket's; publish_updates allgathers each bucket's parts into the parameters.
  int num_buckets() const override;  ///< buckets (none on one rank)
  const std::vector<Tensor>& bucket_params(int b) const override;
  int64_t part_size(int b) const override;
  std::vector<OwnedPiece> owned_pieces() const override;
  Tensor piece_gradient(const OwnedPiece& piece) const override;
  bool whole_gradients() const override;
  void publish_updates(const std::vector<OwnedPiece>& mine) override;
  void offload_gradients(Device host) override;

 private:
  struct Reducer;
  std::shared_ptr<Reducer> reducer_;  // the hooks hold it weakly: they outlive this wrapper
};

}  // namespace dlf::parallel
