// `dlf bench`: the benchmark suite, its history, change points, A/B comparisons and the
// dashboard (dlf::perf does the work; this file parses and prints).
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dlf::app {

struct BenchCommand {
  CLI::App *run = nullptr, *check = nullptr, *compare = nullptr, *dashboard = nullptr;
  std::string tier = "quick", db, build, rev, cache, lock = "/tmp/bench.lock";
  std::vector<std::string> cases;  ///< case-name prefixes (default: the tier's cases)
  bool list = false, json = false;
  int reps = 0, rounds = 10;
  std::string metric = "cpu_time";
  double max_p = 0.001, min_change = 0.02;
  std::string rev_a, rev_b;
  std::vector<std::string> env_b;  ///< KEY=VALUE for B's runs
  std::string out, since;
  std::string peer;  ///< the peer's folder (shared/peer): training cases' ratio to it
};

/// Adds `dlf bench` and its subcommands (run, check, compare, dashboard) to `app`.
CLI::App* add_bench(CLI::App& app, BenchCommand& o);

/// Runs the subcommand given; returns the exit code: 0, 1 when `check` finds a regression at
/// the newest commit, 2 on an error (its one line on stderr).
int run_bench(const BenchCommand& o);

}  // namespace dlf::app
