// ZeRO (Rajbhandari et al. 2020) over a data-parallel group, laid out as Megatron-LM's
// distributed optimizer: each DDP bucket is cut into one equal part per rank, and a rank keeps
// optimizer state for, and updates, only the pieces of parameters in its parts; one allgather
// per bucket then brings every rank the others' updated pieces.
//
// - Stage 1: gradients are averaged whole (DDP's allreduce). The result is the unsharded
//   optimizer's, bit for bit, clipping included; each rank holds 1/N of the state and does
//   1/N of the update.
// - Stage 2: DDP is built with shard_gradients, so each bucket is reduce-scattered and a rank
//   keeps only its part of the gradients too. The global gradient norm then adds per-piece
//   sums in another order: equal to the unsharded one to rounding, not bit for bit.
//
// Checkpoints hold the whole state under the unsharded optimizer's names
// (consolidated_state_dict), so they load at any number of ranks and without ZeRO.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/communicator.h>
#include <dlf/parallel/grad_norm.h>
#include <dlf/parallel/sharded_parameters.h>

namespace dlf::parallel {

/// ZeRO's sharded optimizer over a ShardedParameters layout (see above).
class ZeroOptimizer {
 public:
  /// Shards `optimizer` (its groups, options and learning rates; its own state stays empty)
  /// over the ranks of `comm`, as `shards` lays the parameters out (a DDP, or an FSDP for
  /// ZeRO-3, over the same group). Every rank constructs it alike. If `optimizer` is
  /// offloaded (Optimizer::offload), each rank's pieces are: ZeRO-Offload.
  ZeroOptimizer(nn::optim::Optimizer& optimizer, Communicator& comm, ShardedParameters& shards);

  /// Whether every rank holds the whole gradients (ZeRO-1): then the norm is the unsharded one.
  bool whole_gradients() const { return shards_.whole_gradients(); }
  /// Updates this rank's pieces with the optimizer's current learning rates, then gathers
  /// everyone's. Call after ddp.synchronize() (and clip_grad_norm): begin_step(), then update().
  void step();
  /// Counts a step and sets, on the host, the learning rates and step count the pieces'
  /// update reads (Optimizer::begin_step): before a captured step.
  void begin_step();
  /// Updates this rank's pieces with what begin_step() set, then gathers everyone's: device ops
  /// only when capturable(), so a captured training step can hold it.
  void update();
  /// Whether update() reads no value on the host: the optimizer is capturable (AdamW) and not
  /// offloaded (ZeRO-Offload's copies to the host are not captured).
  bool capturable() const;
  /// Makes the pieces' optimizer state now (Optimizer::init_state), so that a step captured
  /// before any update finds it.
  void init_state();
  /// What a captured training step runs after backward (nn::optim::clip_and_update's sharded
  /// form): the gradients clipped by their global norm in tensor ops — the unsharded norm over
  /// whole gradients (ZeRO-1), else the pieces' squares added over the ranks and `scope`'s
  /// groups, in clip_grad_norm's order — then update(). Returns the norm before clipping (an f64
  /// scalar on the device). Under ZeRO-2 a captured step must hold the update: its gradient
  /// parts are the graph's, and an update after it would not read them.
  Tensor clip_and_update(const std::vector<Tensor>& params, double max_norm,
                         const NormScope& scope = {});
  /// The global L2 norm of the gradients of `params` (the DDP's module's parameters), each
  /// element counted once; the gradients this rank uses are scaled to `max_norm` if above. A
  /// model split over model-parallel ranks adds their parts as `scope` says (grad_norm.h).
  double clip_grad_norm(const std::vector<Tensor>& params, double max_norm,
                        const NormScope& scope = {});
  /// The whole optimizer state, named as the unsharded optimizer's state_dict() names it
  /// (collective: every rank calls it).
  nn::NamedTensors consolidated_state_dict();
  /// Loads a whole state (as consolidated_state_dict() gave) and keeps this rank's pieces.
  void load_state_dict(const nn::NamedTensors& state);

 private:
  struct Piece {
    OwnedPiece owned;             // owned.value: updated in place, a leaf of shard_'s
    size_t group = 0, index = 0;  // of the parameter in the optimizer's groups
  };
  void attach_gradients();
  std::vector<Tensor> piece_values() const;

  nn::optim::Optimizer& opt_;
  Communicator& comm_;
  ShardedParameters& shards_;
  std::map<const Storage*, std::pair<size_t, size_t>> place_;  // parameter -> (group, index)
  std::vector<Piece> pieces_;
  std::unique_ptr<nn::optim::Optimizer> shard_;  // over the pieces, one group per group
  bool gradients_attached_ = false;
};

}  // namespace dlf::parallel
