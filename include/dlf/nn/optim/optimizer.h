// Optimizers over parameter groups: SGD (momentum, Nesterov), Adam and AdamW.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dlf/nn/module.h>

namespace dlf::nn::optim {

/// Parameters that share options, as PyTorch's param_groups: an option left empty takes the
/// optimizer's own (so `{{.params = a}, {.params = b, .lr = 1e-4}}` trains b ten times slower).
struct ParamGroup {
  std::vector<Tensor> params = {};          ///< the tensors the group trains
  std::optional<double> lr = {};            ///< empty: the optimizer's
  std::optional<double> weight_decay = {};  ///< empty: the optimizer's
};

/// Two groups in the nanoGPT way: weight_decay on matrices and embeddings (dim >= 2), none on
/// biases and norm gains (dim < 2).
std::vector<ParamGroup> decay_groups(const NamedTensors& params, double weight_decay);

/// An optimizer over parameter groups (torch.optim.Optimizer).
class Optimizer {
 public:
  /// Fills every group's unset lr and weight_decay with these.
  Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay);
  virtual ~Optimizer() = default;
  /// Counts the step and updates every parameter that has a gradient (under no_grad):
  /// begin_step(), then update().
  void step();
  /// Counts a step and sets, on the host, what its updates read (each group's learning rate
  /// and the step count, in tensors on the parameters' device): before a captured step.
  void begin_step();
  /// Updates every parameter that has a gradient (under no_grad) with what begin_step() set.
  /// A capturable() optimizer dispatches device ops only, reading no value on the host, so a
  /// captured training step (graph::capture) can hold its update: replayed, it reads the
  /// learning rate and step count of that step.
  void update();
  /// Whether update() reads its learning rate and step count from tensors (Adam, AdamW) rather
  /// than holding them as constants in its ops (SGD): whether a captured step may hold it.
  virtual bool capturable() const { return false; }
  /// Makes every parameter's state now, as its first update would (Adam: zero moments), so that
  /// a step captured before any update finds it and updates it in place.
  void init_state();
  /// Whether every parameter that has a gradient has all its slots (init_state() or an update
  /// made them): what a captured update needs.
  bool state_ready() const;
  /// Drops every parameter's gradient.
  void zero_grad();
  /// The first group's learning rate.
  double lr() const { return *groups_.front().lr; }
  /// Sets every group's learning rate (a schedule scales each group's own: LRScheduler).
  void set_lr(double lr);
  /// Steps counted so far (step() and begin_step() calls).
  int64_t steps() const { return steps_; }
  /// Step count and per-parameter state, named "<group>.<index>.<slot>" ("0.3.exp_avg").
  NamedTensors state_dict() const;
  /// Restores what state_dict() gave, into the state tensors there already where they fit (so
  /// that a captured step goes on updating them); a dlf::Error names a missing or mis-shaped
  /// entry.
  void load_state_dict(const NamedTensors& state);
  /// The state with each slot named by its parameter ("fc.weight.exp_avg", state_by_name), as
  /// a checkpoint keeps it (Checkpoint::optimizer): `params` names the optimizer's parameters.
  NamedTensors state_dict(const NamedTensors& params) const;
  /// state_dict(module.named_parameters()).
  NamedTensors state_dict(const Module& module) const;
  /// Restores state named by parameter, as nn::load_checkpoint returns it (the optimizer
  /// state of a checkpoint of `dlf train` or of state_dict(params)), however this optimizer
  /// groups and orders its parameters. A dlf::Error names the slot and its parameter when the
  /// parameter is not in `params` or not trained by this optimizer, the slot is not one this
  /// kind of optimizer keeps, or its shape is not the parameter's.
  void load_state_dict(const NamedTensors& state, const NamedTensors& params);
  /// load_state_dict(state, module.named_parameters()).
  void load_state_dict(const NamedTensors& state, const Module& module);

