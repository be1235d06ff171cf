#include <dlf/error.h>
#include <dlf/perf/revisions.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "perf/process.h"

namespace dlf::perf {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool installed(const std::string& program) {
  return detail::run_process({"sh", "-c", "command -v " + program}).exit_code == 0;
}

}  // namespace

const std::vector<std::string>& harness_files() {
  static const std::vector<std::string> files = {"bench/suite_bench.cpp", "bench/suite_harness.h",
                                                 "bench/bench_json.h", "bench/bench_cli.h",
                                                 "bench/bare_matmul.h"};
  return files;
}

std::filesystem::path default_revision_cache() {
  if (const char* dir = std::getenv("DLF_BENCH_CACHE"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "dlf" / "bench";
  const char* home = std::getenv("HOME");
  DLF_CHECK(home != nullptr, "no cache folder for revisions: set DLF_BENCH_CACHE or give --cache");
  return std::filesystem::path(home) / ".cache" / "dlf" / "bench";
}

RevisionBuild build_revision(const std::filesystem::path& repo, const std::string& rev,
                             const std::filesystem::path& cache,
                             const std::filesystem::path& harness_source,
                             const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  RevisionBuild b;
  b.commit = trim(detail::run_or_throw(
      "finding revision " + rev,
      {"git", "-C", repo.string(), "rev-parse", "--verify", "--quiet", rev + "^{commit}"}));
  b.source = std::filesystem::absolute(cache) / b.commit.substr(0, 12);
  b.build = b.source / "build" / "release";
  if (!std::filesystem::exists(b.source / ".git")) {
    say("worktree of " + rev + " at " + b.source.string());
    std::filesystem::create_directories(cache);
    detail::run_or_throw("checking out " + rev, {"git", "-C", repo.string(), "worktree", "add",
                                                 "--detach", b.source.string(), b.commit});
  }
  const std::string head = trim(detail::run_or_throw(
      "reading the worktree's revision", {"git", "-C", b.source.string(), "rev-parse", "HEAD"}));
  DLF_CHECK(head == b.commit, "the cached worktree ", b.source.string(), " is at ", head, ", not ",
            rev, " (", b.commit, "); remove it and run again");
  bool laid = false;  // a harness file new or changed: CMake must glob bench/ again
  for (const std::string& file : harness_files()) {
    const std::string ours = read_all(harness_source / file);
    DLF_CHECK(!ours.empty(), "the suite's harness file ", (harness_source / file).string(),
              " is missing");
    if (read_all(b.source / file) != ours) {  // copied only when it differs: no needless rebuild
      std::ofstream(b.source / file, std::ios::binary) << ours;
      laid = true;
    }
  }
  if (laid || !std::filesystem::exists(b.build / "CMakeCache.txt")) {
    say("configuring " + b.build.string());
    std::vector<std::string> configure = {"cmake",
                                          "-S",
                                          b.source.string(),
                                          "-B",
                                          b.build.string(),
                                          "-DCMAKE_BUILD_TYPE=Release",
                                          "-DDLF_BUILD_TESTS=OFF"};
    if (installed("ccache")) {
      configure.push_back("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache");
      configure.push_back("-DCMAKE_C_COMPILER_LAUNCHER=ccache");
    }
    detail::run_or_throw("configuring " + rev, configure);
  }
  say("building " + rev + " (" + b.commit.substr(0, 12) + ")");
  const std::string jobs = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  detail::run_or_throw("building " + rev, {"cmake", "--build", b.build.string(), "--target", "dlf",
                                           "suite_bench", "-j", jobs});
  // The suite's other programs are the revision's own, where it has them: without them their
  // cases are left out of its runs.
  for (const std::string target : {"suite_train_bench", "suite_comm_bench", "suite_generate_bench"})
    if (detail::run_process({"cmake", "--build", b.build.string(), "--target", target, "-j", jobs})
            .exit_code != 0)
      say(rev + " has no " + target + ": its cases are left out");
  return b;
}

}  // namespace dlf::perf
