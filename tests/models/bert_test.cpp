#include <algorithm>
#include <cmath>

#include <dlf/models/bert.h>
#include <dlf/nn/data/masking.h>
#include <dlf/nn/metrics.h>

#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

TEST_CASE("BERT: Hugging Face's parameter names, shapes and counts") {
  models::BertForMaskedLM mini(models::bert_config("bert-mini"));
  std::vector<std::string> expected = {"bert.embeddings.word_embeddings.weight [256, 256]",
                                       "bert.embeddings.position_embeddings.weight [512, 256]",
                                       "bert.embeddings.token_type_embeddings.weight [2, 256]",
                                       "bert.embeddings.LayerNorm.weight [256]",
                                       "bert.embeddings.LayerNorm.bias [256]"};
  for (int i = 0; i < 4; ++i) {
    const std::string layer = "bert.encoder.layer." + std::to_string(i) + ".";
    for (const char* name :
         {"attention.self.query.weight [256, 256]", "attention.self.query.bias [256]",
          "attention.self.key.weight [256, 256]", "attention.self.key.bias [256]",
          "attention.self.value.weight [256, 256]", "attention.self.value.bias [256]",
          "attention.output.dense.weight [256, 256]", "attention.output.dense.bias [256]",
          "attention.output.LayerNorm.weight [256]", "attention.output.LayerNorm.bias [256]",
          "intermediate.dense.weight [1024, 256]", "intermediate.dense.bias [1024]",
          "output.dense.weight [256, 1024]", "output.dense.bias [256]",
          "output.LayerNorm.weight [256]", "output.LayerNorm.bias [256]"})
      expected.push_back(layer + name);
  }
  for (const char* name :
       {"cls.predictions.bias [256]", "cls.predictions.transform.dense.weight [256, 256]",
        "cls.predictions.transform.dense.bias [256]",
        "cls.predictions.transform.LayerNorm.weight [256]",
        "cls.predictions.transform.LayerNorm.bias [256]"})
    expected.push_back(name);
  std::vector<std::string> got;
  for (const auto& [name, t] : mini.named_parameters())
    got.push_back(name + " " + shape_str(t.shape()));
  CHECK(got == expected);
  CHECK(mini.num_parameters() == 3423232);  // the peer's count (shared/peer/param_names)

  // The decoder is tied: in the state_dict under its own names, as Hugging Face saves it.
  const nn::NamedTensors state = mini.state_dict();
  CHECK(state.size() == expected.size() + 2);
  CHECK(state[state.size() - 2].first == "cls.predictions.decoder.weight");
  CHECK(state[state.size() - 2].second.impl() ==
        mini.bert->embeddings->word_embeddings->weight.impl());
  CHECK(state.back().first == "cls.predictions.decoder.bias");
  CHECK(state.back().second.impl() == mini.predictions->bias.impl());

  // Hugging Face's init: N(0, 0.02), zero biases, LayerNorm 1 and 0.
  auto std_of = [](const Tensor& t) { return std::sqrt(mean(t * t).item<double>()); };
  const auto& layer = (*mini.bert->encoder->layer)[3];
  CHECK(std_of(layer.intermediate->dense->weight) == doctest::Approx(0.02).epsilon(0.02));
  CHECK(std_of(mini.bert->embeddings->position_embeddings->weight) ==
        doctest::Approx(0.02).epsilon(0.02));
  CHECK(std_of(layer.attention->self->key->bias) == 0);
  CHECK(std_of(mini.predictions->bias) == 0);
  CHECK(layer.output->norm->weight.to_vector<double>() == std::vector<double>(256, 1.0));
  CHECK(layer.output->norm->eps == 1e-12);

  CHECK(models::BertForMaskedLM(models::bert_config("bert-tiny")).num_parameters() == 512384);
  check_error([] { models::bert_config("bert-huge"); },
              {"unknown BERT model 'bert-huge'", "bert-tiny", "bert-mini", "bert-base"});
}

