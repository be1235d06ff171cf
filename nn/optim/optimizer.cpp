#include <dlf/autograd/grad_mode.h>
#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/core/op_profile.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/optim.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/device/sim_device.h>
#include <dlf/nn/optim/optimizer.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace dlf::nn::optim {

std::vector<ParamGroup> decay_groups(const NamedTensors& params, double weight_decay) {
  ParamGroup decay{.weight_decay = weight_decay}, no_decay{.weight_decay = 0};
  for (const auto& [name, p] : params) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  return {decay, no_decay};
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay)
    : groups_(std::move(groups)) {
  DLF_CHECK(!groups_.empty(), "optimizer: no parameters to optimize");
  for (ParamGroup& g : groups_) {
    if (!g.lr) g.lr = lr;
    if (!g.weight_decay) g.weight_decay = weight_decay;
    DLF_CHECK(std::isfinite(*g.lr) && *g.lr >= 0 && std::isfinite(*g.weight_decay) &&
                  *g.weight_decay >= 0,
              "optimizer: lr ", *g.lr, " and weight_decay ", *g.weight_decay,
              " must be finite and not negative");
    for (const Tensor& p : g.params) {
      DLF_CHECK(p.requires_grad() && p.is_leaf(), "optimizer: a parameter of shape ",
                shape_str(p.shape()), " is not a leaf that requires grad");
    }
    state_.emplace_back(g.params.size());
  }
}

void Optimizer::set_lr(double lr) {
  for (ParamGroup& g : groups_) g.lr = lr;
}

void Optimizer::step() {
  begin_step();
  update();
}

void Optimizer::begin_step() {
  ++steps_;
  lr_and_step_.resize(groups_.size());
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    std::vector<Tensor>& per_device = lr_and_step_[gi];
    for (const Tensor& p : groups_[gi].params) {
      const Device device = host_.value_or(p.device());
      if (std::any_of(per_device.begin(), per_device.end(),
                      [&](const Tensor& t) { return t.device() == device; }))
        continue;
      MemoryScope scope(MemoryCategory::temporaries);  // 16 bytes, not a parameter's state
      per_device.push_back(Tensor::empty({2}, DType::f64, device));
    }
    for (Tensor& values : per_device) {
      if (!values.device().has_data()) continue;  // meta: nothing to read
      values.data<double>()[0] = *groups_[gi].lr;
      values.data<double>()[1] = double(steps_);
    }
  }
}

Tensor Optimizer::lr_and_step(size_t group, Device device) const {
  DLF_CHECK(group < lr_and_step_.size(), "optimizer: update() before begin_step()");
  for (const Tensor& t : lr_and_step_[group])
    if (t.device() == device) return t;
  throw Error("optimizer: a parameter moved to " + device.str() + " after begin_step()");
}

void Optimizer::update() {
  DLF_CHECK(lr_and_step_.size() == groups_.size(), "optimizer: update() before begin_step()");
  autograd::NoGradGuard no_grad;
  const size_t slots = slot_names().size();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      Tensor& p = groups_[gi].params[pi];
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      std::vector<Tensor>& state = state_[gi][pi];
      state.resize(slots);
      const GroupStep group{.lr = *groups_[gi].lr,
                            .weight_decay = *groups_[gi].weight_decay,
                            .lr_and_step = lr_and_step(gi, host_.value_or(p.device()))};
      if (!host_ || *host_ == p.device()) {
        update_parameter(p, g, group, state);
      } else {  // down, updated on the host, up
        Tensor& master = masters_[gi][pi];
        if (!master.defined()) {
          MemoryScope scope(MemoryCategory::optimizer_state);
          master = p.to(*host_);
        }
        const Tensor down = g.to(*host_);
        {
          OpProfile meter;  // what the host computes, charged to a sim device's host stream
          update_parameter(master, down, group, state);
          if (p.device().type != DeviceType::cpu)
            sim::host_compute(p.device(), meter.outermost().flops, meter.outermost().bytes);
        }
        p.copy_(master.to(p.device()));
      }
      for (Tensor& slot : state) {
        if (slot.defined()) slot.storage()->set_category(MemoryCategory::optimizer_state);
      }
    }
  }
}