  /// An optimizer of the same kind and options over other groups (their lr and weight_decay
  /// as given, else this one's defaults), with no state: what a sharded optimizer runs over
  /// its pieces of the parameters.
  virtual std::unique_ptr<Optimizer> same_kind(std::vector<ParamGroup> groups) const = 0;
  /// The groups, their lr and weight_decay always set; a group's lr may be changed.
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// The groups, to change a group's lr.
  std::vector<ParamGroup>& param_groups() { return groups_; }
  /// The slots of one parameter (empty until its first update or init_state()).
  std::vector<Tensor>& state(size_t group, size_t index) { return state_[group][index]; }
  /// The names of a parameter's slots ("exp_avg", "exp_avg_sq").
  virtual std::vector<std::string> slot_names() const = 0;

  /// ZeRO-Offload (Ren et al. 2021): keeps the state and a master copy of each parameter on
  /// `host` and runs the update there; each step every gradient goes down to the host and the
  /// updated parameter comes back up (from a sim device over its host link, on its host
  /// stream: the sim clock charges the copies, not the host's own arithmetic). The device
  /// then holds no optimizer state. The results are the same; called after some steps, it
  /// moves the state they made.
  void offload(Device host = kCPU);
  /// Where offload() put the state and the update (none: with the parameters).
  std::optional<Device> offloaded_to() const { return host_; }

 protected:
  /// What one parameter's update reads of its group and step.
  struct GroupStep {
    /// the group's learning rate and weight decay, on the host
    ///@{
    double lr, weight_decay;
    ///@}
    Tensor lr_and_step;  ///< {lr, step} (f64, on the updated parameter's device)
  };
  /// Updates one parameter in place; `state` holds its slots (created on first use, or by
  /// create_state()).
  virtual void update_parameter(Tensor& param, const Tensor& grad, const GroupStep& step,
                                std::vector<Tensor>& state) = 0;
  /// Makes the slots its first update would of a parameter of that shape and dtype, on `device`
  /// (where the update runs); by default none.
  virtual void create_state(const Shape& shape, DType dtype, Device device,
                            std::vector<Tensor>& state);
  /// begin_step()'s tensor of `group` for updates on `device`.
  Tensor lr_and_step(size_t group, Device device) const;

 private:
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<Tensor>> lr_and_step_;         // [group][a device its updates run on]
  std::vector<std::vector<std::vector<Tensor>>> state_;  // [group][param][slot]
  int64_t steps_ = 0;
  std::optional<Device> host_;                // offload()
  std::vector<std::vector<Tensor>> masters_;  // [group][param], on host_, once updated
};

/// SGD's options.
struct SGDOptions {
  double lr = 1e-3;         ///< learning rate
  double momentum = 0;      ///< 0: plain SGD
  bool nesterov = false;    ///< Nesterov momentum (needs momentum > 0)
  double weight_decay = 0;  ///< L2, added to the gradient
};
/// PyTorch's SGD: buf = momentum·buf + g (buf = g on the first step); p -= lr·(g + momentum·buf)
/// with Nesterov, else p -= lr·buf.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});  ///< over `params`, one group
  SGD(std::vector<ParamGroup> groups, SGDOptions options = {});       ///< over parameter groups
  std::vector<std::string> slot_names() const override { return {"momentum_buffer"}; }
  std::unique_ptr<Optimizer> same_kind(std::vector<ParamGroup> groups) const override;

 protected:
  void update_parameter(Tensor& p, const Tensor& g, const GroupStep& step,
                        std::vector<Tensor>& state) override;

 private:
  SGDOptions o_;
};

