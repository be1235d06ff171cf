// Fuzz target of the safetensors reader: any bytes must parse or fail with a dlf::Error — never
// crash, hang or read out of bounds.
//
// With clang (scripts/fuzz.sh safetensors): a libFuzzer target. Otherwise (DLF_FUZZ_REPLAY, the
// ctest entry): the replay program of fuzz_replay.h; its seeds are tests/fuzz/safetensors_corpus.
#include <cstdint>
#include <filesystem>
#include <string_view>

#include <dlf/dlf.h>

#include "fuzz_replay.h"

namespace {

void parse(const uint8_t* data, size_t size) {
  try {
    const dlf::Safetensors s = dlf::parse_safetensors({reinterpret_cast<const char*>(data), size});
    for (const auto& [name, t] : s.tensors) (void)dlf::checksum64(t);  // touch every byte read
  } catch (const dlf::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse(data, size);
  return 0;
}

#ifdef DLF_FUZZ_REPLAY
namespace {

// Small files of every dtype, metadata, scalars and empty tensors.
void write_seeds(const std::filesystem::path& dir) {
  using namespace dlf;
  std::filesystem::create_directories(dir);
  save_safetensors((dir / "seed0.safetensors").string(),
                   {{"w", arange(0, 12, 1).view({3, 4})},
                    {"b", zeros({4}, {.dtype = DType::f64})},
                    {"s", full({}, 3.0)}},
                   {{"format", "pt"}});
  save_safetensors((dir / "seed1.safetensors").string(),
                   {{"half", arange(0, 8, 1).to(DType::bf16)},
                    {"ids", from_vector<int64_t>({1, -2, 3})},
                    {"i32", from_vector<int32_t>({4, 5})},
                    {"mask", from_vector<bool>({true, false})},
                    {"empty", zeros({0, 3})}});
}

}  // namespace

int main(int argc, char** argv) { return replay_main(argc, argv, parse, write_seeds); }
#endif
