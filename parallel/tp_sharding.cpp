#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/tensor_parallel.h>
#include <dlf/parallel/tp_sharding.h>

#include <algorithm>
#include <map>

namespace dlf::parallel {

Tensor shard_of(Split split, const Tensor& whole, const Communicator& group) {
  const int64_t n = group.size(), r = group.rank();
  auto part = [&](const Tensor& t, int64_t dim) {  // this rank's n-th of dim
    const int64_t k = t.size(dim) / n;
    return t.narrow(dim, r * k, k);
  };
  switch (split) {
    case Split::none:
      return whole;
    case Split::rows:
      return part(whole, 0);
    case Split::columns:
      return part(whole, 1);
    case Split::qkv_rows: {
      const int64_t C = whole.size(0) / 3;
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < 3; ++i) parts.push_back(part(whole.narrow(0, i * C, C), 0));
      return cat(parts, 0);
    }
    case Split::vocab_rows: {
      const int64_t V = whole.size(0), k = vocab_shard_rows(V, int(n));
      const int64_t start = std::min(r * k, V), words = std::min(k, V - start);
      const Tensor mine = whole.narrow(0, start, words);
      if (words == k) return mine;
      Shape padding = whole.shape();
      padding[0] = k - words;
      return cat({mine, zeros(padding, {.dtype = whole.dtype(), .device = whole.device()})}, 0);
    }
  }
  return whole;
}

Tensor gather_of(Split split, const Tensor& shard, Communicator& group, int64_t vocab) {
  autograd::NoGradGuard no_grad;
  if (group.size() == 1) return shard.clone();
  const int64_t n = group.size();
  switch (split) {
    case Split::none:
      return shard.clone();
    case Split::rows:
      return group.allgather(shard.contiguous());
    case Split::columns:
      return group.allgather(shard.transpose(0, 1).contiguous()).transpose(0, 1).contiguous();
    case Split::qkv_rows: {
      // Rank blocks [q_r; k_r; v_r] back into [q; k; v].
      const Tensor all = group.allgather(shard.contiguous());
      Shape blocks = {n, 3, shard.size(0) / 3};
      for (int64_t d = 1; d < shard.dim(); ++d) blocks.push_back(shard.size(d));
      Shape order = {1, 0};
      for (int64_t d = 2; d < int64_t(blocks.size()); ++d) order.push_back(d);
      Shape shape = shard.shape();
      shape[0] *= n;
      return all.view(blocks).permute(order).contiguous().reshape(shape);
    }
    case Split::vocab_rows:
      DLF_CHECK(vocab > 0, "gather_of: a vocabulary-parallel table needs its vocabulary size");
      return group.allgather(shard.contiguous()).narrow(0, 0, vocab).contiguous();
  }
  return shard.clone();
}

void load_shards(nn::Module& module, const nn::NamedTensors& whole, const SplitRule& rule,
                 const Communicator& group) {
  const std::map<std::string, Tensor> given(whole.begin(), whole.end());
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : module.named_parameters()) {
    auto it = given.find(name);
    DLF_CHECK(it != given.end(), "load_shards: no '", name, "' in the state");
    const Tensor s = shard_of(rule(name), it->second, group);
    DLF_CHECK(s.shape() == p.shape(), "load_shards: '", name, "' of shape ",
              shape_str(it->second.shape()), " gives a shard ", shape_str(s.shape()), ", expected ",
              shape_str(p.shape()));
    p.copy_(s.to(p.device()));
  }
}

nn::NamedTensors gather_state_dict(const nn::Module& module, const SplitRule& rule,
                                   Communicator& group) {
  nn::NamedTensors whole;
  for (const auto& [name, t] : module.state_dict())
    whole.emplace_back(name, gather_of(rule(name), t, group));
  return whole;
}

nn::NamedTensors shard_state(const nn::NamedTensors& whole, const SplitRule& rule,
                             const Communicator& group) {
  nn::NamedTensors mine;
  for (const auto& [name, t] : whole)
    mine.emplace_back(
        name, name == "step" ? t : shard_of(rule(nn::optim::parameter_of_slot(name)), t, group));
  return mine;
}

nn::NamedTensors gather_state(const nn::NamedTensors& shards, const SplitRule& rule,
                              Communicator& group) {
  nn::NamedTensors whole;
  for (const auto& [name, t] : shards)
    whole.emplace_back(
        name, name == "step" ? t : gather_of(rule(nn::optim::parameter_of_slot(name)), t, group));
  return whole;
}

}  // namespace dlf::parallel
