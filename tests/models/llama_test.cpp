#include <cmath>
#include <map>

#include <dlf/models/family.h>
#include <dlf/models/llama.h>
#include <dlf/nn/init.h>
#include <dlf/nn/optim/optimizer.h>

#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

models::LlamaConfig tiny(int64_t kv_heads) {
  return {.name = "tiny",
          .vocab = 7,
          .context = 5,
          .layers = 1,
          .heads = 4,
          .kv_heads = kv_heads,
          .dim = 8,
          .ffn = 6,
          .dtype = DType::f64};
}

int64_t parameter_count(const nn::Module& m) {
  int64_t n = 0;
  for (const auto& [name, t] : m.named_parameters()) n += t.numel();
  return n;
}

}  // namespace

TEST_CASE("Llama: Hugging Face's parameter names and shapes, no biases, untied head") {
  const models::Llama nano(models::llama_config("llama-nano"));
  std::vector<std::string> expected = {"model.embed_tokens.weight [256, 64]"};
  for (int i = 0; i < 2; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    for (const char* name : {"input_layernorm.weight [64]", "post_attention_layernorm.weight [64]",
                             "self_attn.q_proj.weight [64, 64]", "self_attn.k_proj.weight [32, 64]",
                             "self_attn.v_proj.weight [32, 64]", "self_attn.o_proj.weight [64, 64]",
                             "mlp.gate_proj.weight [192, 64]", "mlp.up_proj.weight [192, 64]",
                             "mlp.down_proj.weight [64, 192]"}) {
      expected.push_back(layer + name);
    }
  }
  expected.push_back("model.norm.weight [64]");
  expected.push_back("lm_head.weight [256, 64]");
  std::vector<std::string> got;
  for (const auto& [name, t] : nano.named_parameters())
    got.push_back(name + " " + shape_str(t.shape()));
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  CHECK(got == expected);
  CHECK(!nano.lm_head->weight.is_same(nano.model->embed_tokens->weight));
}