void Optimizer::init_state() {
  autograd::NoGradGuard no_grad;
  MemoryScope scope(MemoryCategory::optimizer_state);
  const size_t slots = slot_names().size();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      std::vector<Tensor>& state = state_[gi][pi];
      state.resize(slots);
      const Tensor& p = groups_[gi].params[pi];
      create_state(p.shape(), p.dtype(), host_.value_or(p.device()), state);
    }
  }
}

bool Optimizer::state_ready() const {
  const size_t slots = slot_names().size();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      if (!groups_[gi].params[pi].grad().defined()) continue;
      const std::vector<Tensor>& state = state_[gi][pi];
      if (state.size() != slots ||
          std::any_of(state.begin(), state.end(), [](const Tensor& t) { return !t.defined(); }))
        return false;
    }
  }
  return true;
}

void Optimizer::create_state(const Shape&, DType, Device, std::vector<Tensor>&) {}

void Optimizer::offload(Device host) {
  host_ = host;
  masters_.clear();
  for (const ParamGroup& g : groups_) masters_.emplace_back(g.params.size());
  autograd::NoGradGuard no_grad;
  MemoryScope scope(MemoryCategory::optimizer_state);
  for (auto& group : state_)
    for (auto& slots : group)
      for (Tensor& slot : slots)
        if (slot.defined()) slot = slot.to(host);
}

void Optimizer::zero_grad() {
  for (ParamGroup& g : groups_) {
    for (Tensor& p : g.params) p.set_grad(Tensor());
  }
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  out.emplace_back("step", from_vector<int64_t>({steps_}, {}));
  const std::vector<std::string> names = slot_names();
  for (size_t gi = 0; gi < state_.size(); ++gi) {
    for (size_t pi = 0; pi < state_[gi].size(); ++pi) {
      for (size_t s = 0; s < state_[gi][pi].size(); ++s) {
        if (!state_[gi][pi][s].defined()) continue;
        out.emplace_back(std::to_string(gi) + "." + std::to_string(pi) + "." + names[s],
                         state_[gi][pi][s]);
      }
    }
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  DLF_CHECK(given.contains("step"), "optimizer state: missing 'step'");
  const int64_t step = given.at("step").item<int64_t>();
  const std::vector<std::string> names = slot_names();
  auto restored = state_;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      restored[gi][pi].assign(names.size(), Tensor());
      for (size_t s = 0; s < names.size(); ++s) {
        const std::string key = std::to_string(gi) + "." + std::to_string(pi) + "." + names[s];
        auto it = given.find(key);
        if (it == given.end()) continue;
        const Tensor& p = groups_[gi].params[pi];
        DLF_CHECK(it->second.shape() == p.shape(), "optimizer state '", key, "' has shape ",
                  shape_str(it->second.shape()), ", its parameter has ", shape_str(p.shape()));
        MemoryScope scope(MemoryCategory::optimizer_state);
        restored[gi][pi][s] = it->second.to(p.dtype()).to(host_.value_or(p.device())).clone();
        given.erase(it);
      }
    }
  }
  given.erase("step");
  DLF_CHECK(given.empty(), "optimizer state: unexpected entry '", given.begin()->first, "'",
            std::isdigit(static_cast<unsigned char>(given.begin()->first[0]))
                ? ""
                : ": it is named by parameter, as a checkpoint keeps it; pass the model too, "
                  "load_state_dict(state, model)");
  // Into the tensors there already, where they fit: a captured step updates those.
  autograd::NoGradGuard no_grad;
  for (size_t gi = 0; gi < state_.size(); ++gi) {
    for (size_t pi = 0; pi < state_[gi].size(); ++pi) {
      for (size_t s = 0; s < state_[gi][pi].size(); ++s) {
        Tensor& old = state_[gi][pi][s];
        Tensor& loaded = restored[gi][pi][s];
        if (old.defined() && loaded.defined() && old.shape() == loaded.shape() &&
            old.dtype() == loaded.dtype() && old.device() == loaded.device()) {
          old.copy_(loaded);
          loaded = old;
        }
      }
    }
  }
  state_ = std::move(restored);
  steps_ = step;
  if (host_) offload(*host_);  // the masters are copied again from the parameters
}

