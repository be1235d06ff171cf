#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/parallel/zero.h>

#include <algorithm>

namespace dlf::parallel {

ZeroOptimizer::ZeroOptimizer(nn::optim::Optimizer& optimizer, Communicator& comm)
    : opt_(optimizer), comm_(comm) {
  // Greedy by size, in parameter order: each parameter to the rank holding the fewest bytes.
  std::vector<int64_t> load(comm.size(), 0);
  for (const nn::optim::ParamGroup& g : opt_.param_groups()) {
    std::vector<int>& owners = owners_.emplace_back();
    for (const Tensor& p : g.params) {
      const int r = int(std::min_element(load.begin(), load.end()) - load.begin());
      owners.push_back(r);
      load[r] += int64_t(p.nbytes());
    }
  }
  const int me = comm.rank();
  opt_.set_update_filter(
      [this, me](size_t group, size_t index) { return owners_[group][index] == me; });
}

void ZeroOptimizer::step() {
  opt_.step();
  autograd::NoGradGuard no_grad;
  for (size_t g = 0; g < owners_.size(); ++g) {
    for (size_t i = 0; i < owners_[g].size(); ++i) {
      Tensor p = opt_.param_groups()[g].params[i];
      comm_.broadcast(p, owners_[g][i]);
    }
  }
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