TEST_CASE("BERT: forward shapes, loss at init, bidirectional attention, bad input") {
  Generator gen(1);
  models::BertForMaskedLM bert(models::bert_config("bert-tiny"), &gen);
  const Tensor ids = randint(1, 256, {2, 32}, {.dtype = DType::i64}, &gen);
  const Tensor logits = bert.forward(ids);
  CHECK(logits.shape() == Shape{2, 32, 256});

  // The loss is the mean cross-entropy of forward's logits at the labelled positions (summed
  // by hand below), or with Reduction::sum their sum; at init it is near ln(256).
  const nn::data::MaskedBatch batch = nn::data::mask_tokens(ids, gen, models::kMaskToken, 256);
  const std::vector<double> z = bert.forward(batch.inputs).to(DType::f64).to_vector<double>();
  const std::vector<int64_t> y = batch.labels.to_vector<int64_t>();
  double total = 0;
  int64_t count = 0;
  for (size_t p = 0; p < y.size(); ++p) {
    if (y[p] == -100) continue;
    const double* row = z.data() + p * 256;
    const double top = *std::max_element(row, row + 256);
    double sum_exp = 0;
    for (int c = 0; c < 256; ++c) sum_exp += std::exp(row[c] - top);
    total += top + std::log(sum_exp) - row[y[p]];
    ++count;
  }
  REQUIRE(count > 0);
  const double loss = bert.loss(batch.inputs, batch.labels).item<double>();
  CHECK(loss == doctest::Approx(total / double(count)).epsilon(1e-5));
  CHECK(models::BertForMaskedLM::loss_of(bert.forward(batch.inputs), batch.labels).item<double>() ==
        doctest::Approx(loss).epsilon(1e-12));
  CHECK(bert.loss(batch.inputs, batch.labels, Reduction::sum).item<double>() ==
        doctest::Approx(total).epsilon(1e-5));
  CHECK(loss == doctest::Approx(std::log(256.0)).epsilon(0.05));

  // Changing the last token changes the logits of the first position (no causal mask).
  Tensor changed = ids.clone();
  changed.data<int64_t>()[31] = (changed.data<int64_t>()[31] % 255) + 1;
  CHECK(max(abs(bert.forward(changed).slice(1, 0, 1) - logits.slice(1, 0, 1))).item<double>() > 0);

  check_error([&] { bert.forward(randint(0, 256, {1, 513})); }, {"sequence length 513", "1..512"});
  check_error([&] { bert.forward(randint(0, 256, {7})); }, {"[B, T]", "[7]"});
  check_error([&] { bert.loss(ids, randint(0, 256, {2, 31})); }, {"labels", "[2, 31]"});
  // No labelled position: a mean over nothing, NaN as in PyTorch.
  CHECK(std::isnan(bert.loss(ids, full({2, 32}, -100, {.dtype = DType::i64})).item<double>()));
}

TEST_CASE("BERT: gradients of every parameter match finite differences (tiny f64 model)") {
  Generator gen(6);
  models::BertForMaskedLM bert({.name = "tiny",
                                .vocab = 7,
                                .max_positions = 4,
                                .layers = 1,
                                .heads = 2,
                                .dim = 4,
                                .ffn = 8,
                                .dtype = DType::f64},
                               &gen);
  // Init's N(0, 0.02) leaves the gradients tiny; larger weights test the formulas better.
  for (const Tensor& p : bert.parameters()) nn::init::normal_(p, 0, 0.5, &gen);
  const Tensor ids = from_vector<int64_t>({1, 0, 2, 6, 0, 3, 5, 0}, {2, 4});
  const Tensor labels = from_vector<int64_t>({-100, 5, -100, 4, 3, -100, -100, 1}, {2, 4});
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>&) { return bert.loss(ids, labels); }, bert.parameters());
  INFO(result.str());
  CHECK(result.ok);
}

TEST_CASE("BERT: a few AdamW steps on a fixed masked batch bring the loss well below ln(256)") {
  Generator gen(0);
  models::BertForMaskedLM bert(
      {.name = "small", .max_positions = 64, .layers = 1, .heads = 2, .dim = 64, .ffn = 256}, &gen);
  const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife.";
  const Tensor tokens = nn::data::TextDataset::encode(text.substr(0, 64)).view({1, 64});
  const nn::data::MaskedBatch batch =
      nn::data::mask_tokens(tokens.expand({4, 64}).contiguous(), gen, models::kMaskToken, 256);
  nn::optim::AdamW opt(nn::optim::decay_groups(bert.named_parameters(), 0.01), {.lr = 3e-3});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss = bert.loss(batch.inputs, batch.labels);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss ", first, " -> ", last);
  CHECK(first == doctest::Approx(std::log(256.0)).epsilon(0.05));
  CHECK(last < 1.0);
  CHECK(nn::accuracy(bert.forward(batch.inputs), batch.labels) > 0.8);
}

TEST_CASE("BERT: predicts a masked token from its context, which no unigram guess can") {
  // Every sequence repeats one random token, so a masked position is its neighbours' token:
  // ln(31) for a guess from frequencies, ~0 for a model whose attention reads the context.
  constexpr int64_t kVocab = 32, kT = 12, kBatch = 16;
  Generator gen(2);
  models::BertForMaskedLM bert({.name = "small",
                                .vocab = kVocab,
                                .max_positions = kT,
                                .layers = 2,
                                .heads = 2,
                                .dim = 32,
                                .ffn = 64},
                               &gen);
  auto batch = [&] {
    const Tensor token = randint(1, kVocab, {kBatch, 1}, {.dtype = DType::i64}, &gen);
    return nn::data::mask_tokens(token.expand({kBatch, kT}).contiguous(), gen, models::kMaskToken,
                                 kVocab, 0.25);
  };
  nn::optim::AdamW opt(nn::optim::decay_groups(bert.named_parameters(), 0.01), {.lr = 2e-3});
  for (int step = 0; step < 400; ++step) {
    const nn::data::MaskedBatch b = batch();
    opt.zero_grad();
    bert.loss(b.inputs, b.labels).backward();
    opt.step();
  }
  autograd::NoGradGuard no_grad;
  const nn::data::MaskedBatch held_out = batch();
  const double loss = bert.loss(held_out.inputs, held_out.labels).item<double>();
  INFO("held-out loss ", loss, " against ln(31) = ", std::log(31.0));
  CHECK(loss < 0.5);
  CHECK(nn::accuracy(bert.forward(held_out.inputs), held_out.labels) > 0.9);
}
