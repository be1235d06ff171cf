// Running a program and reading what it printed: the suite's cases, git and cmake.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dlf::perf::detail {

/// What a finished program left.
struct ProcessResult {
  int exit_code = 0;  ///< its exit code; 128 + the signal when a signal ended it
  std::string out;    ///< standard output
  std::string err;    ///< standard error
};

/// Runs argv[0] (searched in PATH) with `argv`, the environment plus `env`, in `cwd` (empty:
/// this one), and waits. A dlf::Error when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& cwd = "");

/// run_process, and a dlf::Error naming `what`, the command and its stderr when it fails.
std::string run_or_throw(const std::string& what, const std::vector<std::string>& argv,
                         const std::string& cwd = "");

/// Holds an exclusive flock on a file while alive (`path` empty: none); other benchmark runs
/// on the machine take the same one.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace dlf::perf::detail
