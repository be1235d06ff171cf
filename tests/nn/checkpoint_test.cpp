#include "test_util.h"

#include <dlf/nn/checkpoint.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace dlf;
using dlf::test::bitwise_equal;
using dlf::test::check_error;
using dlf::test::with_file_size_limit;
namespace fs = std::filesystem;

namespace {

struct Inner : nn::Module {
  Tensor w = register_parameter("weight", randn({3, 4}));
  Tensor half = register_buffer("half", randn({5}).to(DType::bf16));
};

struct Net : nn::Module {
  std::shared_ptr<Inner> inner = register_module("inner", std::make_shared<Inner>());
  Tensor bias = register_parameter("bias", randn({4}, {.dtype = DType::f64}));
  Tensor count = register_buffer("count", from_vector<int64_t>({1, -2, 3}));
  Tensor head = register_parameter("head", inner->w);  // tied
};

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dlf_ckpt_test_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string str() const { return path.string(); }
};

nn::Checkpoint checkpoint_of(const Net& net) {
  nn::optim::AdamW opt({{.params = net.parameters()}}, {.lr = 0.1});
  Tensor loss = sum(net.inner->w * net.inner->w) + sum(net.bias).to(DType::f32);
  loss.backward();
  opt.step();
  return {.model = net.state_dict(),
          .optimizer = opt.state_dict(),
          .step = 17,
          .rng_seed = 5,
          .rng_offset = 123456789012345ull,
          .config = R"({"model": "net"})"};
}

}  // namespace

TEST_CASE("checkpoint: everything round-trips bit for bit, in order, tied tensors included") {
  TempDir dir;
  Net net;
  const nn::Checkpoint saved = checkpoint_of(net);
  nn::save_checkpoint(dir.str(), saved);
  CHECK(nn::checkpoint_exists(dir.str()));
  const nn::Checkpoint loaded = nn::load_checkpoint(dir.str());
  CHECK(loaded.step == 17);
  CHECK(loaded.rng_seed == 5);
  CHECK(loaded.rng_offset == 123456789012345ull);
  CHECK(loaded.config == saved.config);
  for (const auto* pair : {&saved.model, &saved.optimizer}) {
    const nn::NamedTensors& back = pair == &saved.model ? loaded.model : loaded.optimizer;
    REQUIRE(back.size() == pair->size());
    for (size_t i = 0; i < back.size(); ++i) {
      CHECK(back[i].first == (*pair)[i].first);
      CHECK(bitwise_equal(back[i].second, (*pair)[i].second));
    }
  }
  Net fresh;
  nn::restore_module(fresh, loaded);
  for (const auto& [name, t] : net.state_dict()) {
    INFO(name);
    for (const auto& [other_name, u] : fresh.state_dict())
      if (other_name == name) CHECK(bitwise_equal(t, u));
  }
  // Saving again replaces the file and leaves no temporary behind.
  nn::save_checkpoint(dir.str(), {.model = net.state_dict(), .step = 18});
  CHECK(nn::load_checkpoint(dir.str()).step == 18);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++files;
  CHECK(files == 1);
}

