// What the parallel layouts are compared with: a whole GPT trained on one device.
#pragma once
#include <vector>

#include <dlf/dlf.h>
#include <dlf/models/gpt.h>

namespace dlf::test {

struct OneDeviceRun {
  nn::NamedTensors initial;    ///< the model's starting parameters (copies)
  std::vector<double> losses;  ///< one per batch
};

/// Builds `config` from `seed`, then takes an SGD step (lr 0.1, momentum 0.9) on each batch,
/// the gradients clipped to `clip` when it is positive.
inline OneDeviceRun train_one_device(const models::GPTConfig& config, uint64_t seed,
                                     const std::vector<Tensor>& xs, const std::vector<Tensor>& ys,
                                     double clip = 0) {
  manual_seed(seed);
  models::GPT whole(config);
  OneDeviceRun run;
  for (auto& [name, t] : whole.state_dict()) run.initial.emplace_back(name, t.clone());
  nn::optim::SGD opt({{.params = whole.parameters()}}, {.lr = 0.1, .momentum = 0.9});
  for (size_t s = 0; s < xs.size(); ++s) {
    opt.zero_grad();
    Tensor loss = whole.loss(xs[s], ys[s]);
    loss.backward();
    if (clip > 0) nn::optim::clip_grad_norm(whole.parameters(), clip);
    opt.step();
    run.losses.push_back(loss.item<double>());
  }
  return run;
}

}  // namespace dlf::test
