#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/optim.h>
#include <dlf/parallel/zero.h>

#include <algorithm>
#include <cmath>

namespace dlf::parallel {

ZeroOptimizer::ZeroOptimizer(nn::optim::Optimizer& optimizer, Communicator& comm)
    : opt_(optimizer), comm_(comm) {
  // Greedy by size, in parameter order: each parameter to the rank holding the fewest.
  std::vector<int64_t> load(comm.size(), 0);
  const auto& groups = opt_.param_groups();
  for (const nn::optim::ParamGroup& g : groups) {
    std::vector<int>& owners = owners_.emplace_back();
    std::vector<int64_t>& offsets = offsets_.emplace_back();
    for (const Tensor& p : g.params) {
      DLF_CHECK(p.dtype() == groups[0].params[0].dtype() && p.is_contiguous(),
                "ZeroOptimizer: parameters must be contiguous and share one dtype");
      const int r = int(std::min_element(load.begin(), load.end()) - load.begin());
      owners.push_back(r);
      owner_of_[p.storage().get()] = r;
      offsets.push_back(load[r]);
      load[r] += p.numel();
    }
  }
  largest_share_ = *std::max_element(load.begin(), load.end());
  const int me = comm.rank();
  opt_.set_update_filter(
      [this, me](size_t group, size_t index) { return owners_[group][index] == me; });
}

void ZeroOptimizer::step() {
  opt_.step();
  autograd::NoGradGuard no_grad;
  const auto& groups = opt_.param_groups();
  const Tensor& any = groups[0].params[0];
  std::vector<Tensor> mine;  // in offset order: the order ownership was handed out
  int64_t filled = 0;
  for (size_t g = 0; g < owners_.size(); ++g) {
    for (size_t i = 0; i < owners_[g].size(); ++i) {
      if (owners_[g][i] != comm_.rank()) continue;
      mine.push_back(groups[g].params[i].reshape({-1}));
      filled += groups[g].params[i].numel();
    }
  }
  if (filled < largest_share_)
    mine.push_back(
        zeros({largest_share_ - filled}, {.dtype = any.dtype(), .device = any.device()}));
  const Tensor all = comm_.allgather(mine.size() == 1 ? mine[0].contiguous() : cat(mine, 0));
  for (size_t g = 0; g < owners_.size(); ++g) {
    for (size_t i = 0; i < owners_[g].size(); ++i) {
      const int owner = owners_[g][i];
      if (owner == comm_.rank()) continue;
      Tensor p = groups[g].params[i];
      p.copy_(all.narrow(0, owner * largest_share_ + offsets_[g][i], p.numel()).reshape(p.shape()));
    }
  }
}

double ZeroOptimizer::clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  autograd::NoGradGuard no_grad;
  std::vector<double> squares(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = owner_of_.find(params[i].storage().get());
    DLF_CHECK(it != owner_of_.end(), "ZeroOptimizer::clip_grad_norm: parameter ", i,
              " is not one of the optimizer's");
    if (it->second == comm_.rank() && params[i].grad().defined())
      squares[i] = sum_squares(params[i].grad()).item<double>();
  }
  // Each entry is non-zero on its owner only, so the sum over the ranks is exact.
  Tensor all = from_vector(squares, {int64_t(squares.size())}).to(comm_.device());
  comm_.allreduce(all);
  double total = 0;
  for (double s : all.to_vector<double>()) total += s;
  total = std::sqrt(total);
  std::vector<Tensor> mine;
  for (const Tensor& p : params) {
    if (owner_of_.at(p.storage().get()) == comm_.rank()) mine.push_back(p);
  }
  nn::optim::scale_gradients(mine, total, max_norm);
  return total;
}

nn::NamedTensors ZeroOptimizer::consolidated_state_dict() {
  autograd::NoGradGuard no_grad;
  const size_t slots = opt_.slot_names().size();
  for (size_t g = 0; g < owners_.size(); ++g) {
    for (size_t i = 0; i < owners_[g].size(); ++i) {
      const int owner = owners_[g][i];
      const Tensor& p = opt_.param_groups()[g].params[i];
      std::vector<Tensor>& state = opt_.state(g, i);
      // Whether the owner has state for it (a parameter that never had a gradient has none).
      Tensor has = full({1}, state.size() == slots ? 1 : 0, {.dtype = DType::i64});
      comm_.broadcast(has, owner);
      if (has.item<int64_t>() == 0) continue;
      if (comm_.rank() != owner) {
        state.assign(slots, Tensor());
        for (Tensor& s : state) s = zeros(p.shape(), {.dtype = p.dtype(), .device = p.device()});
      }
      for (Tensor& s : state) comm_.broadcast(s, owner);
    }
  }
  nn::NamedTensors whole = opt_.state_dict();
  drop_unowned_state();
  return whole;
}

void ZeroOptimizer::load_state_dict(const nn::NamedTensors& state) {
  opt_.load_state_dict(state);
  drop_unowned_state();
}

void ZeroOptimizer::drop_unowned_state() {
  for (size_t g = 0; g < owners_.size(); ++g) {
    for (size_t i = 0; i < owners_[g].size(); ++i) {
      if (owners_[g][i] != comm_.rank()) opt_.state(g, i).clear();
    }
  }
}

}  // namespace dlf::parallel
