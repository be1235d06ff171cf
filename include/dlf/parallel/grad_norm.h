// The global gradient norm of a model split over model-parallel ranks (tensor, pipeline): each
// rank adds the squares of the gradients it counts — a parameter split over the tp group on
// every rank, a replicated one on one rank only — and the sums add up over the groups.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>
#include <dlf/nn/module.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Which parameters a rank counts in the global norm, and over which groups the ranks' sums add.
struct NormScope {
  /// Whether this rank counts `param`; empty: every parameter.
  std::function<bool(const Tensor& param)> counts;
  std::vector<Communicator*> groups;  ///< whose ranks' sums add up (tp, pp); empty: none
};

/// The scope counting the parameters of `named` whose name `counted` accepts, their sums adding
/// up over `groups`.
NormScope norm_scope_of(const nn::NamedTensors& named,
                        const std::function<bool(const std::string& name)>& counted,
                        std::vector<Communicator*> groups);
/// The sum of squares of the gradients of `params` that `scope` counts, in order (in f64).
double counted_squares(const std::vector<Tensor>& params, const NormScope& scope);
/// A sum of squares of gradients (an f64 scalar) read on the host. A meta device has no values:
/// there it is +inf, a norm above any clip, so that a planner's step scales every gradient as
/// a run's clipped step does.
double squares_on_host(const Tensor& squares);
/// `squares` summed over the ranks of `scope`'s groups, one group after the other (collective).
double add_over_groups(double squares, const NormScope& scope);
/// clip_grad_norm's norm in tensor ops, for a captured step: the counted squares summed on
/// the device, allreduced over the groups (ops a graph captures) and their root, an f64 scalar
/// (nn::optim::NormFn; the same bits as the norm clip_grad_norm computes on the host).
Tensor global_norm_on_device(const std::vector<Tensor>& params, const NormScope& scope);
/// The global L2 norm of the gradients of `params`, each element once as `scope` counts them;
/// every gradient is scaled to `max_norm` if above (collective over the groups). With an empty
/// scope, nn::optim::clip_grad_norm bit for bit.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, const NormScope& scope);

}  // namespace dlf::parallel
