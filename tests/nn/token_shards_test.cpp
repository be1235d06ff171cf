#include "test_util.h"

#include <dlf/nn/data/token_stream.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

using namespace dlf;
using dlf::test::check_error;
using nn::data::ShardWriter;
using nn::data::Split;
using nn::data::TokenShard;
using nn::data::TokenShards;
namespace fs = std::filesystem;

namespace {

// A scratch folder, removed at the end of the test.
struct ShardDir {
  fs::path path = fs::temp_directory_path() / ("dlf_shard_test_" + std::to_string(::getpid()));
  ShardDir() { fs::create_directories(path); }
  ~ShardDir() { fs::remove_all(path); }
  // A shard `name` of ids first, first + 1, ..., first + n - 1 (mod vocab).
  fs::path write(const std::string& name, uint32_t first, int64_t n, uint32_t vocab = 256,
                 uint64_t hash = 0) const {
    ShardWriter w(path / name, hash, vocab);
    std::vector<uint32_t> ids(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = uint32_t((first + i) % vocab);
    w.append(ids);
    w.close();
    return path / name;
  }
};

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

// Every row of a batch as its first input id (each window starts at a distinct id here).
std::vector<int64_t> firsts(const nn::data::TextBatch& b) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < b.x.size(0); ++r) out.push_back(b.x.data<int64_t>()[r * b.x.size(1)]);
  return out;
}

}  // namespace

TEST_CASE("token shards: the header as docs/data.md lays it out, ids u16 or u32") {
  ShardDir dir;
  const fs::path small = dir.write("a.tok", 7, 3);
  std::vector<char> b = bytes_of(small);
  REQUIRE(b.size() == 64 + 3 * 2);
  CHECK(std::string(b.data(), 7) == "DLFTOKS");
  CHECK(b[8] == 1);   // version
  CHECK(b[12] == 2);  // u16
  CHECK(b[16] == 3);  // count
  CHECK(b[33] == 1);  // vocab 256, little-endian
  CHECK(b[64] == 7);  // the first id
  CHECK(b[66] == 8);
  const fs::path wide = dir.write("b.tok", 70000, 2, 70001, 0xABCD);
  const TokenShard shard(wide);
  CHECK(shard.header().token_bytes == 4);
  CHECK(shard.header().tokenizer_hash == 0xABCD);
  int64_t ids[2];
  shard.read(0, 2, ids);
  CHECK(ids[0] == 70000);
  CHECK(ids[1] == 0);  // 70001 mod 70001
  check_error([&] { ShardWriter(dir.path / "c.tok", 0, 256).append(std::vector<uint32_t>{256}); },
              {"id 256", "vocabulary of 256"});
}

TEST_CASE("token shards: a bad magic, version, id width or a truncated file is refused") {
  ShardDir dir;
  const fs::path good = dir.write("a.tok", 0, 10);
  const std::vector<char> b = bytes_of(good);
  auto broken = [&](size_t at, char value) {
    std::vector<char> c = b;
    c[at] = value;
    write_bytes(dir.path / "bad.tok", c);
    return dir.path / "bad.tok";
  };
  check_error([&] { TokenShard{broken(0, 'X')}; }, {"bad.tok", "not a token shard"});
  check_error([&] { TokenShard{broken(8, 2)}; }, {"format version 2", "reads version 1"});
  check_error([&] { TokenShard{broken(12, 3)}; }, {"3 bytes wide", "2 (u16) or 4 (u32)"});
  write_bytes(dir.path / "bad.tok", std::vector<char>(b.begin(), b.end() - 1));
  check_error([&] { TokenShard{dir.path / "bad.tok"}; },
              {"83 bytes", "counts 10 ids", "truncated"});
  write_bytes(dir.path / "bad.tok", std::vector<char>(b.begin(), b.begin() + 20));
  check_error([&] { TokenShard{dir.path / "bad.tok"}; }, {"20 bytes", "64-byte header"});
  check_error([&] { TokenShards(dir.path / "none"); }, {"no token shards", "dlf tokenize"});
  dir.write("z.tok", 0, 10, 256, 5);
  fs::remove(dir.path / "bad.tok");
  check_error([&] { TokenShards{dir.path.string()}; }, {"different tokenizers"});
}

