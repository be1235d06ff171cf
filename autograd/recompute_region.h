// The bookkeeping of activation recompute (checkpoint.h): a region of the forward pass whose
// saved tensors are slots, filled by running the region again when backward first needs one.
#pragma once
#include <memory>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/core/autocast.h>
#include <dlf/core/op.h>

namespace dlf::autograd {

class RecomputeRegion : public std::enable_shared_from_this<RecomputeRegion> {
 public:
  RecomputeRegion(CheckpointFn fn, const std::vector<Tensor>& inputs, Recompute what);

  /// The region whose forward this thread is recording, or null.
  static std::shared_ptr<RecomputeRegion> recording();
  /// Whether this thread is inside a checkpointed forward or a recompute.
  static bool active();
  /// During a recompute: keeps `t` as the next slot's tensor and returns true; else false.
  static bool capture(const Tensor& t);
  /// While a selective region records: keeps the outputs of an outermost costly op.
  static void keep(const OpDef& op, Inputs inputs, const Attrs& attrs,
                   const std::vector<Tensor>& outputs);
  /// During a recompute: hands out the kept outputs of a costly op instead of running it
  /// (dispatch's recompute hook).
  static bool reuse(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                    const std::vector<TensorMeta>& metas, std::vector<Tensor>& outputs);

  /// Runs the forward, making this the recording region for its duration.
  std::vector<Tensor> record(const std::vector<Tensor>& inputs);
  /// A new slot for a tensor the recorded forward saves.
  int add_slot();
  /// The tensor of `slot`, recomputing the region if it is not there; handed over (each is
  /// freed once backward has used it).
  Tensor take(int slot);

 private:
  void recompute();

  // A costly op's outputs from the first forward, with their storages' versions then.
  struct Kept {
    const OpDef* op;
    std::vector<Tensor> outputs;
    std::vector<uint64_t> versions;
  };

  CheckpointFn fn_;
  bool selective_;
  std::vector<Kept> kept_;      // in the order the forward made them
  size_t reused_ = 0;           // how many of them the running recompute has reached
  std::vector<Tensor> inputs_;  // detached aliases
  std::vector<bool> requires_grad_;
  std::vector<uint64_t> versions_;
  uint64_t seed_, offset_;         // the default generator's state when the forward began
  std::optional<DType> autocast_;  // and the autocast dtype
  std::vector<Tensor> slots_;
  size_t captured_ = 0;
};

}  // namespace dlf::autograd
