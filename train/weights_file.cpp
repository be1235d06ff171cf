#include <dlf/train/weights_file.h>

#include <dlf/core/safetensors.h>
#include <dlf/core/sharded_safetensors.h>
#include <dlf/models/family.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>

#include <filesystem>

namespace dlf::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kConfigKey = "dlf.config";

bool is_safetensors(const fs::path& path) { return path.extension() == ".safetensors"; }

// A directory as save_pretrained leaves one with a single file: model.safetensors.
bool is_hf_directory(const fs::path& path) {
  return fs::is_directory(path) && fs::exists(path / "model.safetensors");
}

// PATH's tensors and metadata when it is safetensors: a file, shards, or a directory of one file.
std::optional<Safetensors> load_any_safetensors(const fs::path& path) {
  if (is_safetensors(path)) return load_safetensors(path.string());
  if (is_sharded_safetensors(path.string())) return load_sharded_safetensors(path.string());
  if (is_hf_directory(path)) return load_safetensors((path / "model.safetensors").string());
  return std::nullopt;
}

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
  if (std::optional<Safetensors> file = load_any_safetensors(path)) {
    w.tensors = std::move(file->tensors);
    if (const auto it = file->metadata.find(kConfigKey); it != file->metadata.end())
      w.run = run_config_from_json(it->second);
  } else {
    const nn::Checkpoint ckpt = nn::load_checkpoint(checkpoint_dir(path));
    w.tensors = ckpt.model;
    w.run = run_config_from_json(ckpt.config);
  }
  if (const models::Family* family = models::family_of_hf_state(w.tensors))
    w.tensors = family->hf.from_hf(w.tensors);
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
    if (is_safetensors(path) || is_sharded_safetensors(path) || is_hf_directory(path)) {
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
  const bool taken =
      is_safetensors(p) || p.filename() == "checkpoint.h5"
          ? fs::exists(p)
          : fs::exists(p / "checkpoint.h5") || is_sharded_safetensors(path) || is_hf_directory(p);
  DLF_CHECK(!taken, path, " holds ", describe_weights(path), ": ", choices);
}

void write_weights(const std::string& path, const nn::NamedTensors& state, const RunConfig& run,
                   WeightNames names, uint64_t max_shard_bytes) {
  const models::HfLayout& hf = models::family_of(run.model).hf;
  DLF_CHECK(names == WeightNames::dlf || hf.to_hf, "--names hf: ", run.model,
            "'s family has no Hugging Face layout in dlf; its names are already its reference's");
  const nn::NamedTensors tensors = names == WeightNames::hf ? hf.to_hf(state) : state;
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {kConfigKey, to_json(run)}};
  if (max_shard_bytes > 0) {
    DLF_CHECK(!fs::path(path).has_extension(), path,
              ": shards go in a directory (model-00001-of-0000N.safetensors and ",
              kSafetensorsIndex, "): name one without an extension");
    save_sharded_safetensors(path, tensors, max_shard_bytes, metadata);
    return;
  }
  if (is_safetensors(path)) {
    save_safetensors(path, tensors, metadata);
    return;
  }
  DLF_CHECK(names == WeightNames::dlf, "--names hf: a dlf checkpoint keeps dlf's names ",
            "(write a .safetensors file, or shards with --max-shard-size, for Hugging Face's)");
  nn::save_checkpoint(checkpoint_dir(path), {.model = state, .config = to_json(run)});
}

}  // namespace dlf::train