namespace {
std::vector<ParamGroup> one_group(std::vector<Tensor> params) {
  return {{.params = std::move(params)}};
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(one_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer(std::move(groups), options.lr, options.weight_decay), o_(options) {
  DLF_CHECK(!o_.nesterov || o_.momentum > 0, "SGD: Nesterov needs momentum > 0");
}

void SGD::update_parameter(Tensor& p, const Tensor& grad, const GroupStep& step,
                           std::vector<Tensor>& state) {
  const double lr = step.lr, wd = step.weight_decay;
  Tensor g = wd != 0 ? grad + p * wd : grad;
  if (o_.momentum != 0) {
    Tensor& buf = state[0];
    buf = buf.defined() ? buf * o_.momentum + g : g.clone();
    g = o_.nesterov ? g + buf * o_.momentum : buf;
  }
  p.copy_(p - g * lr);
}

std::unique_ptr<Optimizer> SGD::same_kind(std::vector<ParamGroup> groups) const {
  return std::make_unique<SGD>(std::move(groups), o_);
}

std::unique_ptr<Optimizer> Adam::same_kind(std::vector<ParamGroup> groups) const {
  return std::unique_ptr<Optimizer>(new Adam(std::move(groups), o_, decoupled_));
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(one_group(std::move(params)), options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options)
    : Adam(std::move(groups), options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled)
    : Optimizer(std::move(groups), options.lr, options.weight_decay),
      o_(options),
      decoupled_(decoupled) {}

void Adam::create_state(const Shape& shape, DType dtype, Device device,
                        std::vector<Tensor>& state) {
  for (Tensor& moment : state) {
    if (!moment.defined()) moment = zeros(shape, {.dtype = dtype, .device = device});
  }
}

void Adam::update_parameter(Tensor& p, const Tensor& grad, const GroupStep& step,
                            std::vector<Tensor>& state) {
  create_state(p.shape(), p.dtype(), p.device(), state);
  adam_update_(p, grad, state[0], state[1], step.lr_and_step,
               {.beta1 = o_.beta1,
                .beta2 = o_.beta2,
                .eps = o_.eps,
                .weight_decay = step.weight_decay,
                .decoupled = decoupled_});
}

namespace {
AdamOptions as_adam(const AdamWOptions& o) {
  return {
      .lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay};
}
}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(one_group(std::move(params)), options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Adam(std::move(groups), as_adam(options), true) {}

void scale_gradients(const std::vector<Tensor>& params, double total_norm, double max_norm) {
  if (total_norm <= max_norm) return;
  autograd::NoGradGuard no_grad;
  const double scale = max_norm / (total_norm + 1e-6);
  MemoryScope scope(MemoryCategory::gradients);  // new tensors: a shared gradient scales once
  for (const Tensor& p : params) {
    if (p.grad().defined()) p.set_grad(p.grad() * scale);
  }
}

namespace {
std::vector<Tensor> gradients_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}
}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients_of(params);
  const double total = grads.empty() ? 0 : std::sqrt(sum_squares(grads).item<double>());
  scale_gradients(params, total, max_norm);
  return total;
}

Tensor grad_norm_on_device(const std::vector<Tensor>& params) {
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients_of(params);
  return grads.empty() ? Tensor() : sqrt(sum_squares(grads));
}

Tensor clip_grad_norm_on_device(const std::vector<Tensor>& params, double max_norm,
                                const NormFn& norm_of) {
  autograd::NoGradGuard no_grad;
  const Tensor norm = norm_of(params);
  if (!norm.defined()) return {};
  // scale_gradients' factor, in the same f64 steps, where it scales (the norm above max_norm);
  // else 1.
  const auto scalar = [&](double v) {
    return full({}, v, {.dtype = DType::f64, .device = norm.device()});
  };
  const Tensor factor =
      where(gt(norm, scalar(max_norm)), scalar(max_norm) / (norm + 1e-6), scalar(1.0));
  MemoryScope scope(MemoryCategory::gradients);  // new tensors: a shared gradient scales once
  for (const Tensor& p : params) {
    if (p.grad().defined()) p.set_grad(p.grad() * factor.to(p.grad().dtype()));
  }
  return norm;
}

Tensor clip_and_update(Optimizer& opt, const std::vector<Tensor>& params, double max_norm,
                       const NormFn& norm_of) {
  DLF_CHECK(opt.capturable(),
            "clip_and_update: the optimizer reads its learning rate on the "
            "host (not capturable): step it after the captured step");
  DLF_CHECK(opt.state_ready(),
            "clip_and_update: a parameter has no optimizer state yet; call init_state() before "
            "the step is captured, or the graph would make the state afresh at every run");
  AutocastGuard full_precision(std::nullopt);
  Tensor norm = clip_grad_norm_on_device(params, max_norm, norm_of);
  opt.update();
  return norm;
}

namespace {

// Calls fn(place, name) for every slot of every parameter of `opt` that `params` names:
// "0.3.exp_avg" and "transformer.h.0.attn.c_attn.weight.exp_avg".
template <typename Fn>
void for_each_slot(const Optimizer& opt, const NamedTensors& params, Fn fn) {
  std::map<const Storage*, std::string> names;
  for (const auto& [name, p] : params) names.emplace(p.storage().get(), name);
  const std::vector<std::string> slots = opt.slot_names();
  const auto& groups = opt.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      auto it = names.find(groups[g].params[i].storage().get());
      if (it == names.end()) continue;
      for (const std::string& slot : slots)
        fn(std::to_string(g) + "." + std::to_string(i) + "." + slot, it->second + "." + slot);
    }
  }
}

NamedTensors renamed(const Optimizer& opt, const NamedTensors& state, const NamedTensors& params,
                     bool to_names) {
  const std::map<std::string, Tensor> given(state.begin(), state.end());
  NamedTensors out;
  if (auto step = given.find("step"); step != given.end()) out.push_back(*step);
  for_each_slot(opt, params, [&](const std::string& place, const std::string& name) {
    auto it = given.find(to_names ? place : name);
    if (it != given.end()) out.emplace_back(to_names ? name : place, it->second);
  });
  return out;
}

}  // namespace

std::string parameter_of_slot(const std::string& slot) { return slot.substr(0, slot.rfind('.')); }

NamedTensors Optimizer::state_dict(const NamedTensors& params) const {
  return state_by_name(*this, state_dict(), params);
}

NamedTensors Optimizer::state_dict(const Module& module) const {
  return state_dict(module.named_parameters());
}

void Optimizer::load_state_dict(const NamedTensors& state, const NamedTensors& params) {
  std::map<std::string, const Tensor*> trained;  // the optimizer's parameters, by name
  std::map<const Storage*, const Tensor*> mine;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params) mine.emplace(p.storage().get(), &p);
  for (const auto& [name, p] : params)
    if (auto it = mine.find(p.storage().get()); it != mine.end()) trained.emplace(name, it->second);
  const std::vector<std::string> slots = slot_names();
  std::string kept;
  for (const std::string& slot : slots) kept += (kept.empty() ? "" : ", ") + slot;
  for (const auto& [key, value] : state) {
    if (key == "step") continue;
    // "fc.weight.exp_avg": slot "exp_avg" of "fc.weight" (no dot: all of it is the slot).
    const std::string slot = key.substr(key.rfind('.') + 1), param = parameter_of_slot(key);
    DLF_CHECK(std::find(slots.begin(), slots.end(), slot) != slots.end(), "optimizer state '", key,
              "': this optimizer keeps ", kept, " for each parameter, not '", slot,
              "' (state of another kind of optimizer?)");
    auto it = trained.find(param);
    DLF_CHECK(it != trained.end(), "optimizer state '", key, "': no parameter '", param,
              "' among those this optimizer trains; pass the model (or its named_parameters()) "
              "whose parameters the optimizer was made over");
    DLF_CHECK(value.shape() == it->second->shape(), "optimizer state '", key, "' has shape ",
              shape_str(value.shape()), ", parameter '", param, "' has ",
              shape_str(it->second->shape()));
  }
  load_state_dict(state_by_place(*this, state, params));
}

void Optimizer::load_state_dict(const NamedTensors& state, const Module& module) {
  load_state_dict(state, module.named_parameters());
}

NamedTensors state_by_name(const Optimizer& opt, const NamedTensors& state,
                           const NamedTensors& params) {
  return renamed(opt, state, params, true);
}

NamedTensors state_by_place(const Optimizer& opt, const NamedTensors& named,
                            const NamedTensors& params) {
  return renamed(opt, named, params, false);
}

}  // namespace dlf::nn::optim
