#include <dlf/autograd/grad_mode.h>
#include <dlf/nn/module.h>

#include <set>

namespace dlf::nn {

Tensor Module::register_parameter(std::string name, Tensor value) {
  DLF_CHECK(value.defined(), "register_parameter('", name, "'): undefined tensor");
  if (value.is_leaf() && !value.requires_grad()) value.requires_grad_();
  value.storage()->set_category(MemoryCategory::parameters);
  parameters_.emplace_back(std::move(name), value);
  return value;
}

Tensor Module::register_buffer(std::string name, Tensor value) {
  buffers_.emplace_back(std::move(name), value);
  return value;
}

void Module::collect(const std::string& prefix, bool parameters, bool buffers,
                     NamedTensors& out) const {
  if (parameters) {
    for (const auto& [name, t] : parameters_) out.emplace_back(prefix + name, t);
  }
  if (buffers) {
    for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
  }
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", parameters, buffers, out);
}

namespace {
NamedTensors unique(NamedTensors all) {
  std::set<const TensorImpl*> seen;
  NamedTensors out;
  for (auto& [name, t] : all) {
    if (seen.insert(t.impl()).second) out.emplace_back(std::move(name), t);
  }
  return out;
}
}  // namespace

NamedTensors Module::named_parameters() const {
  NamedTensors all;
  collect("", true, false, all);
  return unique(std::move(all));
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors all;
  collect("", false, true, all);
  return unique(std::move(all));
}

NamedTensors Module::state_dict() const {
  NamedTensors all;
  collect("", true, true, all);
  return all;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::load_state_dict(const NamedTensors& state) {
  NamedTensors mine = state_dict();
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) given[name] = &t;
  for (const auto& [name, t] : mine) {
    auto it = given.find(name);
    DLF_CHECK(it != given.end(), "load_state_dict: missing tensor '", name, "' of shape ",
              shape_str(t.shape()));
    DLF_CHECK(it->second->shape() == t.shape(), "load_state_dict: tensor '", name, "' has shape ",
              shape_str(it->second->shape()), ", the model expects ", shape_str(t.shape()));
  }
  for (const auto& [name, t] : state) {
    bool known = false;
    for (const auto& entry : mine) known = known || entry.first == name;
    DLF_CHECK(known, "load_state_dict: unexpected tensor '", name,
              "' (the model has no such name)");
  }
  autograd::NoGradGuard no_grad;
  for (auto& [name, t] : mine) t.copy_(given[name]->to(t.device()));
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  autograd::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) {
    MemoryScope scope(MemoryCategory::parameters);
    t.set_data(t.to(device));
  }
  for (auto& [name, t] : named_buffers()) t.set_data(t.to(device));
}

void Module::to(DType dtype) {
  autograd::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) {
    MemoryScope scope(MemoryCategory::parameters);
    t.set_data(t.to(dtype));
  }
  for (auto& [name, t] : named_buffers()) {
    if (is_floating(t.dtype())) t.set_data(t.to(dtype));
  }
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.set_grad(Tensor());
}

}  // namespace dlf::nn
