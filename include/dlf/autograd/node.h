// The backward graph: a Node per recorded op (or per leaf, to accumulate its gradient),
// joined by edges from a node to the nodes that made its inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::autograd {

class Node;

/// Where a gradient goes: output slot `slot` of `node`. A null node means nowhere.
struct Edge {
  std::shared_ptr<Node> node;  ///< the node it goes to (null: nowhere)
  int slot = 0;                ///< which of that node's output slots
};

/// Runs on a gradient; a defined result replaces it.
using TensorHook = std::function<Tensor(const Tensor& grad)>;

/// A node of the backward graph: one recorded op, or a leaf's accumulation.
class Node : public std::enable_shared_from_this<Node> {
 public:
  /// Ordered by `sequence_nr` (next_sequence_nr())
  explicit Node(uint64_t sequence_nr) : sequence_nr_(sequence_nr) {}
  virtual ~Node() = default;
  virtual std::string name() const = 0;  ///< the op's name, for errors and traces
  /// Gradients for each of the node's inputs (an undefined tensor where none flows), from
  /// the gradients of its outputs (undefined where none arrived).
  virtual std::vector<Tensor> apply(std::vector<Tensor> grads) = 0;
  /// Drops saved tensors once backward has used them (unless the graph is retained).
  virtual void release_saved() {}
  /// Number of output slots gradients arrive in.
  virtual int num_slots() const = 0;

  /// Where the gradients of its inputs go.
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  /// Later nodes run first among those ready: backward mirrors forward order.
  uint64_t sequence_nr() const { return sequence_nr_; }
  /// Hooks on the gradient arriving in a slot (register_hook on a non-leaf tensor).
  std::vector<std::vector<TensorHook>>& slot_hooks() { return slot_hooks_; }

 protected:
  std::vector<Edge> next_edges_;                     ///< one per input
  std::vector<std::vector<TensorHook>> slot_hooks_;  ///< per output slot

 private:
  uint64_t sequence_nr_;
};

/// Hands out increasing sequence numbers (per thread).
uint64_t next_sequence_nr();

}  // namespace dlf::autograd

namespace dlf {

/// The autograd state of one tensor.
struct AutogradMeta {
  bool requires_grad = false;               ///< whether backward computes a gradient for the tensor
  Tensor grad;                              ///< accumulated here, for leaves
  std::shared_ptr<autograd::Node> grad_fn;  ///< null for leaves
  int output_nr = 0;                        ///< which output of grad_fn this is
  std::weak_ptr<autograd::Node> grad_accumulator;  ///< a leaf's accumulation node
  std::vector<autograd::TensorHook> hooks;         ///< for leaves, run before accumulation
  std::vector<std::function<void(const Tensor&)>> grad_ready_hooks;  ///< leaves: grad final
};

}  // namespace dlf
