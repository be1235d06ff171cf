// ZeRO stage 1 (Rajbhandari et al. 2020), the way PyTorch's ZeroRedundancyOptimizer does it:
// the optimizer state is sharded over the data-parallel ranks. Each rank owns whole parameters
// (balanced by size), keeps state for those only and updates them; then one allgather brings
// every rank the others' updated parameters (each rank's share flattened and padded to the
// largest). With DDP's averaged gradients the result is the unsharded optimizer's, bit for
// bit, while each rank holds 1/N of the state and does 1/N of the update.
#pragma once
#include <map>
#include <vector>

#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

class ZeroOptimizer {
 public:
  /// Shards `optimizer` (whose state must still be empty or loaded through this wrapper) over
  /// the ranks of `comm`. Every rank constructs it with the same parameter groups.
  ZeroOptimizer(nn::optim::Optimizer& optimizer, Communicator& comm);

  /// Updates this rank's parameters, then gathers everyone's.
  void step();
  /// nn::optim::clip_grad_norm for sharded state: the same global norm (the squared norms of
  /// the parameters, each from its owner, added in the order of `params`, so it is bit for bit
  /// the unsharded one), but only this rank's gradients — the ones it will use — are scaled.
  double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
  /// The whole optimizer state, gathered from the owners (collective: every rank calls it).
  nn::NamedTensors consolidated_state_dict();
  /// Loads a whole state (as consolidated_state_dict() gave) and keeps this rank's share.
  void load_state_dict(const nn::NamedTensors& state);

 private:
  void drop_unowned_state();
  nn::optim::Optimizer& opt_;
  Communicator& comm_;
  std::vector<std::vector<int>> owners_;       // [group][index]
  std::vector<std::vector<int64_t>> offsets_;  // [group][index]: where in its owner's share
  int64_t largest_share_ = 0;                  // elements
  std::map<const Storage*, int> owner_of_;     // by the parameter's storage
};

}  // namespace dlf::parallel
