#include "models/sampling.h"
#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

using Rows = std::vector<std::vector<int64_t>>;

// Each step's logits [B, V], recorded.
struct Run {
  Rows tokens;
  std::vector<Tensor> logits;
};

Run run(models::CausalLM& model, const Rows& prompts, models::GenerateOptions o) {
  Run r;
  o.on_logits = [&](const Tensor& l) { r.logits.push_back(l.clone()); };
  r.tokens = models::generate(model, prompts, o);
  return r;
}

// gpt-nano or llama-nano (grouped-query heads, rotary positions) in `dtype`, seeded.
std::unique_ptr<models::CausalLM> nano(const std::string& family, DType dtype) {
  Generator init(7);
  if (family == "gpt") {
    models::GPTConfig config = models::gpt_config("gpt-nano");
    config.dtype = dtype;
    return std::make_unique<models::GPT>(config, &init);
  }
  models::LlamaConfig config = models::llama_config("llama-nano");
  config.dtype = dtype;
  return std::make_unique<models::Llama>(config, &init);
}

// The largest |a - b| relative to the largest |b|.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("attention: fewer queries than keys align with the last keys (the cache's decode)") {
  Generator gen(3);
  const Tensor q = randn({2, 3, 7, 8}, {.dtype = DType::f64}, &gen);
  const Tensor k = randn({2, 3, 7, 8}, {.dtype = DType::f64}, &gen);
  const Tensor v = randn({2, 3, 7, 8}, {.dtype = DType::f64}, &gen);
  const Tensor whole = scaled_dot_product_attention(q, k, v, true);
  // Queries 5 and 6 over all 7 keys see what they see among all 7 queries: keys 0..5 and 0..6.
  check_close(scaled_dot_product_attention(q.narrow(2, 5, 2), k, v, true), whole.narrow(2, 5, 2),
              1e-12, 1e-12);
  // The last query alone sees every key.
  check_close(scaled_dot_product_attention(q.narrow(2, 6, 1), k, v, true),
              scaled_dot_product_attention(q.narrow(2, 6, 1), k, v, false), 1e-12, 1e-12);
}

TEST_CASE("KVCache: rows of different lengths and grouped-query heads attend as without a cache") {
  Generator gen(4);
  const TensorOptions f64{.dtype = DType::f64};
  // 4 query heads over 2 kv heads; row 0 has 5 positions, row 1 has 3.
  const Tensor q = randn({2, 4, 5, 8}, f64, &gen), k = randn({2, 2, 5, 8}, f64, &gen),
               v = randn({2, 2, 5, 8}, f64, &gen);
  nn::KVCache cache(1, 2, 2, 8, 6, f64);
  cache.attend(0, q.narrow(2, 0, 2), k.narrow(2, 0, 2), v.narrow(2, 0, 2));  // a prefill of 2
  cache.set_lengths({2, 1});  // row 1's prompt was 1 token (its second position padding)
  // Row 0 adds positions 2..4 in one call; row 1 then adds its position 1 alone.
  const Tensor y0 = cache.attend(0, q.narrow(2, 2, 3), k.narrow(2, 2, 3), v.narrow(2, 2, 3));
  CHECK(cache.lengths() == std::vector<int64_t>{2, 1});  // attend does not move the lengths
  // Query head h reads kv head h / 2: the reference repeats each kv head twice.
  auto repeated = [](const Tensor& t) {
    return t.unsqueeze(2).expand({-1, -1, 2, -1, -1}).reshape({2, 4, 5, 8});
  };
  const Tensor ref = scaled_dot_product_attention(q, repeated(k), repeated(v), true);
  check_close(y0.narrow(0, 0, 1), ref.narrow(0, 0, 1).narrow(2, 2, 3), 1e-12, 1e-12);
  cache.set_lengths({5, 1});
  const Tensor q1 = randn({2, 4, 1, 8}, f64, &gen);
  const Tensor y1 = cache.attend(0, q1, k.narrow(2, 1, 1), v.narrow(2, 1, 1));
  // Row 1's query sees its cached position 0 and the new position 1 (k's position 1).
  const Tensor ref1 =
      scaled_dot_product_attention(q1.narrow(0, 1, 1), repeated(k).narrow(0, 1, 1).narrow(2, 0, 2),
                                   repeated(v).narrow(0, 1, 1).narrow(2, 0, 2));
  check_close(y1.narrow(0, 1, 1), ref1, 1e-12, 1e-12);
  check_error([&] { cache.attend(0, q1, k.narrow(2, 0, 2).narrow(0, 0, 1), v); }, {"expected k"});
  cache.set_lengths({6, 1});
  check_error([&] { cache.attend(0, q1, k.narrow(2, 1, 1), v.narrow(2, 1, 1)); },
              {"more than its capacity of 6"});
}

