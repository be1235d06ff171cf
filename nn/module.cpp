#include <dlf/autograd/checkpoint.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/memory_profile.h>
#include <dlf/nn/module.h>

#include <cxxabi.h>

#include <cstdlib>
#include <ostream>
#include <set>
#include <sstream>
#include <typeinfo>

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

Module::LoadResult Module::load_state_dict(const NamedTensors& state, bool strict) {
  const NamedTensors mine = state_dict();
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) given.try_emplace(name, &t);
  // Each of the module's tensors once, with the value `state` gives for any of its names.
  std::map<const TensorImpl*, const Tensor*> source;
  LoadResult result;
  std::set<std::string> known;
  for (const auto& [name, t] : mine) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) continue;
    DLF_CHECK(it->second->shape() == t.shape(), "load_state_dict: tensor '", name, "' has shape ",
              shape_str(it->second->shape()), ", the model expects ", shape_str(t.shape()));
    source.try_emplace(t.impl(), it->second);
  }
  for (const auto& [name, t] : mine) {
    if (source.contains(t.impl())) continue;
    DLF_CHECK(!strict, "load_state_dict: missing tensor '", name, "' of shape ",
              shape_str(t.shape()), " (load_state_dict(state, false) loads the rest)");
    result.missing.push_back(name);
  }
  for (const auto& [name, t] : state) {
    if (known.contains(name)) continue;
    DLF_CHECK(!strict, "load_state_dict: unexpected tensor '", name,
              "' (the model has no such name; load_state_dict(state, false) ignores it)");
    result.unexpected.push_back(name);
  }
  autograd::NoGradGuard no_grad;
  for (const auto& [name, t] : mine) {
    auto it = source.find(t.impl());
    if (it == source.end()) continue;
    Tensor target = t;
    target.copy_(it->second->to(t.device()));
    source.erase(it);  // a tied tensor is copied once
  }
  return result;
}

std::string Module::type_name() const {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status);
  std::string name = status == 0 ? demangled : typeid(*this).name();
  std::free(demangled);
  const size_t template_start = name.find('<');
  const size_t last_colon = name.rfind("::", template_start);
  return last_colon == std::string::npos ? name : name.substr(last_colon + 2);
}

std::string Module::str() const {
  std::ostringstream os;
  os << type_name() << "(" << extra_repr();
  std::vector<std::string> lines;
  if (extra_repr().empty()) {
    for (const auto* list : {&parameters_, &buffers_}) {
      for (const auto& [name, t] : *list) {
        lines.push_back("(" + name + "): " + (list == &parameters_ ? "Parameter" : "Buffer") + " " +
                        dtype_name(t.dtype()) + shape_str(t.shape()));
      }
    }
  }
  for (const auto& [name, child] : children_) lines.push_back("(" + name + "): " + child->str());
  if (!lines.empty()) {
    os << "\n";
    for (const std::string& line : lines) {
      std::istringstream child_lines(line);
      for (std::string l; std::getline(child_lines, l);) os << "  " << l << "\n";
    }
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.str(); }

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

void Module::to_empty(Device device) {
  autograd::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) {
    MemoryScope scope(MemoryCategory::parameters);
    t.set_data(Tensor::empty(t.shape(), t.dtype(), device));
  }
  for (auto& [name, t] : named_buffers()) t.set_data(Tensor::empty(t.shape(), t.dtype(), device));
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

void Module::recompute(autograd::Recompute what) {
  recompute_ = what;
  for (auto& [name, child] : children_) child->recompute(what);
}

void Module::adopt(Module& child, const std::string& name) {
  if (std::exchange(child.registered_, true)) return;  // shared: named where first registered
  // Whichever is registered first, a module or its children, each ends with its whole path.
  std::function<void(Module&, const std::string&)> name_tree = [&](Module& m,
                                                                   const std::string& path) {
    m.path_ = path;
    for (auto& [n, c] : m.children_) name_tree(*c, path + "." + n);
  };
  name_tree(child, path_.empty() ? name : path_ + "." + name);
}

Tensor Module::run_block(const std::function<Tensor(const std::vector<Tensor>&)>& body,
                         const std::vector<Tensor>& inputs) const {
  const MemoryLabel label(path_.empty() ? type_name() : path_);
  const std::shared_ptr<const BlockHooks> hooks = block_hooks_;
  if (hooks) hooks->before_forward();
  const Tensor out = autograd::checkpoint(
      [body](const std::vector<Tensor>& in) { return std::vector<Tensor>{body(in)}; }, inputs,
      recompute_)[0];
  if (hooks) hooks->after_forward(out);
  return out;
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.set_grad(Tensor());
}

}  // namespace dlf::nn
