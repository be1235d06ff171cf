// Compiled training steps of the zoo's models against eager ones: the same losses, gradient
// norms and weights after five clipped AdamW steps, to 1e-6 (fused element-wise loops round as the
// plain loops do, not as oneDNN's kernels); a step captured on meta plans a big model's memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <dlf/dlf.h>

#include "test_util.h"

using namespace dlf;

namespace {

using Batch = std::vector<Tensor>;
using LossFn = std::function<Tensor(const nn::Module&, const Batch&)>;

// The largest difference, relative to the largest magnitude of `want`.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return diff / scale;
}

// Trains `model` on `batches` as `dlf train` does — clipping to norm 0.5 (so that steps clip)
// and AdamW under a falling learning rate — eagerly, or as one captured graph per step (forward,
// backward, clipping and the update); each step's loss and gradient norm.
std::vector<float> train(const nn::Module& model, const std::vector<Batch>& batches,
                         const LossFn& loss, bool compiled) {
  constexpr double kClip = 0.5;
  const std::vector<Tensor> params = model.parameters();
  nn::optim::AdamW opt(params, {.lr = 1e-3});
  opt.init_state();
  const auto batch_loss = [&](const Batch& b) { return loss(model, b); };
  const graph::StepFn step = graph::backward_step(batch_loss);
  Tensor norm = zeros({}, {.dtype = DType::f64});
  graph::Compiled compiled_step(graph::backward_step(
      batch_loss, [&] { norm.copy_(nn::optim::clip_and_update(opt, params, kClip)); }));
  std::vector<float> out;
  for (size_t i = 0; i < batches.size(); ++i) {
    opt.set_lr(1e-3 / double(i + 1));
    opt.zero_grad();
    if (compiled) {
      opt.begin_step();
      out.push_back(compiled_step(batches[i])[0].item<float>());
      out.push_back(norm.item<float>());
    } else {
      out.push_back(step(batches[i])[0].item<float>());
      out.push_back(float(nn::optim::clip_grad_norm(params, kClip)));
      opt.step();
    }
  }
  if (compiled) CHECK(compiled_step.captures() == 1);
  return out;
}

// Builds the model twice from one seed, trains one eagerly and one compiled (with activation
// recompute `what`).
template <typename Model, typename Config>
void check_compiled_matches_eager(const Config& config, const std::vector<Batch>& batches,
                                  const LossFn& loss,
                                  autograd::Recompute what = autograd::Recompute::none) {
  manual_seed(42);
  const Model eager(config);
  manual_seed(42);
  Model compiled(config);
  compiled.recompute(what);
  const std::vector<float> eager_steps = train(eager, batches, loss, false);
  const std::vector<float> compiled_steps = train(compiled, batches, loss, true);
  CHECK(relative_error(compiled_steps, eager_steps) < 1e-6);
  // Weights at the model's scale: a parameter whose gradient is zero up to rounding (a key
  // projection's bias: softmax ignores a shift shared by all keys) moves by Adam's normalised
  // step whatever the rounding, so its own scale would measure noise.
  const nn::NamedTensors a = eager.state_dict(), b = compiled.state_dict();
  REQUIRE(a.size() == b.size());
  double scale = 0;
  for (const auto& [name, t] : a)
    for (float x : t.template to_vector<float>()) scale = std::max(scale, double(std::abs(x)));
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    const std::vector<float> want = a[i].second.template to_vector<float>();
    const std::vector<float> got = b[i].second.template to_vector<float>();
    REQUIRE(got.size() == want.size());
    double diff = 0;
    for (size_t j = 0; j < got.size(); ++j)
      diff = std::max(diff, std::abs(double(got[j]) - double(want[j])));
    CHECK(diff <= 1e-6 * scale);
  }
}

}  // namespace

