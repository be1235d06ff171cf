#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

Tensor tokens_of(const std::string& text) {
  std::vector<int64_t> ids(text.begin(), text.end());
  return from_vector<int64_t>(ids, {1, int64_t(ids.size())});
}

std::string text_of(const Tensor& ids) {
  std::string s;
  for (int64_t id : ids.to_vector<int64_t>()) s += char(id);
  return s;
}

}  // namespace

TEST_CASE("GPT: nanoGPT's parameter names, shapes and counts") {
  models::GPT nano(models::gpt_config("gpt-nano"));
  const nn::NamedTensors state = nano.state_dict();
  std::vector<std::string> expected = {"transformer.wte.weight [256, 64]",
                                       "transformer.wpe.weight [64, 64]"};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char* name :
         {"ln_1.weight [64]", "ln_1.bias [64]", "attn.c_attn.weight [192, 64]",
          "attn.c_attn.bias [192]", "attn.c_proj.weight [64, 64]", "attn.c_proj.bias [64]",
          "ln_2.weight [64]", "ln_2.bias [64]", "mlp.c_fc.weight [256, 64]", "mlp.c_fc.bias [256]",
          "mlp.c_proj.weight [64, 256]", "mlp.c_proj.bias [64]"})
      expected.push_back(h + name);
  }
  expected.push_back("transformer.ln_f.weight [64]");
  expected.push_back("transformer.ln_f.bias [64]");
  expected.push_back("lm_head.weight [256, 64]");
  std::vector<std::string> got;
  for (const auto& [name, t] : state) got.push_back(name + " " + shape_str(t.shape()));
  CHECK(got == expected);
  CHECK(state.back().second.impl() == nano.transformer->wte->weight.impl());  // tied
  CHECK(nano.num_parameters() == 120576);  // the peer's count (shared/peer/param_names)

  // nanoGPT's init: N(0, 0.02), residual projections N(0, 0.02/sqrt(2 layers)), zero biases.
  models::GPT mini(models::gpt_config("gpt-mini"));
  CHECK(mini.num_parameters() == 10844160);
  auto std_of = [](const Tensor& t) { return std::sqrt(mean(t * t).item<double>()); };
  CHECK(std_of((*mini.transformer->h)[0].mlp->c_fc->weight) == doctest::Approx(0.02).epsilon(0.02));
  CHECK(std_of((*mini.transformer->h)[5].attn->c_proj->weight) ==
        doctest::Approx(0.02 / std::sqrt(12.0)).epsilon(0.02));
  CHECK(std_of((*mini.transformer->h)[2].attn->c_attn->bias) == 0);
  CHECK(mini.transformer->ln_f->weight.to_vector<double>() == std::vector<double>(384, 1.0));
}

TEST_CASE("GPT: registry errors, forward shapes, loss at init, causality") {
  check_error([] { models::gpt_config("gpt-huge"); },
              {"unknown model 'gpt-huge'", "gpt-nano", "gpt-small"});
  manual_seed(5);
  models::GPT gpt(models::gpt_config("gpt-nano"));
  const Tensor idx = randint(0, 256, {3, 64});
  const Tensor logits = gpt.forward(idx);
  CHECK(logits.shape() == Shape{3, 64, 256});
  // Small init: the logits are near zero, so the loss is near ln(256).
  CHECK(gpt.loss(idx, randint(0, 256, {3, 64})).item<double>() ==
        doctest::Approx(std::log(256.0)).epsilon(0.02));
  check_error([&] { gpt.forward(randint(0, 256, {1, 65})); }, {"sequence length 65", "1..64"});
  check_error([&] { gpt.forward(randint(0, 256, {65})); }, {"[B, T]", "[65]"});
  check_error([&] { gpt.loss(idx, randint(0, 256, {3, 63})); }, {"targets", "[3, 63]"});

  // Changing token 10 leaves the logits of positions 0..9 exactly as they were.
  Tensor changed = idx.clone();
  changed.data<int64_t>()[10] = (changed.data<int64_t>()[10] + 1) % 256;
  const Tensor after = gpt.forward(changed);
  check_close(after.slice(1, 0, 10), logits.slice(1, 0, 10), 0, 0);
  CHECK(max(abs(after.slice(1, 10, 11) - logits.slice(1, 10, 11))).item<double>() > 0);
}

