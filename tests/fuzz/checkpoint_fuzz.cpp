// Fuzz target of the checkpoint reader (the one function that reads untrusted HDF5): any bytes
// must load or fail with a dlf::Error — never crash, hang or read out of bounds.
//
// With clang (scripts/fuzz.sh): a libFuzzer target. Otherwise (DLF_FUZZ_REPLAY, the ctest
// entry): the replay program of fuzz_replay.h; its seeds are tests/fuzz/checkpoint_corpus.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dlf/dlf.h>

#include "fuzz_replay.h"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const char* shm = "/dev/shm";
    fs::path d = fs::path(fs::is_directory(shm) ? shm : fs::temp_directory_path()) /
                 ("dlf_checkpoint_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Each input in a directory of its own: a new file every time, so that nothing HDF5 may keep
// of one input (it identifies open files by inode) meets the next.
void load(const uint8_t* data, size_t size) {
  static uint64_t inputs = 0;
  const fs::path dir = scratch_dir() / std::to_string(inputs++);
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "checkpoint.h5", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  struct Remove {
    const fs::path& dir;
    ~Remove() { fs::remove_all(dir); }
  } remove{dir};
  try {
    const dlf::nn::Checkpoint c = dlf::nn::load_checkpoint(dir.string());
    for (const auto* list : {&c.model, &c.optimizer}) {
      for (const auto& [name, t] : *list) (void)dlf::checksum64(t);  // touch every byte read
    }
  } catch (const dlf::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  load(data, size);
  return 0;
}

#ifdef DLF_FUZZ_REPLAY
namespace {

// Small checkpoints of every dtype, tied tensors, scalars and empty tensors.
void write_seeds(const fs::path& dir) {
  using namespace dlf;
  fs::create_directories(dir);
  const Tensor w = arange(0, 12, 1).view({3, 4});
  const nn::Checkpoint seeds[] = {
      {.model = {{"w", w}, {"tied", w}, {"b", zeros({4}, {.dtype = DType::f64})}},
       .optimizer = {{"w.exp_avg", full({3, 4}, 0.25)}, {"step", full({}, 3.0)}},
       .step = 3,
       .rng_seed = 1337,
       .rng_offset = 42,
       .config = R"({"model":"seed"})"},
      {.model = {{"half", arange(0, 8, 1).to(DType::bf16)},
                 {"ids", from_vector<int64_t>({1, -2, 3})},
                 {"i32", from_vector<int32_t>({4, 5})},
                 {"mask", from_vector<bool>({true, false})},
                 {"empty", zeros({0, 3})}}},
  };
  for (size_t i = 0; i < std::size(seeds); ++i) {
    const fs::path sub = scratch_dir() / ("seed" + std::to_string(i));
    nn::save_checkpoint(sub.string(), seeds[i]);
    fs::copy_file(sub / "checkpoint.h5", dir / ("seed" + std::to_string(i) + ".h5"),
                  fs::copy_options::overwrite_existing);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int status = replay_main(argc, argv, load, write_seeds);
  fs::remove_all(scratch_dir());
  return status;
}
#endif
