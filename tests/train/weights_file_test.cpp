#include <dlf/core/safetensors.h>
#include <dlf/train/run.h>
#include <dlf/train/weights_file.h>

#include <filesystem>

#include "test_util.h"

namespace dlf {
namespace fs = std::filesystem;
using dlf::test::check_error;

namespace {

// A fresh folder under the temporary directory, removed at the end of the scope.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dlf_weights_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// The tensor named `name` of `state`; a failed check when there is none.
Tensor named(const nn::NamedTensors& state, const std::string& name) {
  for (const auto& [n, t] : state)
    if (n == name) return t;
  FAIL("no tensor ", name);
  return {};
}

train::RunConfig nano() {
  train::RunConfig run;
  run.model = "gpt-nano";
  run.steps = 7;
  return run;
}

}  // namespace

TEST_CASE("weights file: a checkpoint and safetensors in either GPT naming read back the same") {
  const TempDir dir;
  const train::RunConfig run = nano();
  const nn::NamedTensors state = train::initial_state(run);
  train::write_weights(dir / "ckpt", state, run, train::WeightNames::dlf);
  train::write_weights(dir / "hf.safetensors", state, run, train::WeightNames::hf);
  // GPT-2's names on disk, dlf's on reading
  CHECK(named(load_safetensors(dir / "hf.safetensors").tensors, "h.0.attn.c_attn.weight").numel() >
        0);
  for (const std::string& path :
       {dir / "ckpt", dir / "ckpt/checkpoint.h5", dir / "hf.safetensors"}) {
    CAPTURE(path);
    const train::Weights w = train::read_weights(path);
    REQUIRE(w.run);
    CHECK(w.run->steps == 7);
    CHECK(train::run_for_weights(w, path, "").model == "gpt-nano");
    // every tensor as written (safetensors holds a tied one once: the model restores it)
    const nn::NamedTensors back = train::state_from_weights(*w.run, w.tensors);
    REQUIRE(back.size() == state.size());
    for (const auto& [name, t] : state) CHECK(test::bitwise_equal(named(back, name), t));
  }
  CHECK(train::describe_weights(dir / "ckpt") == "a gpt-nano checkpoint at step 0");
  CHECK(train::describe_weights(dir / "hf.safetensors") == "gpt-nano weights");
  CHECK(train::describe_weights(dir / "missing.safetensors") ==
        "a file that does not read as weights");
}

TEST_CASE("weights file: refusals name the file and the fix") {
  const TempDir dir;
  const train::RunConfig run = nano();
  const nn::NamedTensors state = train::initial_state(run);
  train::write_weights(dir / "ckpt", state, run, train::WeightNames::dlf);
  check_error([&] { train::check_not_replacing(dir / "ckpt", false, "give --overwrite"); },
              {"ckpt holds a gpt-nano checkpoint at step 0: give --overwrite"});
  train::check_not_replacing(dir / "ckpt", true, "");  // overwriting is asked for
  train::check_not_replacing(dir / "free", false, "");
  check_error([&] { train::write_weights(dir / "x", state, run, train::WeightNames::hf); },
              {"--names hf: a dlf checkpoint keeps dlf's names"});
  check_error([&] { train::read_weights(dir / "weights.bin"); },
              {"weights.bin", ".safetensors file or a dlf checkpoint"});
  const train::Weights w = train::read_weights(dir / "ckpt");
  check_error([&] { train::run_for_weights(w, "ckpt", "bert-tiny"); },
              {"--model bert-tiny: ckpt holds a gpt-nano"});
  const train::Weights bare{.tensors = state};
  check_error([&] { train::run_for_weights(bare, "w.safetensors", ""); },
              {"w.safetensors does not say which model it holds"});
  CHECK(train::run_for_weights(bare, "w.safetensors", "gpt-nano").steps ==
        train::RunConfig{}.steps);
}

TEST_CASE(
    "weights file: a Llama in Hugging Face's shards reads back, and another model's is refused") {
  const TempDir dir;
  train::RunConfig run;
  run.model = "llama-nano";
  const nn::NamedTensors state = train::initial_state(run);
  train::write_weights(dir / "hf", state, run, train::WeightNames::hf, 100'000);
  CHECK(fs::exists(dir / "hf/model-00006-of-00006.safetensors"));  // 526 kB of tensors
  CHECK(train::describe_weights(dir / "hf") == "llama-nano weights");
  for (const std::string& path : {dir / "hf", dir / "hf/model.safetensors.index.json"}) {
    CAPTURE(path);
    const train::Weights w = train::read_weights(path);
    REQUIRE(w.run);
    const nn::NamedTensors back = train::state_from_weights(*w.run, w.tensors);
    REQUIRE(back.size() == state.size());
    for (const auto& [name, t] : state) CHECK(test::bitwise_equal(named(back, name), t));
  }
  check_error([&] { train::check_not_replacing(dir / "hf", false, "give --overwrite"); },
              {"hf holds llama-nano weights: give --overwrite"});
  // A directory as save_pretrained leaves a model of one file.
  train::write_weights(dir / "one/model.safetensors", state, run, train::WeightNames::hf);
  CHECK(train::read_weights(dir / "one").tensors.size() == state.size());
  // Shards of llama-nano read as llama-mini: the shape names the tensor.
  train::RunConfig mini = run;
  mini.model = "llama-mini";
  check_error([&] { train::state_from_weights(mini, train::read_weights(dir / "hf").tensors); },
              {"model.embed_tokens.weight", "not llama-mini's"});
  check_error(
      [&] { train::write_weights(dir / "x.safetensors", state, run, train::WeightNames::dlf, 9); },
      {"x.safetensors: shards go in a directory"});
  train::RunConfig bert;
  bert.model = "bert-tiny";
  check_error(
      [&] { train::write_weights(dir / "b.safetensors", {}, bert, train::WeightNames::hf); },
      {"--names hf: bert-tiny's family has no Hugging Face layout"});
}

}  // namespace dlf
