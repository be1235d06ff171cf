// The replay program of a fuzz target (DLF_FUZZ_REPLAY, the ctest entry): feeds every file of
// the given directories to the target; `--write-seeds DIR` writes its seed corpus instead.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

inline int replay_main(int argc, char** argv,
                       const std::function<void(const uint8_t*, size_t)>& load,
                       const std::function<void(const std::filesystem::path&)>& write_seeds) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "--write-seeds") {
    write_seeds(args[1]);
    return 0;
  }
  int replayed = 0;
  for (const std::string& arg : args) {
    for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(arg)) {
      std::ifstream in(e.path(), std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
      load(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %d inputs without a crash\n", replayed);
  return replayed == 0 ? 1 : 0;
}
