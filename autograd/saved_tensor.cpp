#include "autograd/saved_tensor.h"

#include <dlf/autograd/grad_mode.h>

namespace dlf::autograd {

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.storage()->version();
  if (is_output) {
    data_ = t.detach();
    output_nr_ = t.autograd_meta() ? t.autograd_meta()->output_nr : 0;
  } else {
    data_ = t;
  }
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const std::string& op) const {
  DLF_CHECK(!released_, "backward of '", op,
            "' ran a second time after its saved tensors were freed; call backward with "
            "retain_graph=true the first time");
  if (!data_.defined()) return data_;
  DLF_CHECK(data_.storage()->version() == version_, "a tensor of shape ", shape_str(data_.shape()),
            " saved for the backward of '", op, "' was modified in place afterwards (version ",
            version_, " -> ", data_.storage()->version(), "); clone it before changing it");
  if (!is_output_ || !grad_enabled()) return data_;
  Tensor linked = data_.detach();
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = owner;
  meta->output_nr = output_nr_;
  linked.set_autograd_meta(std::move(meta));
  return linked;
}

}  // namespace dlf::autograd
