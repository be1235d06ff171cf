// Data parallelism: every rank holds a replica of the module and a slice of the batch; their
// gradients are averaged so the replicas take the same optimizer step.
//
// Gradients travel in buckets (parameters in reverse order, about `bucket_bytes` each, as
// PyTorch's DDP does). The autograd engine says when a parameter's gradient is final; when a
// bucket's last one is, the bucket is flattened and allreduced on the communication stream
// while backward goes on — the overlap shows on the simulated clock and in the trace. Each
// gradient is then a view of its reduced bucket.
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
  /// Seconds the reductions of the last synchronize() spent on the communication stream, and
  /// how many of those the compute stream had to wait for (sim and meta devices).
  double comm_seconds() const;
  double exposed_comm_seconds() const;

 private:
  struct Reducer;
  std::shared_ptr<Reducer> reducer_;  // the hooks hold it weakly: they outlive this wrapper
};

}  // namespace dlf::parallel