TEST_CASE("token shards: the permutation of a seed and epoch is a bijection, new each epoch") {
  for (int64_t n : {1, 2, 3, 17, 1000}) {
    std::set<int64_t> seen;
    for (int64_t i = 0; i < n; ++i) seen.insert(nn::data::permuted_index(i, n, 42, 0));
    CHECK(int64_t(seen.size()) == n);
    CHECK(*seen.rbegin() == n - 1);
  }
  std::vector<int64_t> e0, e1, again;
  for (int64_t i = 0; i < 100; ++i) {
    e0.push_back(nn::data::permuted_index(i, 100, 42, 0));
    e1.push_back(nn::data::permuted_index(i, 100, 42, 1));
    again.push_back(nn::data::permuted_index(i, 100, 42, 0));
  }
  CHECK(e0 == again);
  CHECK(e0 != e1);
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(e0 != identity);
}

TEST_CASE("token shards: windows cover each epoch once, replicas disjoint, resumable by step") {
  ShardDir dir;
  // Two shards of ids 0..100 and 1000..1060 (vocab 2000), 10 % held out: training parts of 90
  // and 54 ids hold (90 - 1) / 4 = 22 and (54 - 1) / 4 = 13 windows of 4 + 1 ids.
  dir.write("0.tok", 0, 100, 2000);
  dir.write("1.tok", 1000, 60, 2000);
  const TokenShards shards(dir.path.string(), 0.1);
  CHECK(shards.size(Split::train) == 144);
  CHECK(shards.size(Split::val) == 16);
  CHECK(shards.windows(4) == 35);
  CHECK(shards.vocab() == 2000);
  // Batches of 5 over 35 windows: steps 0..6 are epoch 0, each window once.
  std::multiset<int64_t> epoch0;
  for (int64_t step = 0; step < 7; ++step) {
    const nn::data::TextBatch b = shards.sample(step, 5, 4, 9, 0, 5);
    for (int64_t r = 0; r < 5; ++r) {
      const int64_t* x = b.x.data<int64_t>() + r * 4;
      const int64_t* y = b.y.data<int64_t>() + r * 4;
      CHECK(y[0] == x[1]);
      CHECK(y[3] == x[3] + 1);  // consecutive ids: the target is the next one
    }
    for (int64_t f : firsts(b)) epoch0.insert(f);
  }
  CHECK(epoch0.size() == 35);
  CHECK(std::set<int64_t>(epoch0.begin(), epoch0.end()).size() == 35);
  CHECK(epoch0.count(0) == 1);
  CHECK(epoch0.count(84) == 1);    // shard 0's last window: 84..88
  CHECK(epoch0.count(1048) == 1);  // shard 1's last window: 1048..1052
  CHECK(shards.position(7, 5, 4) == nn::data::StreamPosition{.epoch = 1, .index = 0});
  CHECK(shards.position(8, 4, 4) == nn::data::StreamPosition{.epoch = 0, .index = 32});
  // Replica 0 and 1 of two: their rows are the whole batch's, disjoint.
  const std::vector<int64_t> whole = firsts(shards.sample(3, 6, 4, 9, 0, 6));
  std::vector<int64_t> halves = firsts(shards.sample(3, 6, 4, 9, 0, 3));
  const std::vector<int64_t> second = firsts(shards.sample(3, 6, 4, 9, 3, 3));
  halves.insert(halves.end(), second.begin(), second.end());
  CHECK(halves == whole);
  // Deterministic by seed and step (a resumed run asks for the same step); another seed differs.
  CHECK(firsts(shards.sample(5, 6, 4, 9, 0, 6)) == firsts(shards.sample(5, 6, 4, 9, 0, 6)));
  CHECK(firsts(shards.sample(5, 6, 4, 9, 0, 6)) != firsts(shards.sample(5, 6, 4, 10, 0, 6)));
  // Held-out windows come from each shard's last ids: 90..99 then 1054..1059.
  CHECK(firsts(shards.window(0, 2, 4, 0, 2)) == std::vector<int64_t>{90, 94});
  CHECK(firsts(shards.window(1, 2, 4, 0, 2)) == std::vector<int64_t>{1054, 90});
}
