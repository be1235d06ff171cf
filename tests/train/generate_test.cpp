#include <dlf/train/generate.h>
#include <dlf/train/run.h>
#include <dlf/train/weights_file.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"

namespace dlf {
namespace fs = std::filesystem;
using dlf::test::check_error;

namespace {

// A checkpoint of `model` as initialised from its seed, in a folder removed at the end.
struct InitialCheckpoint {
  std::string dir;
  explicit InitialCheckpoint(const std::string& model)
      : dir((fs::temp_directory_path() / ("dlf_generate_test_" + model)).string()) {
    train::RunConfig run;
    run.model = model;
    run.batch = 4;
    train::write_weights(dir, train::initial_state(run), run, train::WeightNames::dlf);
  }
  ~InitialCheckpoint() { fs::remove_all(dir); }
};

std::string generated(const train::GenerateOptions& options) {
  std::string text;
  train::generate(options, [&](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace

TEST_CASE("generate: a GPT continues each prompt, with its key/value cache as without") {
  const InitialCheckpoint ckpt("gpt-nano");
  train::GenerateOptions o{.checkpoint = ckpt.dir, .prompts = {"Hi", "ab"}, .max_tokens = 6};
  o.top_k = 1;  // greedy: the same tokens whatever the seed
  const std::string cached = generated(o);
  // "Hi" and its 6 bytes, a newline, then "ab" and its 6 bytes and a newline
  REQUIRE(cached.size() == 2 * (2 + 6 + 1));
  CHECK(cached.substr(0, 2) == "Hi");
  CHECK(cached.substr(9, 2) == "ab");
  o.no_cache = true;
  CHECK(generated(o) == cached);
}

TEST_CASE("generate: BERT fills each [MASK] with a byte and lists its likeliest") {
  const InitialCheckpoint ckpt("bert-tiny");
  const std::string text = generated({.checkpoint = ckpt.dir, .prompts = {"a[MASK]c"}, .top_k = 3});
  const size_t newline = text.find('\n');
  REQUIRE(newline == 3);  // "a?c": the mask is one byte
  CHECK(text[0] == 'a');
  CHECK(text[2] == 'c');
  CHECK(text.substr(4, 11) == "  [MASK] 1:");
  // three candidates, each a quoted byte and its probability; the first is the byte filled in
  const std::string candidates = text.substr(15);
  CHECK(std::count(candidates.begin(), candidates.end(), '.') == 3);
  CHECK(candidates.substr(0, 3) == "  '");
  check_error([&] { generated({.checkpoint = ckpt.dir, .prompts = {"no mask"}}); },
              {"--prompt has no [MASK] for bert-tiny"});
}

TEST_CASE("generate: a classifier is refused, naming what each family makes") {
  const InitialCheckpoint ckpt("vit-tiny");
  check_error([&] { generated({.checkpoint = ckpt.dir}); },
              {"vit-tiny classifies images and generates nothing", "dlf eval"});
}

TEST_CASE("evaluate: an untrained byte-level GPT's loss is about ln 256, as chance") {
  const InitialCheckpoint ckpt("gpt-nano");
  const train::CheckpointEvaluation e =
      train::evaluate_checkpoint({.checkpoint = ckpt.dir, .batches = 2});
  CHECK(e.run.model == "gpt-nano");
  CHECK(e.batches == 2);
  CHECK(e.value.loss == doctest::Approx(std::log(256.0)).epsilon(0.02));
  check_error([&] { train::evaluate_checkpoint({.checkpoint = ckpt.dir + "/none"}); }, {"none"});
}

}  // namespace dlf
