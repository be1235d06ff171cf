#include "test_util.h"

#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/data/text_dataset.h>

#include <atomic>
#include <filesystem>
#include <fstream>

using namespace dlf;
using dlf::test::check_error;
using nn::data::Split;
using nn::data::TextDataset;
namespace fs = std::filesystem;

namespace {

// A scratch folder with the given files, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dlf_data_test_" + std::to_string(::getpid()));
  explicit TempDir(const std::vector<std::pair<std::string, std::string>>& files) {
    fs::create_directories(path);
    for (const auto& [name, text] : files) std::ofstream(path / name, std::ios::binary) << text;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string row(const Tensor& t, int64_t r) { return TextDataset::decode(t.select(0, r)); }

}  // namespace

TEST_CASE("data: text files concatenate in order and split into train and validation") {
  TempDir dir({{"a.txt", "0123456789"}, {"b.txt", "abcdefghij"}, {"c.dat", "index"}});
  // A folder means its files sorted by name, without fortune's *.dat index files.
  TextDataset ds({dir.path.string()}, 0.25);
  CHECK(ds.size(Split::train) == 15);
  CHECK(ds.size(Split::val) == 5);
  const nn::data::TextBatch w = ds.window(Split::train, 0, 2, 4);
  CHECK(w.x.shape() == Shape{2, 4});
  CHECK(w.x.dtype() == DType::i64);
  CHECK(row(w.x, 0) == "0123");
  CHECK(row(w.y, 0) == "1234");
  CHECK(row(w.x, 1) == "4567");
  CHECK(row(ds.window(Split::val, 0, 1, 3).x, 0) == "fgh");
  CHECK(row(ds.window(Split::val, 0, 1, 3).y, 0) == "ghi");
  CHECK(row(ds.window(Split::train, 1, 2, 4).x, 0) == "89ab");
  CHECK(row(ds.window(Split::train, 1, 2, 4).x, 1) == "0123");  // 3 windows, then wraps

  TextDataset files({dir / "b.txt", dir / "a.txt"}, 0.5);  // files keep the order given
  CHECK(row(files.window(Split::train, 0, 1, 9).x, 0) == "abcdefghi");
}

TEST_CASE("data: random batches depend on (seed, step) only, and every window is real text") {
  std::string text;
  for (int i = 0; i < 500; ++i) text += char('a' + i % 26);
  TempDir dir({{"t.txt", text}});
  TextDataset ds({dir / "t.txt"});
  const auto a = ds.sample(Split::train, 7, 4, 16, 42), b = ds.sample(Split::train, 7, 4, 16, 42);
  CHECK(a.x.to_vector<int64_t>() == b.x.to_vector<int64_t>());
  CHECK(ds.sample(Split::train, 8, 4, 16, 42).x.to_vector<int64_t>() != a.x.to_vector<int64_t>());
  CHECK(ds.sample(Split::train, 7, 4, 16, 43).x.to_vector<int64_t>() != a.x.to_vector<int64_t>());
  for (int64_t r = 0; r < 4; ++r) {  // y is x shifted by one byte of the alphabet cycle
    const std::string x = row(a.x, r), y = row(a.y, r);
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == char('a' + (x[i] - 'a' + 1) % 26));
    CHECK(text.find(x) < 450);  // inside the training split
  }
}

TEST_CASE("data: bad paths, empty text and short splits are errors that name them") {
  TempDir dir({{"empty.txt", ""}, {"short.txt", "abcdefghijklmnopqrst"}});
  check_error([&] { TextDataset({dir / "missing.txt"}); }, {"missing.txt", "does not exist"});
  check_error([&] { TextDataset({dir / "empty.txt"}); }, {"empty.txt", "empty"});
  TextDataset ds({dir / "short.txt"}, 0.1);
  check_error([&] { ds.sample(Split::val, 0, 1, 8, 0); }, {"validation split has 2 bytes", "8"});
  check_error([] { TextDataset::decode(from_vector<int64_t>({65, 300})); }, {"300", "not a byte"});
  CHECK(TextDataset::decode(TextDataset::encode("h\xc3\xa9llo\n")) == "h\xc3\xa9llo\n");
}

TEST_CASE("data: the default corpus is the fortunes package's text") {
  const std::vector<std::string> paths = nn::data::default_corpus_paths();
  REQUIRE(!paths.empty());
  for (const std::string& p : paths) {
    CHECK(fs::path(p).extension() != ".dat");
    CHECK(!fs::is_symlink(p));
  }
  TextDataset ds(paths);
  CHECK(ds.size(Split::train) > 1'000'000);
}

TEST_CASE("data: the prefetcher hands out make(first), make(first + 1), ... and runs ahead") {
  std::atomic<int> calls = 0;
  {
    nn::data::Prefetcher<int64_t> p(
        [&](int64_t i) {
          ++calls;
          return i * 10;
        },
        5);
    CHECK(p.next() == 50);
    CHECK(p.next() == 60);
    CHECK(p.next() == 70);
  }
  CHECK(calls == 4);  // the batch after the last one taken was already being made
  nn::data::Prefetcher<int64_t> failing(
      [](int64_t i) -> int64_t {
        if (i == 1) throw Error("batch 1 is broken");
        return i;
      },
      0);
  CHECK(failing.next() == 0);
  check_error([&] { failing.next(); }, {"batch 1 is broken"});
}
