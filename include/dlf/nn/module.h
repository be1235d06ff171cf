// Module: named parameters, buffers and child modules, with PyTorch's state_dict naming.
#pragma once
#include <concepts>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dlf/autograd/checkpoint.h>
#include <dlf/core/named_tensors.h>
#include <dlf/core/tensor.h>

namespace dlf::nn {

template <typename M>
class ModuleHolder;

/// Tensors by dotted name, in registration order (dlf::NamedTensors).
using NamedTensors = dlf::NamedTensors;

/// The base of every layer and model (torch.nn.Module): named parameters, buffers and children,
/// state_dict, train/eval, devices.
class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter (leaves that require grad) of this module and its children. A tensor
  /// registered under two names (tied weights) is listed once, under its first name.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;  ///< named_parameters() without the names
  NamedTensors named_buffers() const;  ///< every buffer (state that is not trained), by dotted name
  /// Parameters and buffers by name (tied tensors under each of their names).
  NamedTensors state_dict() const;
  /// What load_state_dict found: the module's names `state` did not give, and the names of
  /// `state` the module does not have (PyTorch's missing_keys and unexpected_keys).
  struct LoadResult {
    /// names of the module's tensors `state` lacked; names of `state` the module lacks
    ///@{
    std::vector<std::string> missing, unexpected;
    ///@}
  };
  /// Copies values into the module's tensors. A tied tensor (one tensor under several names,
  /// as GPT's lm_head.weight and wte.weight) is loaded from whichever of its names `state` has.
  /// Strict: every tensor must be given and every name known; otherwise a dlf::Error names the
  /// first that is not and nothing is changed. Not strict: what is given and known is loaded,
  /// and the result lists the rest. A wrong shape is always a dlf::Error, before any copy.
  LoadResult load_state_dict(const NamedTensors& state, bool strict = true);
  int64_t num_parameters() const;  ///< elements of every parameter (tied ones once)

  void train(bool on = true);  ///< training mode (dropout on) for it and its children, or eval
  /// Train(false)
  void eval() { train(false); }
  /// Whether in training mode.
  bool is_training() const { return training_; }
  /// Moves (or converts) every parameter and buffer in place; handles stay valid.
  void to(Device device);
  void to(DType dtype);  ///< converts every floating parameter and buffer in place
  /// Gives every parameter and buffer fresh, uninitialised storage on `device` (same shapes and
  /// dtypes, handles valid): how a model built on kMeta gets memory before load_state_dict.
  void to_empty(Device device);
  /// Drops every parameter's gradient.
  void zero_grad();
  /// Activation recompute for this module and every module in it (Hugging Face's
  /// gradient_checkpointing_enable): the blocks that honour it — nn::TransformerBlock (GPT,
  /// ViT), BERT's layers, UNet's resnet blocks — keep only their input for backward (full), or
  /// their input and the outputs of their matmuls, convolutions and attention (selective),
  /// and recompute the rest there (autograd::checkpoint); the gradients are unchanged.
  void recompute(autograd::Recompute what = autograd::Recompute::full);
  /// What recompute() set (Recompute::none by default).
  autograd::Recompute recomputes() const { return recompute_; }

  /// A block: the unit that activation recompute and ZeRO-3 act on; its forward goes through
  /// run_block().
  virtual bool is_block() const { return false; }
  /// What runs around a block's forward (ZeRO-3 gathers the block's parameters before it and
  /// frees them after, parallel/fsdp.h).
  struct BlockHooks {
    std::function<void()> before_forward;                     ///< before the block's forward
    std::function<void(const Tensor& output)> after_forward;  ///< after it, with its output
  };
  /// Installs `hooks` around this block's forward (null: none).
  void set_block_hooks(std::shared_ptr<const BlockHooks> hooks) { block_hooks_ = std::move(hooks); }

  /// The direct children, by name, in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

  /// The module's type as PyTorch prints it ("Linear"), and its own settings
  /// ("in_features=784, out_features=64, bias=true"; empty by default).
  virtual std::string type_name() const;
  /// Its settings, as PyTorch's extra_repr (empty by default).
  virtual std::string extra_repr() const { return {}; }
  /// PyTorch's repr: the tree of modules, each with its settings, and the shapes of the
  /// parameters and buffers of modules that print no settings of their own.
  std::string str() const;