TEST_CASE("graph: gpt-nano trains compiled as it trains eagerly, to 1e-6") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  Generator data(1);
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i)
    batches.push_back({randint(0, config.vocab, {2, 16}, {.dtype = DType::i64}, &data),
                       randint(0, config.vocab, {2, 16}, {.dtype = DType::i64}, &data)});
  const LossFn loss = [](const nn::Module& m, const Batch& b) {
    return static_cast<const models::GPT&>(m).loss(b[0], b[1]);
  };
  check_compiled_matches_eager<models::GPT>(config, batches, loss);
  // Recompute in a captured step: backward's recompute is captured like any other op.
  for (autograd::Recompute what : {autograd::Recompute::full, autograd::Recompute::selective}) {
    INFO(autograd::recompute_name(what));
    check_compiled_matches_eager<models::GPT>(config, batches, loss, what);
  }
}

TEST_CASE("graph: bert-tiny trains compiled as it trains eagerly, to 1e-6") {
  // The masked positions differ from batch to batch; the loss's shapes do not.
  const models::BertConfig config = models::bert_config("bert-tiny");
  Generator data(2);
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i) {
    const Tensor tokens = randint(1, config.vocab, {2, 16}, {.dtype = DType::i64}, &data);
    const nn::data::MaskedBatch m =
        nn::data::mask_tokens(tokens, data, models::kMaskToken, config.vocab);
    batches.push_back({m.inputs, m.labels});
  }
  check_compiled_matches_eager<models::BertForMaskedLM>(
      config, batches, [](const nn::Module& m, const Batch& b) {
        return static_cast<const models::BertForMaskedLM&>(m).loss(b[0], b[1]);
      });
}

TEST_CASE("graph: vit-tiny trains compiled as it trains eagerly, to 1e-6") {
  const models::ViTConfig config = models::vit_config("vit-tiny");
  Generator data(3);
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i)
    batches.push_back({randn({2, config.channels, config.image, config.image}, {}, &data),
                       randint(0, config.classes, {2}, {.dtype = DType::i64}, &data)});
  check_compiled_matches_eager<models::VisionTransformer>(
      config, batches, [](const nn::Module& m, const Batch& b) {
        return static_cast<const models::VisionTransformer&>(m).loss(b[0], b[1]);
      });
}

TEST_CASE("graph: unet-tiny trains compiled as it trains eagerly, to 1e-6") {
  const models::UNetConfig config = models::unet_config("unet-tiny");
  const auto ddpm = std::make_shared<models::DDPM>();
  Generator data(4);
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i) {
    const Shape images{2, config.channels, config.image, config.image};
    batches.push_back({rand(images, {}, &data) * 2.0 - 1.0, randn(images, {}, &data),
                       randint(0, ddpm->steps(), {2}, {.dtype = DType::i64}, &data)});
  }
  check_compiled_matches_eager<models::UNet>(
      config, batches, [&](const nn::Module& m, const Batch& b) {
        return ddpm->loss(static_cast<const models::UNet&>(m), b[0], b[1], b[2]);
      });
}

TEST_CASE("graph: gpt-small's training step captured on meta plans its memory with none") {
  DefaultDeviceGuard meta(kMeta);
  const models::GPTConfig config = models::gpt_config("gpt-small");
  const models::GPT model(config);
  const Tensor x = zeros({4, 256}, {.dtype = DType::i64});
  graph::Capture c = graph::capture(
      graph::backward_step([&](const Batch& b) { return model.loss(b[0], b[1]); }), {x, x});
  CHECK(c.graph.grads.size() == model.parameters().size());
  graph::optimize(c.graph);
  const graph::Executable exe(std::move(c.graph));
  // Each of the 12 blocks keeps its activations for backward: over B*T*dim*4 bytes a block.
  CHECK(exe.graph().arena_bytes > size_t(12) * 4 * 256 * 768 * 4);
  CHECK(exe.graph().arena_bytes >= graph::arena_lower_bound(exe.graph()));
  CHECK(exe.graph().arena_bytes < 2 * graph::arena_lower_bound(exe.graph()));
  for (const Tensor& p : model.parameters()) p.set_grad(Tensor());
  const Tensor loss = exe.run({x, x})[0];
  CHECK(loss.device() == kMeta);
  CHECK(model.parameters()[0].grad().device() == kMeta);
}