TEST_CASE("GPT: forward(idx, targets) gives the logits and the loss from one pass") {
  manual_seed(6);
  models::GPT gpt(models::gpt_config("gpt-nano"));
  const Tensor idx = randint(0, 256, {2, 16}), targets = randint(0, 256, {2, 16});
  OpProfile ops;
  const auto [logits, loss] = gpt.forward(idx, targets);
  CHECK(ops.rows().at("linear").calls == 2 * 4 + 1);  // 4 per block, the head once
  CHECK(logits.to_vector<float>() == gpt.forward(idx).to_vector<float>());
  CHECK(loss.item<double>() == gpt.loss(idx, targets).item<double>());
  check_close(loss, cross_entropy(logits.view({32, 256}), targets.view({32})), 0, 0);
}

TEST_CASE("GPT: gradients of every parameter match finite differences (tiny f64 model)") {
  manual_seed(6);
  models::GPT gpt({.name = "tiny",
                   .vocab = 7,
                   .context = 4,
                   .layers = 1,
                   .heads = 2,
                   .dim = 4,
                   .dtype = DType::f64});
  const Tensor idx = from_vector<int64_t>({1, 5, 2, 6, 0, 3}, {2, 3});
  const Tensor targets = from_vector<int64_t>({5, 2, 6, 3, 3, 1}, {2, 3});
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>&) { return gpt.loss(idx, targets); }, gpt.parameters());
  INFO(result.str());
  CHECK(result.ok);
}

TEST_CASE("GPT: gpt-nano's bf16 mixed-precision gradients are within bf16's error of f64's") {
  manual_seed(7);
  models::GPT gpt(models::gpt_config("gpt-nano"));
  models::GPT ref(models::gpt_config("gpt-nano"));
  ref.load_state_dict(gpt.state_dict());
  ref.to(DType::f64);
  Generator data(8);
  const Tensor idx = randint(0, 256, {4, 64}, {.dtype = DType::i64}, &data);
  const Tensor targets = randint(0, 256, {4, 64}, {.dtype = DType::i64}, &data);
  const Tensor ref_loss = ref.loss(idx, targets);
  ref_loss.backward();
  Tensor loss;
  {
    AutocastGuard autocast(DType::bf16);
    loss = gpt.loss(idx, targets);
  }
  loss.backward();
  CHECK(loss.dtype() == DType::f32);
  // bf16 keeps 8 significant bits: each rounding is within 2^-9, and a gradient passes a few
  // dozen of them; a dropped cast or an f32 op left in bf16 shows up as several times more.
  CHECK(std::fabs(loss.item<double>() / ref_loss.item<double>() - 1) < 5e-3);
  const nn::NamedTensors got = gpt.named_parameters(), want = ref.named_parameters();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor g = got[i].second.grad(), w = want[i].second.grad();
    const double error = test::relative_error(g, w);
    INFO(got[i].first, ": relative error ", error);
    CHECK(g.dtype() == DType::f32);
    CHECK(error < 3e-2);
  }
}

TEST_CASE("GPT: gpt-nano overfits a short text and then recites it greedily") {
  manual_seed(0);
  models::GPT gpt(models::gpt_config("gpt-nano"));
  const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife.";
  const Tensor all = tokens_of(text);
  const int64_t T = all.size(1) - 1;
  const Tensor x = all.slice(1, 0, T), y = all.slice(1, 1, T + 1);
  nn::optim::AdamW opt(nn::optim::decay_groups(gpt.named_parameters(), 0.0),
                       {.lr = 3e-3, .beta2 = 0.99});
  // One 64-token window per step, all windows of the text in the batch.
  const Tensor xb = cat({x.slice(1, 0, 64), x.slice(1, T - 64, T)}, 0);
  const Tensor yb = cat({y.slice(1, 0, 64), y.slice(1, T - 64, T)}, 0);
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = gpt.loss(xb, yb);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss ", first, " -> ", last);
  CHECK(first > 5);
  CHECK(last < 0.02);
  const Tensor prompt = all.slice(1, 0, 20);
  const Tensor out = gpt.generate(prompt, 40, 0);
  CHECK(text_of(out) == text.substr(0, 60));
  CHECK(gpt.is_training());
  // Sampling at a low temperature with top-k picks the same memorised continuation.
  Generator gen(1);
  CHECK(text_of(gpt.generate(prompt, 40, 0.01, 5, &gen)) == text.substr(0, 60));
}