 protected:
  /// Registers a leaf parameter (it is marked requires_grad) and returns it.
  Tensor register_parameter(std::string name, Tensor value);
  /// Registers state that is saved but not trained.
  Tensor register_buffer(std::string name, Tensor value);
  template <typename M>
  /// Registers a child module under `name` and returns it.
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    DLF_CHECK(module != nullptr, "register_module('", name, "'): no module (a null pointer)");
    adopt(*module, name);
    children_.emplace_back(std::move(name), module);
    return module;
  }
  /// Registers a module held in a ModuleHolder (DLF_MODULE) and returns the holder.
  template <typename M>
  ModuleHolder<M> register_module(std::string name, ModuleHolder<M> module) {
    register_module(std::move(name), module.ptr());
    return module;
  }
  /// Registers `module`, a member of this module held by value, which lives exactly as long as
  /// this one: `nn::Linear fc{784, 64};` in the class, `register_module("fc", fc);` in its
  /// constructor.
  template <typename M>
  requires std::derived_from<M, Module> M& register_module(std::string name, M& module) {
    register_module(std::move(name), std::shared_ptr<M>(std::shared_ptr<M>(), &module));
    return module;
  }
  /// A block's forward: body(inputs) between the block hooks, recomputed in backward when
  /// recompute() is on.
  Tensor run_block(const std::function<Tensor(const std::vector<Tensor>&)>& body,
                   const std::vector<Tensor>& inputs) const;
  /// Makes a child in place and registers it: `fc = make_module<Linear>("fc", 784, 64);`.
  template <typename M, typename... Args>
  std::shared_ptr<M> make_module(std::string name, Args&&... args) {
    return register_module(std::move(name), std::make_shared<M>(std::forward<Args>(args)...));
  }

 private:
  void collect(const std::string& prefix, bool parameters, bool buffers, NamedTensors& out) const;
  // A child registered the first time: it and its modules get their paths under this one.
  void adopt(Module& child, const std::string& name);
  NamedTensors parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  autograd::Recompute recompute_ = autograd::Recompute::none;
  std::shared_ptr<const BlockHooks> block_hooks_;
  std::string path_;         // from the outermost module ("transformer.h.3"; "" for it)
  bool registered_ = false;  // a child of some module already
};

/// Prints module.str().
std::ostream& operator<<(std::ostream& os, const Module& module);

/// Call syntax, as libtorch gives it: `fc(x)` is `fc.forward(x)` (with any arguments forward
/// takes). Every layer of nn/ derives from it; a module of your own gets it the same way:
/// `struct Net : nn::Module, nn::Callable<Net> { Tensor forward(const Tensor& x); };`.
template <typename Self>
class Callable {
 public:
  /// forward(args...)
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return static_cast<const Self&>(*this).forward(std::forward<Args>(args)...);
  }
  /// forward(args...), for a forward that is not const
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    return static_cast<Self&>(*this).forward(std::forward<Args>(args)...);
  }
};

/// A shared handle to a module, as libtorch's ModuleHolder: copies share the module, `->`
/// reaches it, `h(x)` calls its forward. `nn::ModuleHolder<nn::Linear> fc{784, 64};` makes
/// one; DLF_MODULE(Net) names the holder of a class NetImpl, as TORCH_MODULE does.
template <typename M>
class ModuleHolder {
 public:
  /// A new M from `args` (M's default constructor when there are none).
  template <typename... Args>
  requires std::constructible_from<M, Args...>
  explicit ModuleHolder(Args&&... args)
      : module_(std::make_shared<M>(std::forward<Args>(args)...)) {}
  /// Empty, to be assigned later (libtorch's `Linear fc{nullptr};`).
  ModuleHolder(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): as libtorch's
  /// Holds `module`.
  ModuleHolder(std::shared_ptr<M> module) : module_(std::move(module)) {}  // NOLINT: as libtorch's

  /// The module; a dlf::Error when empty.
  ///@{
  M* operator->() const { return get(); }
  M& operator*() const { return *get(); }
  M* get() const {
    DLF_CHECK(module_ != nullptr,
              "an empty module holder (made from nullptr): assign it a module before use");
    return module_.get();
  }
  ///@}
  /// The shared pointer it holds (null when empty).
  const std::shared_ptr<M>& ptr() const { return module_; }
  /// Whether it holds no module.
  bool is_empty() const { return module_ == nullptr; }
  /// The module's forward(args...).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<M> module_;
};

}  // namespace dlf::nn

/// `DLF_MODULE(Net);` after `class NetImpl : public dlf::nn::Module {...};` names its holder
/// `Net` (dlf::nn::ModuleHolder<NetImpl>), as libtorch's TORCH_MODULE: `Net net; net(x);
/// net->parameters();`.
#define DLF_MODULE(Name) using Name = ::dlf::nn::ModuleHolder<Name##Impl>
