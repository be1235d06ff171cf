#include "test_util.h"

#include <dlf/nn/data/masking.h>

using namespace dlf;
using dlf::test::check_error;
using nn::data::mask_tokens;

TEST_CASE("mask_tokens: 15% chosen, of them 80% masked, 10% random, 10% kept; labels") {
  constexpr int64_t kMask = 5, kVocab = 256, kN = 200000;
  Generator gen(3);
  const Tensor tokens = randint(0, kVocab, {4, kN / 4}, {.dtype = DType::i64}, &gen);
  const uint64_t state = gen.offset();
  const nn::data::MaskedBatch batch = mask_tokens(tokens, gen, kMask, kVocab);
  REQUIRE(batch.inputs.shape() == tokens.shape());
  REQUIRE(batch.labels.shape() == tokens.shape());
  CHECK(batch.inputs.dtype() == DType::i64);
  CHECK(batch.labels.dtype() == DType::i64);

  const auto t = tokens.to_vector<int64_t>(), in = batch.inputs.to_vector<int64_t>(),
             label = batch.labels.to_vector<int64_t>();
  int64_t chosen = 0, masked = 0, random = 0, kept = 0, random_zero = 0, wrong = 0;
  for (int64_t i = 0; i < kN; ++i) {
    if (label[i] == -100) {
      wrong += in[i] != t[i];  // not chosen: unchanged
      continue;
    }
    ++chosen;
    wrong += label[i] != t[i];  // chosen: labelled with the original
    if (in[i] == kMask && t[i] != kMask) {
      ++masked;
    } else if (in[i] == t[i]) {
      ++kept;
    } else {
      ++random;
      random_zero += in[i] == 0;  // the random range starts at 0 (only mask_token is left out)
      wrong += in[i] < 0 || in[i] >= kVocab;
    }
  }
  CHECK(wrong == 0);
  CHECK(double(chosen) / kN == doctest::Approx(0.15).epsilon(0.03));
  CHECK(double(masked) / double(chosen) == doctest::Approx(0.8).epsilon(0.02));
  CHECK(double(random) / double(chosen) == doctest::Approx(0.1).epsilon(0.1));
  CHECK(double(kept) / double(chosen) == doctest::Approx(0.1).epsilon(0.1));
  CHECK(random_zero > 0);

  // The generator's state alone decides the batch.
  Generator again(3);
  again.set_offset(state);
  const nn::data::MaskedBatch same = mask_tokens(tokens, again, kMask, kVocab);
  CHECK(same.inputs.to_vector<int64_t>() == in);
  CHECK(same.labels.to_vector<int64_t>() == label);
  CHECK(mask_tokens(tokens, again, kMask, kVocab).labels.to_vector<int64_t>() != label);

  check_error([&] { mask_tokens(tokens, gen, 256, kVocab); }, {"mask token 256", "[0, vocab)"});
  check_error([&] { mask_tokens(tokens, gen, kMask, kVocab, 1.5); }, {"probability 1.5"});
  check_error([&] { mask_tokens(tokens.to(DType::f32), gen, kMask, kVocab); }, {"integers"});
}
