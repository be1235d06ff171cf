#include <dlf/train/weights_file.h>

#include <dlf/core/safetensors.h>
#include <dlf/models/gpt_names.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>

#include <filesystem>

namespace dlf::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kConfigKey = "dlf.config";

bool is_safetensors(const fs::path& path) { return path.extension() == ".safetensors"; }

// The checkpoint directory PATH names: itself, or the directory of its checkpoint.h5.
std::string checkpoint_dir(const fs::path& path) {
  if (path.filename() == "checkpoint.h5")
    return path.parent_path().empty() ? "." : path.parent_path().string();
  DLF_CHECK(!path.has_extension() || fs::is_directory(path), path.string(),
            ": weights are a .safetensors file or a dlf checkpoint (a directory holding "
            "checkpoint.h5, or that file)");
  return path.string();
}

}  // namespace

Weights read_weights(const std::string& path) {
  Weights w;
  if (is_safetensors(path)) {
    Safetensors file = load_safetensors(path);
    w.tensors = std::move(file.tensors);
    if (const auto it = file.metadata.find(kConfigKey); it != file.metadata.end())
      w.run = run_config_from_json(it->second);
  } else {
    const nn::Checkpoint ckpt = nn::load_checkpoint(checkpoint_dir(path));
    w.tensors = ckpt.model;
    w.run = run_config_from_json(ckpt.config);
  }
  if (models::is_hf_gpt(w.tensors)) w.tensors = models::gpt_from_hf(w.tensors);
  return w;
}

RunConfig run_for_weights(const Weights& weights, const std::string& path,
                          const std::string& model) {
  if (weights.run) {
    DLF_CHECK(model.empty() || model == weights.run->model, "--model ", model, ": ", path,
              " holds a ", weights.run->model);
    return *weights.run;
  }
  DLF_CHECK(!model.empty(), path,
            " does not say which model it holds: name it with --model (dlf help train lists "
            "the models)");
  RunConfig run;
  run.model = model;
  models::family_of(model);  // a dlf::Error for an unknown name
  return run;
}

std::string describe_weights(const std::string& path) {
  try {
    if (is_safetensors(path)) {
      const Weights w = read_weights(path);
      return w.run ? w.run->model + " weights"
                   : "weights of " + std::to_string(w.tensors.size()) + " tensors";
    }
    const nn::Checkpoint ckpt = nn::load_checkpoint(checkpoint_dir(path));
    return "a " + run_config_from_json(ckpt.config).model + " checkpoint at step " +
           std::to_string(ckpt.step);
  } catch (const Error&) {
    return "a file that does not read as weights";
  }
}

void check_not_replacing(const std::string& path, bool overwrite, const std::string& choices) {
  if (overwrite) return;
  const fs::path p(path);
  const fs::path file =
      is_safetensors(p) || p.filename() == "checkpoint.h5" ? p : p / "checkpoint.h5";
  DLF_CHECK(!fs::exists(file), path, " holds ", describe_weights(path), ": ", choices);
}

void write_weights(const std::string& path, const nn::NamedTensors& state, const RunConfig& run,
                   WeightNames names) {
  const bool gpt = bool(models::family_of(run.model).gpt);
  DLF_CHECK(names == WeightNames::nanogpt || gpt,
            "--names hf: Hugging Face GPT-2 names are for "
            "GPT models; ",
            run.model, "'s names are already its family's usual ones");
  if (is_safetensors(path)) {
    save_safetensors(path, names == WeightNames::hf ? models::gpt_to_hf(state) : state,
                     {{"format", "pt"}, {kConfigKey, to_json(run)}});
    return;
  }
  DLF_CHECK(names == WeightNames::nanogpt, "--names hf: a dlf checkpoint keeps dlf's names ",
            "(write a .safetensors file for GPT-2's)");
  nn::save_checkpoint(checkpoint_dir(path), {.model = state, .config = to_json(run)});
}

}  // namespace dlf::train
