// Registering an op's backward, and the graph-level calls: backward(), grad().
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <dlf/core/op.h>

namespace dlf::autograd {

/// What a backward formula sees: the gradients of the op's outputs, the tensors it asked to
/// keep, the shapes and dtypes of all inputs, and the attrs.
class BackwardContext {
 public:
  /// What a backward formula sees of its op: attrs, output gradients, the saved inputs and outputs,
  /// their metas and devices, which inputs need a gradient.
  BackwardContext(const Attrs& attrs, std::span<const Tensor> grads, std::span<const Tensor> inputs,
                  std::span<const Tensor> outputs, std::span<const TensorMeta> input_metas,
                  std::span<const TensorMeta> output_metas, std::span<const Device> input_devices,
                  const std::vector<bool>& needs_grad, Device device);
  /// The op's attributes.
  const Attrs& attrs() const { return attrs_; }
  /// Gradient of output i; zeros if none arrived.
  Tensor grad(int i = 0) const;
  /// Whether output i's gradient arrived.
  bool has_grad(int i) const { return grads_[size_t(i)].defined(); }
  /// A saved input or output (listed in BackwardDef::save_inputs / save_outputs).
  const Tensor& input(int i) const;
  /// Whether input i was saved and defined (an optional input such as a bias may be absent).
  bool has_input(int i) const { return inputs_[size_t(i)].defined(); }
  const Tensor& output(int i) const;  ///< a saved output (listed in BackwardDef::save_outputs)
  /// Shape and dtype of input i, saved or not.
  const TensorMeta& input_meta(int i) const { return input_metas_[size_t(i)]; }
  /// The op's input count.
  int num_inputs() const { return static_cast<int>(input_metas_.size()); }
  /// The device of the op's outputs, and of input i.
  Device device() const { return device_; }
  /// Where input i lived.
  Device input_device(int i) const { return input_devices_[size_t(i)]; }
  /// Whether input i needs a gradient; the formula may skip the others.
  bool needs_grad(int i) const { return needs_grad_[size_t(i)]; }

 private:
  const Attrs& attrs_;
  std::span<const Tensor> grads_, inputs_, outputs_;
  std::span<const TensorMeta> input_metas_, output_metas_;
  std::span<const Device> input_devices_;
  const std::vector<bool>& needs_grad_;
  Device device_;
};

/// How to differentiate an op: what it saves and the formula.
struct BackwardDef {
  std::vector<int> save_inputs = {};   ///< inputs whose values the formula reads
  std::vector<int> save_outputs = {};  ///< outputs whose values the formula reads
  /// One gradient per input (undefined where the input needs none).
  std::function<std::vector<Tensor>(const BackwardContext&)> fn = {};
};

/// Registers the backward of the op named `op`. Called once per differentiable op.
void register_backward(const std::string& op, BackwardDef def);
/// Marks an op as having no gradient (argmax, comparisons, random draws, ...); its outputs
/// never require grad. An op in neither list refuses inputs that require grad.
void register_nondifferentiable(const std::string& op);
/// Names of ops with a registered backward, sorted.
std::vector<std::string> differentiable_ops();
/// Whether the op was declared to have no gradient.
bool is_nondifferentiable(const std::string& op);

/// Runs backward from `outputs` (seeded with `grads`, or ones for one-element outputs),
/// accumulating into the .grad of leaves that require grad.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grads = {},
              bool retain_graph = false, bool create_graph = false);

/// The gradients of `outputs` with respect to `inputs`, returned instead of accumulated
/// (undefined where an input is unreachable). With create_graph they are differentiable.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false);

}  // namespace dlf::autograd
