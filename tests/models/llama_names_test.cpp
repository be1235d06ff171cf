#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/models/family.h>
#include <dlf/models/gpt_names.h>
#include <dlf/models/llama_names.h>

#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

// A Llama with 4 query heads over 2 kv heads of 4 dims, in f64.
models::LlamaConfig small_llama(bool interleaved) {
  return {.name = "small",
          .vocab = 11,
          .context = 9,
          .layers = 2,
          .heads = 4,
          .kv_heads = 2,
          .dim = 16,
          .ffn = 12,
          .rotary_interleaved = interleaved,
          .dtype = DType::f64};
}

}  // namespace

TEST_CASE("Llama rotary rows: interleaved pairs (2j, 2j+1) move to (j, j + d/2) and back") {
  // Two heads of d = 4 rows, one column: row r holds r.
  const Tensor meta = arange(8, {.dtype = DType::f64}).view({8, 1});
  const Tensor hf = models::rotate_half_rows(meta, 2);
  check_close(hf, {0, 2, 1, 3, 4, 6, 5, 7}, {8, 1}, 0, 0);
  check_close(models::interleaved_rows(hf, 2), meta, 0, 0);
  // d = 6: pairs (0,1), (2,3), (4,5) to (0,3), (1,4), (2,5)
  check_close(models::rotate_half_rows(arange(6, {.dtype = DType::f64}).view({6, 1}), 1),
              {0, 2, 4, 1, 3, 5}, {6, 1}, 0, 0);
  check_error([&] { models::rotate_half_rows(meta, 3); }, {"[8, 1]", "3 heads of even size"});
}

TEST_CASE("Llama rotary rows: interleaved rotary on Meta's rows = rotate-half on Hugging Face's") {
  autograd::NoGradGuard no_grad;
  Generator gen(7);
  const models::Llama meta(small_llama(true), &gen);
  models::Llama hf(small_llama(false));
  const nn::NamedTensors meta_state = meta.state_dict();
  hf.load_state_dict(models::rotate_half_state(meta_state, small_llama(false)));
  const Tensor idx =
      from_vector<int64_t>({3, 1, 4, 1, 5, 9, 2, 6, 5, 10, 0, 7, 8, 2, 3, 1}, {2, 8});
  const Tensor expected = meta.forward(idx);
  CHECK(test::relative_error(hf.forward(idx), expected) <= 1e-12);
  // Through the KV cache too (positions from each row's cached length).
  nn::KVCache cache = hf.make_cache(2);
  hf.forward(idx.narrow(1, 0, 5).contiguous(), cache);
  CHECK(test::relative_error(hf.forward(idx.narrow(1, 5, 3).contiguous(), cache),
                             expected.narrow(1, 5, 3).contiguous()) <= 1e-12);
  // Without the permutation the conventions disagree, and interleaved_state undoes it exactly.
  models::Llama unpermuted(small_llama(false));
  unpermuted.load_state_dict(meta_state);
  CHECK(test::relative_error(unpermuted.forward(idx), expected) > 1e-5);
  const nn::NamedTensors back = models::interleaved_state(hf.state_dict(), small_llama(false));
  REQUIRE(back.size() == meta_state.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CAPTURE(back[i].first);
    CHECK(back[i].first == meta_state[i].first);
    CHECK(test::bitwise_equal(back[i].second, meta_state[i].second));
  }
}

TEST_CASE("Hugging Face layouts: each family's record recognises its own, and only its own") {
  Generator gen(1);
  const models::Llama llama(small_llama(false), &gen);
  nn::NamedTensors hf_llama = llama.state_dict();
  hf_llama.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq",
                        arange(2, {.dtype = DType::f64}));
  const models::Family* family = models::family_of_hf_state(hf_llama);
  REQUIRE(family);
  CHECK(family->name == "llama");
  CHECK(family->hf.model_class == "LlamaForCausalLM");
  CHECK(family->hf.from_hf(hf_llama).size() == llama.state_dict().size());  // inv_freq dropped
  CHECK(family->hf.to_hf(llama.state_dict()).size() == llama.state_dict().size());

  const models::GPT gpt(models::gpt_config("gpt-nano"));
  const models::Family* gpt2 = models::family_of_hf_state(models::gpt_to_hf(gpt.state_dict()));
  REQUIRE(gpt2);
  CHECK(gpt2->name == "gpt");
  CHECK(gpt2->hf.model_class == "GPT2Model");
  CHECK(models::family_of_hf_state(gpt.state_dict()) == nullptr);  // dlf's (nanoGPT's) names
  CHECK_FALSE(models::family("bert").hf.to_hf);
}
