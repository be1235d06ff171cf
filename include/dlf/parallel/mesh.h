// The world of N ranks factored as dp × tp × pp, with a communicator per axis. Ranks are laid
// out tp innermost, then pp, then dp (Megatron-LM's order): a tensor-parallel group is
// consecutive ranks — one node's fast links — and data-parallel groups stride across nodes.
#pragma once
#include <memory>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// A dp x tp x pp layout.
struct Layout {
  /// ways of data, tensor and pipeline parallelism
  ///@{
  int dp = 1, tp = 1, pp = 1;
  ///@}
  /// Dp · tp · pp.
  int devices() const { return dp * tp * pp; }
};

/// A rank's place in a dp x tp x pp mesh and the groups it belongs to.
class Mesh {
 public:
  /// Splits `world` (whose size must be dp · tp · pp) into its groups; every rank calls it.
  Mesh(Communicator& world, Layout layout);
  /// A rank's place from its three groups, made already (a planner's PlanningCommunicators,
  /// whose peers are absent); their sizes must be the layout's.
  Mesh(Layout layout, std::unique_ptr<Communicator> dp, std::unique_ptr<Communicator> tp,
       std::unique_ptr<Communicator> pp);

  /// The layout.
  const Layout& layout() const { return layout_; }
  /// This rank's index in its dp group.
  int dp_rank() const { return dp_->rank(); }
  /// In its tp group.
  int tp_rank() const { return tp_->rank(); }
  /// Its pipeline stage.
  int pp_rank() const { return pp_->rank(); }
  /// dp(): the replicas of this rank's shard; tp(): the shards of this rank's layers;
  /// pp(): the stages of this rank's pipeline.
  Communicator& dp() const { return *dp_; }
  /// The ranks that share its stage and replica.
  Communicator& tp() const { return *tp_; }
  /// The ranks of its replica that share its tp index.
  Communicator& pp() const { return *pp_; }

 private:
  Layout layout_;
  std::unique_ptr<Communicator> dp_, tp_, pp_;
};

}  // namespace dlf::parallel
