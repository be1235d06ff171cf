// ModuleList: children named "0", "1", ... (the `h.{i}` of a transformer stack); Sequential:
// modules applied one after the other.
#pragma once
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <dlf/nn/module.h>

namespace dlf::nn {

template <typename M>
/// Modules in a list, registered as "0", "1", ... (torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  /// Appends and registers `module`.
  void push_back(std::shared_ptr<M> module) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(module)));
  }
  /// How many.
  size_t size() const { return items_.size(); }
  /// The i-th (a dlf::Error past the end)
  M& operator[](size_t i) const { return *items_.at(i); }
  /// Iterates the modules (shared pointers)
  auto begin() const { return items_.begin(); }
  /// Iterates the modules (shared pointers)
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

/// Applies its modules in order, each one's output the next one's input, as torch.nn.Sequential:
/// `Sequential net(std::make_shared<Linear>(784, 64), std::make_shared<ReLU>());` or
/// `net.add<Linear>(784, 64).add<ReLU>()`. A module joins if it has forward(Tensor) -> Tensor.
class Sequential : public Module, public Callable<Sequential> {
 public:
  Sequential() = default;
  template <typename... M>
  /// Modules applied in order.
  explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }
  template <typename M>
  /// Appends `module` (registered as its index).
  Sequential& push_back(std::shared_ptr<M> module) {
    const std::shared_ptr<M> m = register_module(std::to_string(steps_.size()), std::move(module));
    steps_.emplace_back([m](const Tensor& x) { return m->forward(x); });
    return *this;
  }
  /// Appends the module `module` holds.
  template <typename M>
  Sequential& push_back(const ModuleHolder<M>& module) {
    return push_back(module.ptr());
  }
  /// Makes a module in place and appends it.
  template <typename M, typename... Args>
  Sequential& add(Args&&... args) {
    return push_back(std::make_shared<M>(std::forward<Args>(args)...));
  }
  /// Each module's forward on the last one's output.
  Tensor forward(const Tensor& x) const {
    Tensor y = x;
    for (const auto& step : steps_) y = step(y);
    return y;
  }
  /// How many modules.
  size_t size() const { return steps_.size(); }

 private:
  std::vector<std::function<Tensor(const Tensor&)>> steps_;
};

}  // namespace dlf::nn
