// Builds of past revisions for the suite: a worktree and a build per revision in a cache
// folder, reused, with the suite's harness of the current tree laid over them (as asv runs
// today's benchmarks against old code).
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace dlf::perf {

/// A revision built for the suite.
struct RevisionBuild {
  std::string commit;            ///< its full hash
  std::filesystem::path source;  ///< its worktree
  std::filesystem::path build;   ///< its build folder (bench/suite_bench inside)
};

/// The files of the suite's harness, relative to a source tree: what build_revision lays over
/// an old revision (bench/suite_bench.cpp and the headers it includes from bench/).
const std::vector<std::string>& harness_files();

/// Builds `rev` of the git repository `repo` for the suite: a detached worktree at
/// `cache`/<first 12 digits of the hash> (kept), the harness copied from `harness_source` over
/// it, a Release build in its build/release (ccache as compiler launcher when installed, so a
/// cache folder under ccache's base_dir shares objects with every other tree) of the library
/// and suite_bench only. A build already there is brought up to date, which costs seconds.
/// `log` sees one line per step. A dlf::Error names the step that failed and its output.
RevisionBuild build_revision(const std::filesystem::path& repo, const std::string& rev,
                             const std::filesystem::path& cache,
                             const std::filesystem::path& harness_source,
                             const std::function<void(const std::string&)>& log = {});

/// Where revisions are built unless told: $DLF_BENCH_CACHE, else $XDG_CACHE_HOME/dlf/bench, else
/// ~/.cache/dlf/bench.
std::filesystem::path default_revision_cache();

}  // namespace dlf::perf
