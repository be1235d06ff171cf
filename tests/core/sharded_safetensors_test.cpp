// Sharded safetensors: save_pretrained's shard names, fill and index, read back from the index or
// its directory; a damaged set of shards refused by name.
#include <dlf/core/sharded_safetensors.h>

#include "test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace dlf;
using dlf::test::bitwise_equal;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed at the end of the scope.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("dlf_shards_" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// f32 tensors of 40, 24, 80 and 8 bytes, and a tie.
NamedTensors four_tensors() {
  const Tensor a = full({10}, 1.5), b = full({2, 3}, -2), c = full({4, 5}, 3), d = full({2}, 4);
  return {{"a", a}, {"b", b}, {"c", c}, {"tied_a", a}, {"d", d}};
}

}  // namespace

TEST_CASE("sharded safetensors: shards of at most the given bytes, in order, and their index") {
  const Scratch s;
  const NamedTensors tensors = four_tensors();
  // 64 bytes a shard: a + b (64), c alone (80 > 64: its own), d; the tie stored once
  save_sharded_safetensors(s.dir.string(), tensors, 64, {{"format", "pt"}});
  for (const char* file : {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                           "model-00003-of-00003.safetensors"})
    CHECK(fs::exists(s.dir / file));
  CHECK(
      slurp(s.dir / kSafetensorsIndex) ==
      "{\"metadata\":{\"total_size\":152},\"weight_map\":{"
      "\"a\":\"model-00001-of-00003.safetensors\",\"b\":\"model-00001-of-00003.safetensors\","
      "\"c\":\"model-00002-of-00003.safetensors\",\"d\":\"model-00003-of-00003.safetensors\"}}\n");
  CHECK(is_sharded_safetensors(s.dir.string()));
  CHECK(is_sharded_safetensors((s.dir / kSafetensorsIndex).string()));
  CHECK_FALSE(is_sharded_safetensors((s.dir / "model-00001-of-00003.safetensors").string()));
  for (const fs::path& path : {s.dir, s.dir / kSafetensorsIndex}) {
    const Safetensors back = load_sharded_safetensors(path.string());
    CHECK(back.metadata == std::map<std::string, std::string>{{"format", "pt"}});
    REQUIRE(back.tensors.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      const size_t from = i < 3 ? i : 4;  // the tie is not stored
      CHECK(back.tensors[i].first == tensors[from].first);
      CHECK(bitwise_equal(back.tensors[i].second, tensors[from].second));
    }
  }
  // Written again in one shard: the three old ones are gone.
  save_sharded_safetensors(s.dir.string(), tensors, 1000);
  CHECK(fs::exists(s.dir / "model-00001-of-00001.safetensors"));
  CHECK_FALSE(fs::exists(s.dir / "model-00001-of-00003.safetensors"));
  CHECK(load_sharded_safetensors(s.dir.string()).tensors.size() == 4);
}

TEST_CASE(
    "sharded safetensors: a missing shard or tensor, or an index of another save, is refused") {
  const Scratch s;
  save_sharded_safetensors(s.dir.string(), four_tensors(), 64);
  const fs::path index = s.dir / kSafetensorsIndex;
  const std::string good = slurp(index);
  auto with_index = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    write(index, text);
  };
  fs::rename(s.dir / "model-00002-of-00003.safetensors", s.dir / "moved.safetensors");
  check_error(
      [&] { load_sharded_safetensors(s.dir.string()); },
      {kSafetensorsIndex, "puts 'c' in model-00002-of-00003.safetensors, which is missing"});
  fs::rename(s.dir / "moved.safetensors", s.dir / "model-00002-of-00003.safetensors");
  with_index("\"d\":", "\"e\":\"model-00001-of-00003.safetensors\",\"d\":");
  check_error([&] { load_sharded_safetensors(index.string()); },
              {"puts 'e' in model-00001-of-00003.safetensors, which does not hold it"});
  with_index("\"b\":\"model-00001-of-00003.safetensors\",", "");
  check_error([&] { load_sharded_safetensors(index.string()); },
              {"model-00001-of-00003.safetensors holds 'b', which", "does not list"});
  with_index("\"b\":", "\"a\":\"model-00001-of-00003.safetensors\",\"b\":");
  check_error([&] { load_sharded_safetensors(index.string()); }, {"lists 'a' twice"});
  with_index("\"model-00001-of-00003.safetensors\"", "\"../model-00001-of-00003.safetensors\"");
  check_error([&] { load_sharded_safetensors(index.string()); },
              {"tensor 'a' is mapped to something other than a shard file beside the index"});
  write(index, "{\"metadata\":{}}");
  check_error([&] { load_sharded_safetensors(index.string()); }, {"no \"weight_map\" object"});
  write(index, "{\"weight_map\":");
  check_error([&] { load_sharded_safetensors(index.string()); }, {kSafetensorsIndex});
  fs::remove(index);
  check_error([&] { load_sharded_safetensors(index.string()); },
              {"cannot open", "a directory holding model.safetensors.index.json"});
  check_error([&] { save_sharded_safetensors(s.dir.string(), four_tensors(), 0); },
              {"must hold some bytes"});
}
