// The two kinds of backward node: one per recorded op, one per leaf that accumulates.
#pragma once
#include <dlf/autograd/backward.h>
#include <dlf/autograd/node.h>

#include "autograd/saved_tensor.h"

namespace dlf::autograd {

/// The backward of one dispatched op: its formula, attrs and the tensors the formula reads.
class OpNode final : public Node {
 public:
  OpNode(const OpDef& op, const BackwardDef& def, const Attrs& attrs,
         const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  /// Saves what the formula reads; called once the outputs carry their autograd link.
  void save(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  std::string name() const override { return op_.name; }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override;
  void release_saved() override;
  int num_slots() const override { return static_cast<int>(output_metas_.size()); }

 private:
  const OpDef& op_;
  const BackwardDef& def_;
  Attrs attrs_;
  std::vector<SavedTensor> saved_inputs_, saved_outputs_;  // by position; most stay empty
  std::vector<TensorMeta> input_metas_, output_metas_;
  std::vector<Device> input_devices_;
  std::vector<bool> needs_grad_;
  Device device_;
};

/// Sums the gradients arriving for a leaf into its .grad, then runs its grad-ready hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override;
  int num_slots() const override { return 1; }
  const Tensor& leaf() const { return leaf_; }

 private:
  Tensor leaf_;
};

/// The node whose apply() the engine is running on this thread, or null outside backward.
const Node* running_backward_node();

/// The edge along which a gradient for `t` travels (null if t needs none).
Edge gradient_edge(const Tensor& t);

}  // namespace dlf::autograd
