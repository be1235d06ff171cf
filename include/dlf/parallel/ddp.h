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

namespace dlf::parallel {

struct DDPOptions {
  int64_t bucket_bytes = int64_t(25) << 20;  ///< PyTorch's default bucket_cap_mb = 25
  /// Backward passes per step (micro-batches) whose gradients accumulate before they are
  /// averaged: a bucket goes when its gradients are final in the last of them.
  int backward_passes = 1;
  /// ZeRO-2: each rank keeps only its part of each bucket's averaged gradient
  /// (gradient_part()); the parameters' own gradients are dropped once their bucket goes.
  bool shard_gradients = false;
};

/// The elements [begin, end) of a parameter (flattened) that lie in this rank's part of a
/// bucket, at `offset` in that part.
struct OwnedPiece {
  Tensor param;
  int bucket = 0;
  int64_t begin = 0, end = 0, offset = 0;
};

class DistributedDataParallel {
 public:
  /// Broadcasts rank 0's parameters and buffers, so every replica starts alike, and registers
  /// the gradient hooks.
  /// Every rank of `comm` must construct it, with the same module structure.
  DistributedDataParallel(nn::Module& module, Communicator& comm, DDPOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Finishes this backward's reductions (a bucket whose parameters got no gradient is reduced
  /// with zeros) and makes the compute stream wait for them. Call after backward(), before the
  /// optimizer step.
  void synchronize();

  int num_buckets() const;
  /// Bucket b's parameters, in the order they are flattened.
  const std::vector<Tensor>& bucket_params(int b) const;
  /// Elements of each rank's part of bucket b: its size padded to a multiple of the ranks,
  /// divided by them.
  int64_t part_size(int b) const;
  /// This rank's pieces of the parameters, bucket by bucket, in flattened order.
  std::vector<OwnedPiece> owned_pieces() const;
  bool shards_gradients() const;
  /// With shard_gradients, after synchronize(): this rank's part of bucket b's averaged
  /// gradient, [part_size(b)].
  const Tensor& gradient_part(int b) const;
  /// Seconds the reductions of the last synchronize() spent on the communication stream, and
  /// how many of those the compute stream had to wait for (sim and meta devices).
  double comm_seconds() const;
  double exposed_comm_seconds() const;

 private:
  struct Reducer;
  std::shared_ptr<Reducer> reducer_;  // the hooks hold it weakly: they outlive this wrapper
};

}  // namespace dlf::parallel
