// safetensors: written files read back bit for bit, and every rule of the reference reader
// enforced on hand-made files.
#include "test_util.h"

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

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("dlf_safetensors_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A file: the header's length (little-endian), the header, the data.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

const Tensor* find(const Safetensors& s, const std::string& name) {
  for (const auto& [n, t] : s.tensors)
    if (n == name) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("safetensors: every dtype round-trips bit for bit, tied tensors once, metadata kept") {
  Generator gen(7);
  const Tensor w = randn({3, 5}, {}, &gen);
  const Tensor d = randn({2, 2}, {.dtype = DType::f64}, &gen);
  const Tensor h = randn({7}, {}, &gen).to(DType::bf16);
  const Tensor i = randint(-1000, 1000, {4}, {.dtype = DType::i64}, &gen);
  const Tensor j = randint(-9, 9, {2, 3}, {.dtype = DType::i32}, &gen);
  const Tensor m = from_vector<bool>({true, false, true});
  const Tensor s = full({}, 2.5);
  const Tensor e = Tensor::empty({0, 4}, DType::f32);
  const Tensor transposed = randn({4, 6}, {}, &gen).transpose(0, 1);  // not contiguous
  const fs::path path = scratch("round_trip.safetensors");
  const NamedTensors given = {{"w", w}, {"bias.h", h}, {"d", d},     {"mask", m},      {"i", i},
                              {"j", j}, {"scalar", s}, {"empty", e}, {"t", transposed}};
  NamedTensors with_tie = given;
  with_tie.emplace_back("tied", w);
  save_safetensors(path, with_tie, {{"format", "pt"}, {"note", "ünïcode \"quoted\""}});
  const std::string bytes = slurp(path);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  CHECK(header % 8 == 0);

  const Safetensors back = load_safetensors(path);
  CHECK(back.tensors.size() == 9);  // "tied" is w: stored once, under its first name
  CHECK(find(back, "tied") == nullptr);
  CHECK(back.metadata ==
        std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode \"quoted\""}});
  for (const auto& [name, t] : given) {
    INFO(name);
    REQUIRE(find(back, name) != nullptr);
    CHECK(bitwise_equal(*find(back, name), t));
  }
  // The reader sees the same from the bytes in memory, and the order is the bytes' order: the
  // 8-byte elements first, so that every tensor is aligned.
  const Safetensors parsed = parse_safetensors(bytes);
  REQUIRE(parsed.tensors.size() == back.tensors.size());
  for (size_t k = 0; k < parsed.tensors.size(); ++k) {
    CHECK(parsed.tensors[k].first == back.tensors[k].first);
    CHECK(bitwise_equal(parsed.tensors[k].second, back.tensors[k].second));
  }
  CHECK(back.tensors[0].first == "d");
  CHECK(back.tensors[1].first == "i");
  fs::remove_all(path.parent_path());
}

TEST_CASE("safetensors: a mapped tensor is a view of the file, copy-on-write") {
  const Tensor w = arange(12).reshape({3, 4});
  const fs::path path = scratch("mapped.safetensors");
  save_safetensors(path, {{"w", w}});
  const int64_t allocations = allocator_for(kCPU).stats().allocations;
  Safetensors back = load_safetensors(path);
  CHECK(allocator_for(kCPU).stats().allocations == allocations);  // no copy was made
  Tensor t = back.tensors[0].second;
  t.data<float>()[0] = 42;  // changes the mapping, not the file
  CHECK(bitwise_equal(load_safetensors(path).tensors[0].second, w));
  fs::remove_all(path.parent_path());
}

TEST_CASE("safetensors: F16 is widened to f32") {
  // 1, -2, 0.5, 65504 (the largest half), 2^-24 (the smallest subnormal), -0, inf
  const uint16_t halves[] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000, 0x7c00};
  const std::string header = R"({"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]}})";
  const Safetensors s =
      parse_safetensors(file_of(header, std::string(reinterpret_cast<const char*>(halves), 14)));
  const std::vector<float> got = s.tensors[0].second.to_vector<float>();
  const std::vector<float> expected = {1, -2, 0.5, 65504, std::ldexp(1.0f, -24), -0.0f, INFINITY};
  CHECK(got == expected);
  CHECK(std::signbit(got[5]));
}