TEST_CASE("checkpoint: a missing, unexpected or mis-shaped tensor is refused by name") {
  TempDir dir;
  Net net;
  nn::NamedTensors state = net.state_dict();
  const std::vector<double> before = net.bias.to_vector<double>();

  auto at = [&](nn::NamedTensors& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  nn::NamedTensors missing = state;
  missing.erase(at(missing, "bias"));
  nn::save_checkpoint(dir.str(), {.model = missing});
  check_error([&] { nn::restore_module(net, nn::load_checkpoint(dir.str())); },
              {"missing", "'bias'"});

  nn::NamedTensors wrong = state;
  at(wrong, "bias")->second = zeros({5}, {.dtype = DType::f64});
  nn::save_checkpoint(dir.str(), {.model = wrong});
  check_error([&] { nn::restore_module(net, nn::load_checkpoint(dir.str())); },
              {"'bias'", "[5]", "[4]"});

  nn::NamedTensors extra = state;
  extra.emplace_back("inner.extra", zeros({1}));
  nn::save_checkpoint(dir.str(), {.model = extra});
  check_error([&] { nn::restore_module(net, nn::load_checkpoint(dir.str())); },
              {"unexpected", "inner.extra"});
  CHECK(net.bias.to_vector<double>() == before);  // nothing was loaded
}

TEST_CASE("checkpoint: missing, foreign, truncated files are errors; a failed save keeps the old") {
  TempDir dir;
  check_error([&] { nn::load_checkpoint(dir.str()); }, {"no checkpoint", "checkpoint.h5"});

  fs::create_directories(dir.path);
  std::ofstream(dir.path / "checkpoint.h5") << "not an HDF5 file";
  check_error([&] { nn::load_checkpoint(dir.str()); }, {"has no seal"});

  Net net;
  nn::save_checkpoint(dir.str(), checkpoint_of(net));
  const fs::path file = dir.path / "checkpoint.h5";
  const fs::path copy = dir.path / "whole.h5";
  fs::copy_file(file, copy);

  // A save that fails half-way (an unstorable name, met after other tensors were written)
  // throws and leaves the previous checkpoint as it was.
  nn::NamedTensors bad = net.state_dict();
  bad.emplace_back("a/b", zeros({2}));
  check_error([&] { nn::save_checkpoint(dir.str(), {.model = bad, .step = 99}); },
              {"'a/b'", "cannot be stored"});
  CHECK(nn::load_checkpoint(dir.str()).step == 17);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++files;
  CHECK(files == 2);  // checkpoint.h5 and our copy: no temporary left

  fs::resize_file(file, fs::file_size(file) / 2);
  bool refused = false;
  try {
    const nn::Checkpoint c = nn::load_checkpoint(dir.str());
    nn::restore_module(net, c);
  } catch (const Error& e) {
    refused = std::string(e.what()).find("checkpoint") != std::string::npos;
  }
  CHECK(refused);
}

namespace {

std::vector<char> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& file, const std::vector<char>& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("checkpoint: a save that runs out of space is an error and keeps the previous one") {
  TempDir dir;
  Net net;
  nn::save_checkpoint(dir.str(), checkpoint_of(net));
  const std::vector<char> before = bytes_of(dir.path / "checkpoint.h5");
  nn::NamedTensors big = net.state_dict();
  big.emplace_back("big", zeros({1 << 16}));  // 256 KiB: past the limit below
  with_file_size_limit(64 << 10, [&] {
    check_error([&] { nn::save_checkpoint(dir.str(), {.model = big, .step = 99}); },
                {"saving", "failed", "the previous checkpoint is unchanged"});
  });
  CHECK(bytes_of(dir.path / "checkpoint.h5") == before);
  CHECK(nn::load_checkpoint(dir.str()).step == 17);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++files;
  CHECK(files == 1);  // the temporary is gone

  TempDir fresh;  // no previous checkpoint: the message says nothing was written
  with_file_size_limit(64 << 10, [&] {
    check_error([&] { nn::save_checkpoint(fresh.str(), {.model = big}); },
                {"no checkpoint was written"});
  });
  CHECK_FALSE(nn::checkpoint_exists(fresh.str()));
}

TEST_CASE("checkpoint: temporaries of killed saves are removed at the next save") {
  TempDir dir;
  fs::create_directories(dir.path);
  const fs::path dead = dir.path / "checkpoint.h5.tmp-999999999";  // no such process
  const fs::path alive = dir.path / ("checkpoint.h5.tmp-" + std::to_string(getppid()));
  const fs::path other = dir.path / "notes.txt";
  for (const fs::path& f : {dead, alive, other}) std::ofstream(f) << "x";
  nn::save_checkpoint(dir.str(), {.model = {{"w", zeros({2})}}});
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(alive));  // a save still under way in another process
  CHECK(fs::exists(other));
}

TEST_CASE("checkpoint: a flipped bit in a tensor is found and the tensor named") {
  TempDir dir;
  const Tensor pattern = arange(0, 64, 1, {.dtype = DType::f32}) + 1000.0;
  nn::save_checkpoint(dir.str(), {.model = {{"a", zeros({8})}, {"pattern", pattern}}});
  const fs::path file = dir.path / "checkpoint.h5";
  std::vector<char> bytes = bytes_of(file);
  const std::vector<float> values = pattern.to_vector<float>();
  const auto* first = reinterpret_cast<const char*>(values.data());
  const auto at = std::search(bytes.begin(), bytes.end(), first, first + 4 * values.size());
  REQUIRE(at != bytes.end());
  *(at + 37) ^= 0x10;
  write_bytes(file, bytes);
  check_error([&] { nn::load_checkpoint(dir.str()); }, {"'model/pattern'", "checksum"});
}

// Every byte of a small checkpoint, flipped three ways: each load gives back exactly what was
// saved or throws dlf::Error; nothing crashes or loads changed tensors without a word.
TEST_CASE("checkpoint: every mutated byte is either harmless or a dlf::Error") {
  TempDir dir;
  const nn::Checkpoint saved{
      .model = {{"w", arange(0, 6, 1).view({2, 3})}, {"n", from_vector<int64_t>({7, -8})}},
      .optimizer = {{"w.exp_avg", full({2, 3}, 0.5)}},
      .step = 3,
      .config = "{}"};
  nn::save_checkpoint(dir.str(), saved);
  const fs::path file = dir.path / "checkpoint.h5";
  const std::vector<char> original = bytes_of(file);
  int harmless = 0, refused = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    for (const unsigned char flip : {0x01, 0x80, 0xFF}) {
      std::vector<char> bytes = original;
      bytes[i] = char(bytes[i] ^ flip);
      write_bytes(file, bytes);
      try {
        const nn::Checkpoint loaded = nn::load_checkpoint(dir.str());
        INFO("byte ", i, " ^ ", int(flip), " loaded");
        CHECK(loaded.step == saved.step);
        CHECK(loaded.config == saved.config);
        for (const auto* list : {&saved.model, &saved.optimizer}) {
          const nn::NamedTensors& back = list == &saved.model ? loaded.model : loaded.optimizer;
          REQUIRE(back.size() == list->size());
          for (size_t k = 0; k < back.size(); ++k) {
            CHECK(back[k].first == (*list)[k].first);
            CHECK(bitwise_equal(back[k].second, (*list)[k].second));
          }
        }
        ++harmless;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  MESSAGE(original.size(), " bytes: ", harmless, " mutations harmless, ", refused, " refused");
  CHECK(refused > 0);
}
