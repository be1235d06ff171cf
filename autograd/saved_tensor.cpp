#include "autograd/saved_tensor.h"

#include <dlf/autograd/grad_mode.h>

#include "autograd/recompute_region.h"

namespace dlf::autograd {

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  const Tensor kept = is_output ? t.detach() : t;
  if (RecomputeRegion::capture(kept)) return;  // a recompute's save: its region keeps it
  if (is_output) output_nr_ = t.autograd_meta() ? t.autograd_meta()->output_nr : 0;
  if (std::shared_ptr<RecomputeRegion> region = RecomputeRegion::recording()) {
    slot_ = region->add_slot();
    region_ = std::move(region);
    return;
  }
  version_ = t.storage()->version();
  data_ = kept;
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const std::string& op) const {
  DLF_CHECK(!released_, "backward of '", op,
            "' ran a second time after its saved tensors were freed; call backward with "
            "retain_graph=true the first time");
  Tensor data = data_;
  if (region_) {
    data = region_->take(slot_);  // recomputed: fresh, no version to check
  } else if (data.defined()) {
    DLF_CHECK(data.storage()->version() == version_, "a tensor of shape ", shape_str(data.shape()),
              " saved for the backward of '", op, "' was modified in place afterwards (version ",
              version_, " -> ", data.storage()->version(), "); clone it before changing it");
  }
  if (!data.defined() || !is_output_ || !grad_enabled()) return data;
  Tensor linked = data.detach();
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = owner;
  meta->output_nr = output_nr_;
  linked.set_autograd_meta(std::move(meta));
  return linked;
}

}  // namespace dlf::autograd
