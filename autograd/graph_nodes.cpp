#include "autograd/graph_nodes.h"

#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>

#include <limits>

namespace dlf::autograd {

OpNode::OpNode(const OpDef& op, const BackwardDef& def, const Attrs& attrs,
               const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs)
    : Node(next_sequence_nr()), op_(op), def_(def), attrs_(attrs) {
  for (const Tensor& t : inputs) {
    next_edges_.push_back(gradient_edge(t));
    needs_grad_.push_back(next_edges_.back().node != nullptr);
    input_metas_.push_back(t.defined() ? TensorMeta{t.shape(), t.dtype()}
                                       : TensorMeta{{}, DType::f32});
    input_devices_.push_back(t.defined() ? t.device() : outputs.at(0).device());
  }
  for (const Tensor& t : outputs) output_metas_.push_back({t.shape(), t.dtype()});
  device_ = outputs.at(0).device();
  slot_hooks_.resize(outputs.size());
}

void OpNode::save(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  saved_inputs_.resize(inputs.size());
  saved_outputs_.resize(outputs.size());
  for (int i : def_.save_inputs) saved_inputs_[i] = SavedTensor(inputs[i], false);
  for (int i : def_.save_outputs) saved_outputs_[i] = SavedTensor(outputs[i], true);
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor> grads) {
  std::shared_ptr<Node> self = shared_from_this();
  std::vector<Tensor> inputs(saved_inputs_.size()), outputs(saved_outputs_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (saved_inputs_[i].defined()) inputs[i] = saved_inputs_[i].unpack(self, op_.name);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (saved_outputs_[i].defined()) outputs[i] = saved_outputs_[i].unpack(self, op_.name);
  }
  BackwardContext ctx(attrs_, grads, inputs, outputs, input_metas_, output_metas_, input_devices_,
                      needs_grad_, device_);
  std::vector<Tensor> result = def_.fn(ctx);
  DLF_CHECK(result.size() == input_metas_.size(), "backward of '", op_.name, "' returned ",
            result.size(), " gradients for ", input_metas_.size(), " inputs");
  for (size_t i = 0; i < result.size(); ++i) {
    if (!needs_grad_[i]) {
      result[i] = Tensor();
    } else if (result[i].defined()) {
      DLF_CHECK(result[i].shape() == input_metas_[i].shape, "backward of '", op_.name,
                "' gave a gradient of shape ", shape_str(result[i].shape()), " for input ", i,
                " of shape ", shape_str(input_metas_[i].shape));
    }
  }
  return result;
}

void OpNode::release_saved() {
  for (auto& s : saved_inputs_) s.release();
  for (auto& s : saved_outputs_) s.release();
}

AccumulateGrad::AccumulateGrad(Tensor leaf)
    : Node(std::numeric_limits<uint64_t>::max()), leaf_(std::move(leaf)) {
  slot_hooks_.resize(1);
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor> grads) {
  Tensor g = grads[0];
  if (!g.defined()) return {};
  AutogradMeta& meta = *leaf_.autograd_meta();
  for (auto& hook : meta.hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  meta.grad = meta.grad.defined() ? meta.grad + g : g;
  meta.grad.storage()->set_category(MemoryCategory::gradients);
  for (auto& hook : meta.grad_ready_hooks) hook(meta.grad);
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  const auto& meta = t.autograd_meta();
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  std::shared_ptr<Node> acc = meta->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta->grad_accumulator = acc;
  }
  return {acc, 0};
}

BackwardContext::BackwardContext(const Attrs& attrs, std::span<const Tensor> grads,
                                 std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                 std::span<const TensorMeta> input_metas,
                                 std::span<const TensorMeta> output_metas,
                                 std::span<const Device> input_devices,
                                 const std::vector<bool>& needs_grad, Device device)
    : attrs_(attrs),
      grads_(grads),
      inputs_(inputs),
      outputs_(outputs),
      input_metas_(input_metas),
      output_metas_(output_metas),
      input_devices_(input_devices),
      needs_grad_(needs_grad),
      device_(device) {}

Tensor BackwardContext::grad(int i) const {
  if (grads_[i].defined()) return grads_[i];
  const TensorMeta& m = output_metas_[i];
  return zeros(m.shape, {.dtype = m.dtype, .device = device_});
}

const Tensor& BackwardContext::input(int i) const {
  DLF_CHECK(inputs_[i].defined(), "backward formula reads input ", i, " that it did not save");
  return inputs_[i];
}

const Tensor& BackwardContext::output(int i) const {
  DLF_CHECK(outputs_[i].defined(), "backward formula reads output ", i, " that it did not save");
  return outputs_[i];
}

}  // namespace dlf::autograd
