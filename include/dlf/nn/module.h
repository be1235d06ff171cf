// Module: named parameters, buffers and child modules, with PyTorch's state_dict naming.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::nn {

/// Tensors by dotted name ("transformer.h.0.attn.c_attn.weight"), in registration order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter (leaves that require grad) of this module and its children. A tensor
  /// registered under two names (tied weights) is listed once, under its first name.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  /// Parameters and buffers by name (tied tensors under each of their names).
  NamedTensors state_dict() const;
  /// Copies values into the module's tensors. Every name must match in both directions and
  /// every shape must agree; otherwise a dlf::Error names the tensor and nothing is changed.
  void load_state_dict(const NamedTensors& state);
  int64_t num_parameters() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Moves (or converts) every parameter and buffer in place; handles stay valid.
  void to(Device device);
  void to(DType dtype);
  /// Drops every parameter's gradient.
  void zero_grad();

  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

 protected:
  /// Registers a leaf parameter (it is marked requires_grad) and returns it.
  Tensor register_parameter(std::string name, Tensor value);
  Tensor register_buffer(std::string name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void collect(const std::string& prefix, bool parameters, bool buffers, NamedTensors& out) const;
  NamedTensors parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace dlf::nn
