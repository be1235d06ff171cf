// Writing files so that a failure leaves the previous one whole, and checking first that it can.
#include <unistd.h>

#include <filesystem>

#include <dlf/device/atomic_file.h>

#include "test_util.h"

using namespace dlf;
using dlf::test::check_error;
namespace fs = std::filesystem;

TEST_CASE("check_writable: refuses before the work what the write would refuse after it") {
  const fs::path dir =
      fs::temp_directory_path() / ("dlf_atomic_file_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path target = dir / "sub" / "checkpoint.h5";
  CHECK(check_writable(target, "--checkpoint") == target.parent_path());
  CHECK(fs::is_directory(target.parent_path()));
  CHECK(fs::is_empty(target.parent_path()));  // its probe is gone
  check_error([&] { check_writable("/proc/dlf-x/checkpoint.h5", "--checkpoint"); },
              {"--checkpoint: cannot create the directory /proc/dlf-x"});
  check_error([&] { check_writable("/proc/dlf-x.json", "--trace"); },
              {"--trace: cannot write in /proc ("});
  check_error([&] { check_writable(dir, "--report"); },
              {"--report: ", " is a directory: give a file's name"});
  check_error([&] { check_writable(target, "--checkpoint", uint64_t(1) << 62); },
              {"--checkpoint: ", " free, and writing checkpoint.h5 needs 4194304.00 TiB"});
  fs::remove_all(dir);
}
