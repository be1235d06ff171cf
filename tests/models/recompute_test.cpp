// Module::recompute, full and selective, on every family: the gradients of the plain model bit
// for bit, with less memory held between forward and backward.
#include "test_util.h"

#include <dlf/device/allocator.h>

#include <functional>

using namespace dlf;

namespace {

struct Run {
  int64_t held_bytes = 0;  // live after forward, before backward
  std::vector<std::vector<float>> grads;
};

Run run(nn::Module& model, const std::function<Tensor()>& loss, autograd::Recompute recompute) {
  model.recompute(recompute);
  model.zero_grad();
  manual_seed(99);  // dropout's masks
  Allocator& memory = allocator_for(kCPU);
  const int64_t before = memory.stats().live_bytes;
  Tensor l = loss();
  Run r{.held_bytes = memory.stats().live_bytes - before, .grads = {}};
  l.backward();
  for (const auto& [name, p] : model.named_parameters())
    r.grads.push_back(p.grad().to_vector<float>());
  return r;
}

// `full` and `selective`: the most each may hold, as a share of what the plain model holds.
void check_recompute(nn::Module& model, const std::function<Tensor()>& loss, double full,
                     double selective) {
  using autograd::Recompute;
  const Run plain = run(model, loss, Recompute::none);
  const Run all = run(model, loss, Recompute::full);
  const Run some = run(model, loss, Recompute::selective);
  CHECK(all.grads == plain.grads);
  CHECK(some.grads == plain.grads);
  CHECK(double(all.held_bytes) < full * double(plain.held_bytes));
  CHECK(double(some.held_bytes) < selective * double(plain.held_bytes));
  CHECK(some.held_bytes > all.held_bytes);
  model.recompute(Recompute::none);
  MESSAGE("held between forward and backward: ", plain.held_bytes, " B plain, ", all.held_bytes,
          " B full recompute, ", some.held_bytes, " B selective");
}

}  // namespace

TEST_CASE(
    "recompute, full and selective: GPT (with dropout), Llama, BERT, ViT and UNet train on the "
    "same gradients") {
  manual_seed(1);
  models::GPTConfig g = models::gpt_config("gpt-nano");
  g.dropout = 0.1;
  models::GPT gpt(g);
  const Tensor idx = randint(0, 256, {4, 64}), targets = randint(0, 256, {4, 64});
  check_recompute(
      gpt, [&] { return gpt.loss(idx, targets); }, 0.5, 0.7);

  models::Llama llama(models::llama_config("llama-nano"));
  check_recompute(
      llama, [&] { return llama.loss(idx, targets); }, 0.5, 0.7);

  models::BertForMaskedLM bert(models::bert_config("bert-tiny"));
  const Tensor ids = randint(0, 256, {4, 64});
  std::vector<int64_t> labels(4 * 64, -100);
  for (size_t i = 0; i < labels.size(); i += 7) labels[i] = int64_t(i % 256);
  const Tensor y = from_vector(labels, {4, 64});
  check_recompute(
      bert, [&] { return bert.loss(ids, y); }, 0.5, 0.7);

  models::VisionTransformer vit(models::vit_config("vit-tiny"));
  const Tensor images = randn({4, 1, 28, 28}), classes = randint(0, 10, {4});
  check_recompute(
      vit, [&] { return vit.loss(images, classes); }, 0.5, 0.7);

  models::UNet unet(models::unet_config("unet-tiny"));
  const models::DDPM ddpm;
  const Tensor x0 = randn({2, 1, 32, 32}), noise = randn({2, 1, 32, 32});
  const Tensor t = from_vector<int64_t>({10, 500}, {2});
  check_recompute(
      unet, [&] { return ddpm.loss(unet, x0, noise, t); }, 0.8, 0.9);
}
