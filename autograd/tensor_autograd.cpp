// The autograd members of Tensor.
#include <dlf/autograd/backward.h>
#include <dlf/autograd/node.h>

namespace dlf {

bool Tensor::requires_grad() const { return impl_->autograd && impl_->autograd->requires_grad; }

const Tensor& Tensor::requires_grad_(bool value) const {
  DLF_CHECK(is_leaf(), "requires_grad_() applies to leaves; this tensor of shape ",
            shape_str(shape()), " was made by '", impl_->autograd->grad_fn->name(),
            "' (use detach() for a leaf with the same data)");
  DLF_CHECK(!value || is_floating(dtype()), "only floating tensors can require grad, not ",
            dtype_name(dtype()));
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const { return !impl_->autograd || !impl_->autograd->grad_fn; }

Tensor Tensor::grad() const { return impl_->autograd ? impl_->autograd->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) const {
  DLF_CHECK(!grad.defined() || grad.shape() == shape(), "set_grad: gradient of shape ",
            shape_str(grad.shape()), " for a tensor of shape ", shape_str(shape()));
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->grad = grad;
}

void Tensor::backward(const Tensor& grad, bool retain_graph, bool create_graph) const {
  autograd::backward({*this}, {grad}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  return Tensor(impl_->storage, impl_->sizes, impl_->strides, impl_->offset, impl_->dtype);
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  DLF_CHECK(requires_grad(), "register_hook on a tensor that does not require grad");
  if (is_leaf()) {
    impl_->autograd->hooks.push_back(std::move(hook));
  } else {
    impl_->autograd->grad_fn->slot_hooks()[impl_->autograd->output_nr].push_back(std::move(hook));
  }
}

void Tensor::register_grad_ready_hook(std::function<void(const Tensor&)> hook) const {
  DLF_CHECK(requires_grad() && is_leaf(),
            "register_grad_ready_hook needs a leaf that requires grad");
  impl_->autograd->grad_ready_hooks.push_back(std::move(hook));
}

}  // namespace dlf