TEST_CASE(
    "generate: the cache gives generation without it, token for token (GPT and Llama, greedy, "
    "f32 and f64)") {
  for (const std::string family : {"gpt", "llama"}) {
    for (const DType dtype : {DType::f32, DType::f64}) {
      CAPTURE(family);
      CAPTURE(dtype_name(dtype));
      const std::unique_ptr<models::CausalLM> model = nano(family, dtype);
      // Three prompts of different lengths in one batch, to 12 + 40 = 52 of the 64 positions:
      // each row's positions (learned or rotary) its own.
      const Rows prompts = {{5, 9, 200, 31, 7}, {42}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
      const models::GenerateOptions greedy{.max_tokens = 40, .sampling = {.temperature = 0}};
      models::GenerateOptions uncached = greedy;
      uncached.kv_cache = false;
      const Run with = run(*model, prompts, greedy), without = run(*model, prompts, uncached);
      CHECK(with.tokens == without.tokens);
      REQUIRE(with.logits.size() == 40);
      double worst = 0;
      for (size_t s = 0; s < with.logits.size(); ++s)
        worst = std::max(worst, relative_difference(with.logits[s], without.logits[s]));
      CHECK(worst < (dtype == DType::f64 ? 1e-12 : 1e-6));
      // A row batched with others is the row alone.
      CHECK(run(*model, {prompts[1]}, greedy).tokens[0] == with.tokens[1]);
      CHECK(with.tokens[0].size() == 40);
    }
  }
}

TEST_CASE("a cache that does not serve the tokens is refused by name (GPT and Llama)") {
  for (const std::string family : {"gpt", "llama"}) {
    CAPTURE(family);
    const std::unique_ptr<models::CausalLM> model = nano(family, DType::f32);
    const std::string name = family + "-nano";
    const Tensor two_rows = zeros({2, 3}, {.dtype = DType::i64});
    nn::KVCache one_row = model->make_cache(1);
    check_error([&] { model->hidden(two_rows, &one_row); },
                {name, "a cache of 1 rows", "for 2 rows of tokens"});
    nn::KVCache full = model->make_cache(2);
    full.set_lengths({62, 0});  // 62 + 3 positions: past the context of 64
    check_error([&] { model->hidden(two_rows, &full); },
                {name, "positions 62..64", "past the context of 64"});
  }
}

TEST_CASE("generate: past the context the cache shifts; sampling is seeded; stops end a row") {
  Generator init(8);
  models::GPT gpt(models::gpt_config("gpt-nano"), &init);
  // 60 + 30 tokens: the row fills the 64 positions and keeps going on its last 32.
  const Rows long_prompt = {std::vector<int64_t>(60, 65)};
  const Rows out = models::generate(gpt, long_prompt, {.max_tokens = 30, .sampling = {0}});
  models::GenerateOptions uncached{.max_tokens = 4, .sampling = {0}, .kv_cache = false};
  CHECK(std::vector<int64_t>(out[0].begin(), out[0].begin() + 4) ==
        models::generate(gpt, long_prompt, uncached)[0]);
  CHECK(out[0].size() == 30);
  // The same seed, the same tokens; top-k 1 is greedy.
  const models::GenerateOptions sampled{
      .max_tokens = 20, .sampling = {.temperature = 1.5, .top_k = 50, .top_p = 0.9}};
  Generator a(11), b(11), c(12);
  const Rows prompts = {{1, 2, 3}, {4}};
  auto with = [](models::GenerateOptions o, Generator& g) {
    o.gen = &g;
    return o;
  };
  const Rows first = models::generate(gpt, prompts, with(sampled, a));
  CHECK(first == models::generate(gpt, prompts, with(sampled, b)));
  CHECK(first != models::generate(gpt, prompts, with(sampled, c)));
  CHECK(models::generate(gpt, prompts, {.max_tokens = 20, .sampling = {.top_k = 1}}) ==
        models::generate(gpt, prompts, {.max_tokens = 20, .sampling = {.temperature = 0}}));
  // A stop token ends its row (and is its last token); on_token returning false ends a row.
  const Rows greedy = models::generate(gpt, prompts, {.max_tokens = 20, .sampling = {0}});
  const int64_t stop = greedy[0][5];
  const auto first_stop = std::find(greedy[0].begin(), greedy[0].end(), stop) - greedy[0].begin();
  std::vector<int64_t> streamed;
  const Rows stopped = models::generate(gpt, prompts,
                                        {.max_tokens = 20,
                                         .sampling = {0},
                                         .stop_tokens = {stop},
                                         .on_token = [&](int64_t row, int64_t token) {
                                           if (row == 0) streamed.push_back(token);
                                           return row != 1 || token != greedy[1][2];
                                         }});
  CHECK(stopped[0] == std::vector<int64_t>(greedy[0].begin(), greedy[0].begin() + first_stop + 1));
  CHECK(streamed == stopped[0]);
  CHECK(stopped[1].size() <= 3);
  check_error([&] { models::generate(gpt, {std::vector<int64_t>(65, 1)}); },
              {"prompt 1 is 65 tokens", "context"});
  check_error([&] { models::generate(gpt, {{300}}); }, {"token 300", "vocabulary"});
}

TEST_CASE("sampling: top-p keeps the fewest likeliest tokens that reach p") {
  // Probabilities 0.5, 0.3, 0.15, 0.05: top-p 0.7 keeps the first two (0.5 < 0.7 <= 0.8), so
  // token 0 comes with probability 0.5 / 0.8 = 0.625 and tokens 2 and 3 never.
  const std::vector<double> logits = {std::log(0.5), std::log(0.3), std::log(0.15), std::log(0.05)};
  Generator gen(5);
  std::vector<int> seen(4, 0);
  for (int i = 0; i < 2000; ++i) ++seen[size_t(models::sample_token(logits, {.top_p = 0.7}, gen))];
  CHECK(seen[2] + seen[3] == 0);
  CHECK(std::abs(seen[0] / 2000.0 - 0.625) < 0.035);  // 3.3 standard deviations
  // Top-k 3 then top-p 0.9 of what is left (0.5, 0.3, 0.15 of 0.95): all three are needed.
  std::vector<int> three(4, 0);
  for (int i = 0; i < 2000; ++i)
    ++three[size_t(models::sample_token(logits, {.top_k = 3, .top_p = 0.9}, gen))];
  CHECK(three[3] == 0);
  CHECK(three[2] > 200);  // 0.15 / 0.95 of 2000 is 316
  // A tiny p keeps only the likeliest: greedy.
  Generator init(9);
  models::GPT gpt(models::gpt_config("gpt-nano"), &init);
  const Rows prompts = {{3, 1, 4}};
  CHECK(models::generate(gpt, prompts, {.max_tokens = 10, .sampling = {.top_p = 1e-9}}) ==
        models::generate(gpt, prompts, {.max_tokens = 10, .sampling = {.temperature = 0}}));
  check_error([&] { models::generate(gpt, prompts, {.max_tokens = 1, .sampling = {.top_p = 0}}); },
              {"top_p must be in (0, 1]"});
}

TEST_CASE("TextStream: text passes on as it comes, held back only while it may begin a stop") {
  const std::vector<std::string> pieces = {"Hel", "lo", " wo", "rld", "\n\n", "Bye"};
  std::vector<std::string> seen;
  models::TextStream stream(
      2, [&](int64_t t) { return pieces[size_t(t)]; }, {"\n\n", "world!"},
      [&](int64_t row, std::string_view text) {
        seen.push_back(std::to_string(row) + ":" + std::string(text));
      });
  CHECK(stream.add(0, 0));
  CHECK(stream.add(0, 1));
  CHECK(stream.add(0, 2));  // " wo" may begin "world!": held
  CHECK(seen == std::vector<std::string>{"0:Hel", "0:lo", "0: "});
  CHECK(stream.add(1, 3));
  CHECK(stream.add(0, 3));  // " world" still may
  CHECK(seen.size() == 4);
  CHECK_FALSE(stream.add(0, 4));  // "world\n\n": a stop; "world" is no stop and passes on
  CHECK_FALSE(stream.add(0, 5));  // the row takes no more
  CHECK(stream.text(0) == "Hello world");
  stream.finish();
  CHECK(stream.text(1) == "rld");
  check_error([] { models::TextStream({1, {}, {""}}); }, {"stop string must not be empty"});
}
