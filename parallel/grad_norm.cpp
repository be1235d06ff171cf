#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/optim.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/grad_norm.h>

#include <cmath>
#include <limits>
#include <set>

namespace dlf::parallel {

NormScope norm_scope_of(const nn::NamedTensors& named,
                        const std::function<bool(const std::string& name)>& counted,
                        std::vector<Communicator*> groups) {
  std::set<const Storage*> storages;
  for (const auto& [name, p] : named)
    if (counted(name)) storages.insert(p.storage().get());
  return {.counts = [storages](const Tensor& p) { return storages.contains(p.storage().get()); },
          .groups = std::move(groups)};
}

double squares_on_host(const Tensor& squares) {
  if (!squares.device().has_data()) return std::numeric_limits<double>::infinity();
  return squares.item<double>();
}

namespace {
std::vector<Tensor> counted_gradients(const std::vector<Tensor>& params, const NormScope& scope) {
  std::vector<Tensor> counted;
  for (const Tensor& p : params) {
    if (p.grad().defined() && (!scope.counts || scope.counts(p))) counted.push_back(p.grad());
  }
  return counted;
}
}  // namespace

double counted_squares(const std::vector<Tensor>& params, const NormScope& scope) {
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> counted = counted_gradients(params, scope);
  return counted.empty() ? 0 : squares_on_host(sum_squares(counted));
}

Tensor global_norm_on_device(const std::vector<Tensor>& params, const NormScope& scope) {
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> counted = counted_gradients(params, scope);
  const Device device =
      scope.groups.empty() ? params.front().device() : scope.groups.front()->device();
  Tensor total = counted.empty() ? zeros({1}, {.dtype = DType::f64, .device = device})
                                 : sum_squares(counted).reshape({1}).clone();
  for (Communicator* group : scope.groups) group->allreduce(total);
  return sqrt(total).reshape({});
}

double add_over_groups(double squares, const NormScope& scope) {
  if (scope.groups.empty()) return squares;
  Tensor total =
      full({1}, squares, {.dtype = DType::f64, .device = scope.groups.front()->device()});
  for (Communicator* group : scope.groups) group->allreduce(total);
  return squares_on_host(total);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, const NormScope& scope) {
  const double norm = std::sqrt(add_over_groups(counted_squares(params, scope), scope));
  nn::optim::scale_gradients(params, norm, max_norm);
  return norm;
}

}  // namespace dlf::parallel
