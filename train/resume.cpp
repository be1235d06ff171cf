#include <dlf/train/resume.h>

#include <cstdio>
#include <filesystem>
#include <map>

namespace dlf::train {

RunConfig resumed_config(const nn::Checkpoint& ckpt, const std::string& dir, const RunConfig& asked,
                         const std::set<std::string>& given) {
  RunConfig run = run_config_from_json(ckpt.config);
  DLF_CHECK(!given.contains("--model") || run.model == asked.model, "--resume: the checkpoint in ",
            dir, " is a ", run.model, ", not a ", asked.model);
  auto fixed = [&](const char* flag, const auto& was, const auto& now) {
    DLF_CHECK(!given.contains(flag) || was == now, "--resume: the checkpoint's run used ", flag,
              " ", detail::concat(was),
              "; a resumed run keeps its batch, sequence length, seed, "
              "data and tokenizer (start a new run to change them)");
  };
  fixed("--batch", run.batch, asked.batch);
  fixed("--seq", run.seq, asked.seq);
  fixed("--seed", run.seed, asked.seed);
  std::string data;
  for (const std::string& path : run.data) data += (data.empty() ? "" : " ") + path;
  fixed("--data", run.data.empty() ? "(the default corpus)" : data,
        asked.data == run.data ? (run.data.empty() ? "(the default corpus)" : data) : "");
  fixed("--tokenizer", run.tokenizer + " (hash " + run.tokenizer_hash + ")",
        asked.tokenizer_hash == run.tokenizer_hash
            ? run.tokenizer + " (hash " + run.tokenizer_hash + ")"
            : asked.tokenizer + " (hash " + asked.tokenizer_hash + ")");
  auto take = [&](const char* flag, auto& field, const auto& now) {
    if (!given.contains(flag) || field == now) return;
    std::fprintf(stderr, "resuming with %s %s (the checkpoint's run used %s)\n", flag,
                 detail::concat(now).c_str(), detail::concat(field).c_str());
    field = now;
  };
  take("--steps", run.steps, asked.steps);
  take("--lr", run.lr, asked.lr);
  take("--min-lr", run.min_lr, asked.min_lr);
  take("--warmup", run.warmup, asked.warmup);
  take("--weight-decay", run.weight_decay, asked.weight_decay);
  take("--clip", run.grad_clip, asked.grad_clip);
  DLF_CHECK(run.steps > ckpt.step, "--resume: the checkpoint is already at step ", ckpt.step,
            " of ", run.steps, "; pass a larger --steps to train on");
  return run;
}

void check_optimizer_state(const nn::Checkpoint& ckpt, const std::string& dir) {
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : ckpt.model) shapes.emplace(name, t.shape());
  for (const auto& [name, t] : ckpt.optimizer) {
    if (name == "step") {
      DLF_CHECK(t.numel() == 1, "--resume: ", dir, ": the optimizer's 'step' is not one number");
      continue;
    }
    const auto it = shapes.find(name.substr(0, name.rfind('.')));
    DLF_CHECK(it != shapes.end(), "--resume: ", dir, " has optimizer state '", name,
              "' for no tensor of the model (a checkpoint of an older dlf?)");
    DLF_CHECK(t.shape() == it->second, "--resume: ", dir, ": optimizer state '", name,
              "' has shape ", shape_str(t.shape()), " but its tensor ", shape_str(it->second),
              " (a damaged checkpoint?)");
  }
}

uint64_t checkpoint_room(const std::string& dir, int64_t parameters) {
  const uint64_t size = uint64_t(parameters) * 12 + (uint64_t(1) << 20);
  std::error_code none;  // no file yet: 0
  const uintmax_t there =
      std::filesystem::file_size(std::filesystem::path(dir) / "checkpoint.h5", none);
  const uint64_t old = there == uintmax_t(-1) ? 0 : uint64_t(there);
  return 2 * size > old ? 2 * size - old : 0;
}

}  // namespace dlf::train
