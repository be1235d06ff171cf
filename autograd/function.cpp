#include <dlf/autograd/function.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>

#include "autograd/graph_nodes.h"

namespace dlf::autograd {
namespace {

class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, const Tensors& inputs, const Tensors& outputs,
               std::function<Tensors(const Tensors&)> backward)
      : Node(next_sequence_nr()), name_(std::move(name)), backward_(std::move(backward)) {
    for (const Tensor& t : inputs) next_edges_.push_back(gradient_edge(t));
    for (const Tensor& t : outputs) outputs_.push_back({t.shape(), t.dtype(), t.device()});
    slot_hooks_.resize(outputs.size());
  }
  std::string name() const override { return name_; }
  int num_slots() const override { return static_cast<int>(outputs_.size()); }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) {
        const Output& o = outputs_[i];
        grads[i] = zeros(o.shape, {.dtype = o.dtype, .device = o.device});
      }
    }
    Tensors result = backward_(grads);
    DLF_CHECK(result.size() == next_edges_.size(), name_, ": backward returned ", result.size(),
              " gradients for ", next_edges_.size(), " inputs");
    return result;
  }

 private:
  struct Output {
    Shape shape;
    DType dtype;
    Device device;
  };
  std::string name_;
  std::function<Tensors(const Tensors&)> backward_;
  std::vector<Output> outputs_;
};

}  // namespace

Tensors apply_function(std::string name, const Tensors& inputs,
                       const std::function<Tensors(const Tensors&)>& forward,
                       std::function<Tensors(const Tensors&)> backward) {
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  const bool record = grad_enabled() && any;
  Tensors outputs;
  {
    NoGradGuard no_grad;
    outputs = forward(inputs);
  }
  if (!record) return outputs;
  auto node = std::make_shared<FunctionNode>(std::move(name), inputs, outputs, std::move(backward));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!is_floating(out.dtype())) continue;
    for (const Tensor& in : inputs) {
      if (out.is_same(in)) out = out.detach();  // an identity forward gets its own link
    }
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = node;
    meta->output_nr = static_cast<int>(i);
    out.set_autograd_meta(std::move(meta));
  }
  return outputs;
}

}  // namespace dlf::autograd
