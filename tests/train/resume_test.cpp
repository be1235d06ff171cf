#include <dlf/core/factory.h>
#include <dlf/train/resume.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace dlf {
using dlf::test::check_error;

namespace {

// A checkpoint at step 4 of a 10-step gpt-nano run with batch 8 and lr 1e-3.
nn::Checkpoint at_step_4() {
  train::RunConfig run;
  run.model = "gpt-nano";
  run.steps = 10;
  run.batch = 8;
  run.lr = 1e-3;
  return {.model = {{"w", zeros({2, 3})}},
          .optimizer = {{"w.exp_avg", zeros({2, 3})}, {"step", zeros({1})}},
          .step = 4,
          .config = train::to_json(run)};
}

}  // namespace

TEST_CASE("resume: the checkpoint's run, with the schedule the command line gives again") {
  const nn::Checkpoint ckpt = at_step_4();
  train::RunConfig asked;
  asked.model = "gpt-nano";
  asked.steps = 20;
  asked.lr = 5e-4;
  asked.batch = 2;  // not given: the checkpoint's 8 stays
  const train::RunConfig run = train::resumed_config(ckpt, "ck", asked, {"--steps", "--lr"});
  CHECK(run.steps == 20);
  CHECK(run.lr == 5e-4);
  CHECK(run.batch == 8);
  CHECK(train::resumed_config(ckpt, "ck", asked, {}).steps == 10);
  check_error([&] { train::resumed_config(ckpt, "ck", asked, {"--batch"}); },
              {"--resume: the checkpoint's run used --batch 8", "start a new run"});
  asked.model = "bert-tiny";
  check_error([&] { train::resumed_config(ckpt, "ck", asked, {"--model"}); },
              {"the checkpoint in ck is a gpt-nano, not a bert-tiny"});
  asked.model = "gpt-nano";
  asked.steps = 4;
  check_error([&] { train::resumed_config(ckpt, "ck", asked, {"--steps"}); },
              {"already at step 4 of 4", "larger --steps"});
}

TEST_CASE("resume: optimizer state belongs to the model's tensors, with their shapes") {
  nn::Checkpoint ckpt = at_step_4();
  train::check_optimizer_state(ckpt, "ck");
  ckpt.optimizer.emplace_back("v.exp_avg", zeros({3}));
  check_error([&] { train::check_optimizer_state(ckpt, "ck"); },
              {"ck has optimizer state 'v.exp_avg' for no tensor of the model"});
  ckpt.optimizer.back() = {"w.exp_avg_sq", zeros({3, 2})};
  check_error([&] { train::check_optimizer_state(ckpt, "ck"); },
              {"optimizer state 'w.exp_avg_sq' has shape [3, 2] but its tensor [2, 3]"});
  ckpt.optimizer.back() = {"step", zeros({2})};
  check_error([&] { train::check_optimizer_state(ckpt, "ck"); }, {"'step' is not one number"});
}

TEST_CASE("resume: a save needs room for two checkpoints, less the one it replaces") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "dlf_resume_room_test";
  fs::remove_all(dir);
  const uint64_t one = 1000 * 12 + (1 << 20);  // 1000 parameters, weights and two moments
  CHECK(train::checkpoint_room(dir.string(), 1000) == 2 * one);
  fs::create_directories(dir);
  std::ofstream(dir / "checkpoint.h5") << std::string(5000, 'x');
  CHECK(train::checkpoint_room(dir.string(), 1000) == 2 * one - 5000);
  fs::remove_all(dir);
}

TEST_CASE("resume: a run config records its tokenizer; one written before tokenizers read bytes") {
  train::RunConfig run;
  run.tokenizer = "gpt2";
  run.tokenizer_hash = "05a2d0fbfd0028f2";
  run.vocab = 50257;
  const train::RunConfig back = train::run_config_from_json(train::to_json(run));
  CHECK(back.tokenizer == "gpt2");
  CHECK(back.tokenizer_hash == "05a2d0fbfd0028f2");
  CHECK(back.vocab == 50257);
  // The config of a dlf before tokenizers: no tokenizer, hash or vocabulary.
  const std::string old =
      R"({"run": {"model": "gpt-nano", "data": [], "steps": 7, "batch": 8, "seq": 0, "lr": 0.001,
      "min_lr": 0.0001, "warmup": 0, "weight_decay": 0.1, "grad_clip": 1.0, "seed": 1337,
      "val_fraction": 0.1}})";
  const train::RunConfig bytes = train::run_config_from_json(old);
  CHECK(bytes.steps == 7);
  CHECK(bytes.tokenizer.empty());
  CHECK(bytes.tokenizer_hash.empty());
  CHECK(bytes.vocab == 0);
}

}  // namespace dlf