TEST_CASE("Llama: the planning sizes have Meta's published parameter counts (built on meta)") {
  // Hugging Face's counts of the released checkpoints.
  const std::map<std::string, int64_t> published = {
      {"llama2-7b", 6'738'415'616},   {"llama2-13b", 13'015'864'320},
      {"llama2-70b", 68'976'648'192}, {"llama3-8b", 8'030'261'248},
      {"llama3-70b", 70'553'706'496}, {"llama3-405b", 405'853'388'800},
      {"llama-nano", 131'392},        {"llama-mini", 10'523'520},
      {"llama-small", 124'668'672}};
  for (const auto& [name, count] : published) {
    CAPTURE(name);
    DefaultDeviceGuard meta(kMeta);
    const models::Llama model(models::llama_config(name));
    CHECK(parameter_count(model) == count);
  }
  // The small ones near GPT's of the same size (10.8M for gpt-mini, 124M for gpt-small).
  CHECK(models::family_of("llama-mini").name == "llama");
  const models::LlamaConfig l3 = models::llama_config("llama3-405b");
  CHECK(l3.kv_heads == 8);
  CHECK(l3.theta == 500000);
  CHECK(l3.rope_scaling.factor == 8);
  CHECK(models::llama_config("llama2-70b").kv_heads == 8);
  check_error([] { models::llama_config("llama-huge"); }, {"unknown Llama model", "llama-nano"});
}

TEST_CASE("Llama: forward shapes, loss at init, causality, bad input") {
  Generator gen(3);
  const models::Llama llama(models::llama_config("llama-nano"), &gen);
  const Tensor ids = randint(0, 256, {2, 16}, {.dtype = DType::i64}, &gen);
  const Tensor logits = llama.forward(ids);
  CHECK(logits.shape() == Shape{2, 16, 256});
  CHECK(llama.loss(ids, ids).item<double>() == doctest::Approx(std::log(256.0)).epsilon(0.05));
  // Changing the last token leaves every earlier position's logits as they were.
  Tensor changed = ids.clone();
  changed.data<int64_t>()[15] = (changed.data<int64_t>()[15] + 1) % 256;
  const Tensor after = llama.forward(changed);
  check_close(after.slice(1, 0, 15), logits.slice(1, 0, 15), 0, 0);
  CHECK(max(abs(after.slice(1, 15, 16) - logits.slice(1, 15, 16))).item<double>() > 0);
  check_error([&] { llama.forward(randint(0, 256, {1, 65})); }, {"sequence length 65", "1..64"});
  check_error([&] { llama.forward(randint(0, 256, {7})); }, {"[B, T]", "[7]"});
  check_error([&] { llama.loss(ids, randint(0, 256, {2, 15})); }, {"targets", "[2, 15]"});
  check_error([] { models::Llama bad(tiny(3)); }, {"bad config", "kv heads 3"});
}

TEST_CASE("Llama: grouped-query attention is multi-head attention with k and v repeated") {
  // kv_heads 2 of 4 heads, against the same model with 4 kv heads whose k and v projections
  // repeat each kv head's rows for the two query heads of its group.
  Generator gen(4);
  models::Llama grouped(tiny(2), &gen);
  for (const Tensor& p : grouped.parameters()) nn::init::normal_(p, 0, 0.5, &gen);
  models::Llama full(tiny(4), &gen);
  const int64_t head_dim = 2;
  nn::NamedTensors state;
  for (const auto& [name, t] : grouped.state_dict()) {
    if (name.find("k_proj") == std::string::npos && name.find("v_proj") == std::string::npos) {
      state.emplace_back(name, t);
      continue;
    }
    // [kv · d, C] -> [kv, 1, d, C] -> [kv, 2, d, C] -> [2 kv · d, C]
    state.emplace_back(name,
                       t.view({2, 1, head_dim, 8}).expand({2, 2, head_dim, 8}).reshape({8, 8}));
  }
  full.load_state_dict(state);
  const Tensor ids = from_vector<int64_t>({1, 0, 2, 6, 3, 5, 4, 0, 1, 2}, {2, 5});
  check_close(grouped.forward(ids), full.forward(ids), 1e-12, 1e-12);
}

TEST_CASE("Llama: gradients of every parameter match finite differences (tiny f64 model)") {
  Generator gen(6);
  for (int64_t kv_heads : {2, 1}) {  // grouped-query and multi-query
    CAPTURE(kv_heads);
    models::Llama llama(tiny(kv_heads), &gen);
    for (const Tensor& p : llama.parameters()) nn::init::normal_(p, 1, 0.5, &gen);
    const Tensor ids = from_vector<int64_t>({1, 0, 2, 6, 3, 5, 4, 0}, {2, 4});
    const Tensor targets = from_vector<int64_t>({0, 2, 6, 3, 4, 0, 1, 1}, {2, 4});
    const auto result = autograd::gradcheck(
        [&](const std::vector<Tensor>&) { return llama.loss(ids, targets); }, llama.parameters());
    INFO(result.str());
    CHECK(result.ok);
  }
}

TEST_CASE("Llama: a few AdamW steps on a fixed text bring the loss well below ln(256)") {
  Generator gen(0);
  models::LlamaConfig c = models::llama_config("llama-nano");
  models::Llama llama(c, &gen);
  const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife.";
  const Tensor tokens = nn::data::TextDataset::encode(text.substr(0, 65)).view({1, 65});
  const Tensor x = tokens.slice(1, 0, 64), y = tokens.slice(1, 1, 65);
  nn::optim::AdamW opt(nn::optim::decay_groups(llama.named_parameters(), 0.01), {.lr = 1e-2});
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor loss = llama.loss(x, y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss ", first, " -> ", last);
  CHECK(first == doctest::Approx(std::log(256.0)).epsilon(0.05));
  CHECK(last < 0.5);
}
