#include <dlf/core/random.h>
#include <dlf/nn/data/text_dataset.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace dlf::nn::data {
namespace fs = std::filesystem;

namespace {

// Regular files of a folder, sorted; fortune's index files (*.dat) and the UTF-8 symlinks
// (*.u8) are not text of their own.
std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path& p = entry.path();
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    if (p.extension() == ".dat" || p.extension() == ".u8") continue;
    out.push_back(p.string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLF_CHECK(in.good(), "cannot read text file ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::vector<std::string> default_corpus_paths() {
  const fs::path dir = "/usr/share/games/fortunes";
  std::vector<std::string> files;
  if (fs::is_directory(dir)) files = files_in(dir);
  DLF_CHECK(!files.empty(), "the default corpus ", dir.string(),
            " is missing: install Debian's 'fortunes' package (scripts/setup.sh does) or pass "
            "--data");
  return files;
}

std::vector<std::string> text_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    DLF_CHECK(fs::exists(path), "text file or folder ", path, " does not exist");
    // A FIFO or a device would block or never end: only files and folders are text.
    DLF_CHECK(fs::is_directory(path) || fs::is_regular_file(path), path,
              " is neither a regular file nor a folder (a pipe or a device?)");
    const std::vector<std::string> files =
        fs::is_directory(path) ? files_in(path) : std::vector<std::string>{path};
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

TextDataset::TextDataset(const std::vector<std::string>& paths, double val_fraction) {
  DLF_CHECK(val_fraction > 0 && val_fraction < 1,
            "TextDataset: val_fraction must be in (0, 1), got ", val_fraction);
  DLF_CHECK(!paths.empty(), "TextDataset: no text files given");
  for (const std::string& file : text_files(paths)) bytes_ += read_file(file);
  DLF_CHECK(!bytes_.empty(), "TextDataset: the text in ", paths.front(),
            paths.size() > 1 ? " and the rest" : "", " is empty");
  train_size_ = static_cast<int64_t>(double(bytes_.size()) * (1 - val_fraction));
}

int64_t TextDataset::size(Split split) const {
  return split == Split::train ? train_size_ : int64_t(bytes_.size()) - train_size_;
}

TextBatch TextDataset::gather(Split split, const std::vector<int64_t>& starts, int64_t seq) const {
  const int64_t batch = int64_t(starts.size());
  TextBatch b{Tensor::empty({batch, seq}, DType::i64, kCPU),
              Tensor::empty({batch, seq}, DType::i64, kCPU)};
  const auto* text = reinterpret_cast<const unsigned char*>(bytes_.data()) +
                     (split == Split::train ? 0 : train_size_);
  int64_t *x = b.x.data<int64_t>(), *y = b.y.data<int64_t>();
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t t = 0; t < seq; ++t) {
      x[r * seq + t] = text[starts[r] + t];
      y[r * seq + t] = text[starts[r] + t + 1];
    }
  }
  return b;
}

TextBatch TextDataset::sample(Split split, int64_t step, int64_t batch, int64_t seq,
                              uint64_t seed) const {
  const int64_t n = size(split);
  DLF_CHECK(batch > 0 && seq > 0, "TextDataset: batch and seq must be positive");
  DLF_CHECK(n > seq, "TextDataset: the ", split == Split::train ? "training" : "validation",
            " split has ", n, " bytes, too few for windows of ", seq, " + 1");
  std::vector<int64_t> starts(batch);
  for (int64_t r = 0; r < batch; ++r) {
    const auto w = philox(seed, uint64_t(step * batch + r));
    const uint64_t draw = (uint64_t(w[0]) << 32) | w[1];
    starts[r] = int64_t(draw % uint64_t(n - seq));
  }
  return gather(split, starts, seq);
}

TextBatch TextDataset::window(Split split, int64_t index, int64_t batch, int64_t seq) const {
  const int64_t n = size(split);
  DLF_CHECK(n > seq, "TextDataset: the ", split == Split::train ? "training" : "validation",
            " split has ", n, " bytes, too few for windows of ", seq, " + 1");
  const int64_t windows = (n - 1) / seq;
  std::vector<int64_t> starts(batch);
  for (int64_t r = 0; r < batch; ++r) starts[r] = ((index * batch + r) % windows) * seq;
  return gather(split, starts, seq);
}

Tensor TextDataset::encode(const std::string& text) {
  Tensor t = Tensor::empty({int64_t(text.size())}, DType::i64, kCPU);
  for (size_t i = 0; i < text.size(); ++i)
    t.data<int64_t>()[i] = static_cast<unsigned char>(text[i]);
  return t;
}

std::string TextDataset::decode(const Tensor& tokens) {
  std::string s;
  for (int64_t id : tokens.to_vector<int64_t>()) {
    DLF_CHECK(id >= 0 && id < 256, "decode: token ", id, " is not a byte");
    s += static_cast<char>(id);
  }
  return s;
}

}  // namespace dlf::nn::data