/// PyTorch's Adam defaults; weight_decay is L2 (added to the gradient).
struct AdamOptions {
  double lr = 1e-3;  ///< learning rate
  /// the moments' decay rates
  ///@{
  double beta1 = 0.9, beta2 = 0.999;
  ///@}
  double eps = 1e-8;        ///< added to the root of the second moment
  double weight_decay = 0;  ///< L2, added to the gradient
};
/// Adam with bias correction.
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params,
                AdamOptions options = {});                         ///< over `params`, one group
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {});  ///< over parameter groups
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  std::unique_ptr<Optimizer> same_kind(std::vector<ParamGroup> groups) const override;
  /// Yes: adam_update_ reads the learning rate and step from begin_step()'s tensor.
  bool capturable() const override { return true; }

 protected:
  /// decoupled: AdamW's weight decay, p -= lr·wd·p, instead of L2.
  Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled);
  void update_parameter(Tensor& p, const Tensor& g, const GroupStep& step,
                        std::vector<Tensor>& state) override;
  void create_state(const Shape& shape, DType dtype, Device device,
                    std::vector<Tensor>& state) override;

 private:
  AdamOptions o_;
  bool decoupled_;
};

/// PyTorch's AdamW defaults: its weight decay is decoupled and 0.01 unless given.
struct AdamWOptions {
  double lr = 1e-3;  ///< learning rate
  /// the moments' decay rates
  ///@{
  double beta1 = 0.9, beta2 = 0.999;
  ///@}
  double eps = 1e-8;           ///< added to the root of the second moment
  double weight_decay = 1e-2;  ///< decoupled weight decay (PyTorch's default 0.01)
};
/// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay.
class AdamW : public Adam {
 public:
  /// Over `params`, one group.
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});  ///< over parameter groups
};

/// An optimizer's state_dict() with each parameter's slots named after the parameter
/// ("transformer.wte.weight.exp_avg") instead of its place ("0.0.exp_avg"): the form
/// checkpoints keep, which loads into any model holding those parameters however it groups,
/// orders or shards them. `params` names the optimizer's parameters (named_parameters()).
NamedTensors state_by_name(const Optimizer& opt, const NamedTensors& state,
                           const NamedTensors& params);
/// The parameter a slot of state_by_name() belongs to: "transformer.wte.weight.exp_avg" ->
/// "transformer.wte.weight".
std::string parameter_of_slot(const std::string& slot);
/// The inverse, for load_state_dict(): the slots `named` has for the parameters of `opt` that
/// `params` names, under their places, and the step.
NamedTensors state_by_place(const Optimizer& opt, const NamedTensors& named,
                            const NamedTensors& params);

/// Scales the gradients of `params` so their global L2 norm is at most max_norm; returns the
/// norm before clipping.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
/// The global L2 norm of the gradients of `params` in tensor ops (an f64 scalar on their device;
/// undefined when none has a gradient): what a captured step clips by.
using NormFn = std::function<Tensor(const std::vector<Tensor>& params)>;
/// The NormFn of one device's gradients, as clip_grad_norm sums them.
Tensor grad_norm_on_device(const std::vector<Tensor>& params);
/// clip_grad_norm in tensor ops only, for a captured step: the norm `norm_of` gives (a model
/// split over ranks: parallel::global_norm_on_device), every gradient multiplied by
/// min(1, max_norm / (norm + 1e-6)) — by 1 when the norm is within max_norm, which leaves it as
/// clip_grad_norm does, bit for bit. Undefined when the norm is.
Tensor clip_grad_norm_on_device(const std::vector<Tensor>& params, double max_norm,
                                const NormFn& norm_of = grad_norm_on_device);
/// What a captured training step runs after backward: clip_grad_norm_on_device, then `opt`'s
/// update() (`opt` capturable, begin_step() called before the step), outside autocast as an
/// eager step runs them. Returns the norm before clipping.
Tensor clip_and_update(Optimizer& opt, const std::vector<Tensor>& params, double max_norm,
                       const NormFn& norm_of = grad_norm_on_device);
/// clip_grad_norm's second half, for a caller that computed the global norm itself (a
/// sharded optimizer): scales the gradients of `params` when `total_norm` exceeds max_norm.
void scale_gradients(const std::vector<Tensor>& params, double total_norm, double max_norm);

}  // namespace dlf::nn::optim