TEST_CASE("safetensors: every rule of the reference reader is a dlf::Error naming the tensor") {
  const std::string four = std::string(4, '\0');
  const auto fails = [](const std::string& bytes, const std::vector<std::string>& fragments) {
    check_error([&] { parse_safetensors(bytes); }, fragments);
  };
  fails("abc", {"too short"});
  fails(std::string("\xff\xff\xff\xff\x00\x00\x00\x00", 8) + "{}", {"more than"});
  fails(std::string("\x40\x00\x00\x00\x00\x00\x00\x00", 8) + "{}", {"past the end"});
  fails(file_of("[1]"), {"does not start with '{'"});
  fails(file_of("{\"a\":"), {"not valid JSON"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)", four),
        {"not valid JSON"});
  fails(file_of("{\"\xff\":1}"), {"not valid JSON"});  // not UTF-8
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                four + four),
        {"'a' twice"});
  fails(file_of(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", four),
        {"tensor 'a'", "unknown dtype \"Q7\""});
  fails(file_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", four),
        {"tensor 'a'", "U8 is not one dlf computes in"});
  fails(file_of(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", four), {"'a'", "no \"dtype\""});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four),
        {"'a'", "not a size"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", four),
        {"'a'", "data_offsets"});
  // a gap, an overlap, a start past zero, a wrong size
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                four + four + four),
        {"tensor 'b'", "should start at 4"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                four + four),
        {"tensor 'b'", "should start at 8"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", four + four),
        {"tensor 'a'", "should start at 0"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", four + four),
        {"tensor 'a'", "takes 12 bytes", "give 8"});
  fails(file_of(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                four + four),
        {"tensor 'a'", "overflows"});
  // the data cut short, or bytes no tensor owns
  fails(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four),
        {"tensor 'a'", "past the file's 4 bytes"});
  fails(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four + four),
        {"cover 4 bytes", "has 8"});
  fails(file_of(R"({"__metadata__":{"k":1}})"), {"__metadata__ 'k'", "not a string"});
  fails(file_of(R"({"m":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})", "\x02"),
        {"tensor 'm'", "neither 0 nor 1"});
  // and the file's name leads every message of load_safetensors
  const fs::path path = scratch("short.safetensors");
  std::ofstream(path) << "abc";
  check_error([&] { load_safetensors(path); }, {path.string(), "too short"});
  check_error([&] { load_safetensors((path.parent_path() / "none").string()); }, {"cannot open"});
  fs::remove_all(path.parent_path());
}

TEST_CASE("safetensors: a failed save leaves the previous file whole") {
  const fs::path path = scratch("kept.safetensors");
  save_safetensors(path, {{"w", ones({2})}});
  check_error(
      [&] {
        save_safetensors(path, {{"w", ones({2})}, {"__metadata__", ones({1})}});
      },
      {"'__metadata__'"});
  check_error(
      [&] {
        save_safetensors(path, {{"w", ones({2})}, {"w", zeros({2})}});
      },
      {"'w' is given to two tensors"});
  with_file_size_limit(4096, [&] {
    check_error(
        [&] {
          save_safetensors(path, {{"w", zeros({1 << 16})}});
        },
        {"saving", "failed", "the previous safetensors file is unchanged"});
  });
  CHECK(bitwise_equal(load_safetensors(path).tensors[0].second, ones({2})));
  fs::remove_all(path.parent_path());
}

TEST_CASE("safetensors: the header's JSON is read strictly — escapes, UTF-8, nesting") {
  const std::string four(4, '\0');
  // Escaped names decode to UTF-8; whitespace and unknown fields are allowed.
  const Safetensors s = parse_safetensors(
      file_of("{ \"caf\\u00e9.\\ud83d\\ude00\\n\" : {\"dtype\":\"F32\", \"shape\":[1],"
              "\"data_offsets\":[0,4], \"extra\":[null,true,false,-1.5e3,{}]} }",
              four));
  CHECK(s.tensors.at(0).first == "café.\xf0\x9f\x98\x80\n");
  const auto fails = [](const std::string& header, const std::string& what) {
    check_error([&] { parse_safetensors(file_of(header)); }, {"not valid JSON", what});
  };
  fails(R"({"\ud800":1})", "high surrogate without its low one");
  fails(R"({"\udc00":1})", "lone low surrogate");
  fails(R"({"\q":1})", "unknown escape");
  fails("{\"a\tb\":1}", "control character");
  fails("{\"\xc0\x80\":1}", "not UTF-8");      // an overlong NUL
  fails("{\"\xed\xa0\x80\":1}", "not UTF-8");  // a surrogate in UTF-8
  fails(R"({"a":01})", "expected '}'");
  fails(R"({"a":1.})", "without digits after '.'");
  fails(R"({"a":[1,]})", "unexpected character");
  fails(R"({"a":1,})", "expected a member name");
  fails(R"({"a":tru})", "unexpected character");
  fails("{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}", "nested deeper");
  // Numbers must be whole sizes where sizes are meant.
  for (const char* dim : {"1.0", "1e0", "-0", "18446744073709551616"}) {
    INFO(dim);
    check_error(
        [&] {
          parse_safetensors(file_of(
              std::string(R"({"a":{"dtype":"F32","shape":[)") + dim + R"(],"data_offsets":[0,4]}})",
              four));
        },
        {"tensor 'a'", "not a size"});
  }
  // and what is written is quoted: names with quotes, backslashes and control characters
  const fs::path path = scratch("names.safetensors");
  const std::string odd = "a\"b\\c\x01\td";
  save_safetensors(path, {{odd, ones({1})}}, {{"k\n", "v\""}});
  const Safetensors back = load_safetensors(path);
  CHECK(back.tensors.at(0).first == odd);
  CHECK(back.metadata.at("k\n") == "v\"");
  check_error([&] { save_safetensors(path, {{"\xff", ones({1})}}); }, {"not UTF-8"});
  fs::remove_all(path.parent_path());
}
