// ModuleList: children named "0", "1", ... (the `h.{i}` of a transformer stack).
#pragma once
#include <memory>
#include <vector>

#include <dlf/nn/module.h>

namespace dlf::nn {

template <typename M>
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<M> module) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(module)));
  }
  size_t size() const { return items_.size(); }
  M& operator[](size_t i) const { return *items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace dlf::nn
