#include "bench_command.h"

#include <dlf/error.h>
#include <dlf/perf/compare.h>
#include <dlf/perf/dashboard.h>
#include <dlf/perf/findings.h>
#include <dlf/perf/reports.h>
#include <dlf/perf/revisions.h>
#include <dlf/perf/suite.h>

#include <cstdio>
#include <iostream>

namespace dlf::app {
namespace {

void add_case_options(CLI::App* cmd, BenchCommand& o) {
  cmd->add_option("--case", o.cases,
                  "only the cases whose names start with this (repeatable; default: the tier's)");
  cmd->add_option("--reps", o.reps, "timed repetitions a case (default: each case's own)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--lock", o.lock,
                  "file locked around each case's process, as every timed run on this machine "
                  "does ('' for none)")
      ->capture_default_str();
  cmd->add_option("--cache", o.cache,
                  "folder of the revisions' worktrees and builds (default: DLF_BENCH_CACHE or "
                  "~/.cache/dlf/bench; under ccache's base_dir, builds share objects)");
}

void add_detection_options(CLI::App* cmd, BenchCommand& o) {
  cmd->add_option("--metric", o.metric,
                  "the series checked: cpu_time (the process's CPU time: steadier on a loaded "
                  "machine), time (wall clock) or all")
      ->check(CLI::IsMember({"cpu_time", "time", "all"}))
      ->capture_default_str();
  cmd->add_option("--max-p", o.max_p, "a change point's t-test p-value must be below this")
      ->check(CLI::Range(1e-12, 0.5))
      ->capture_default_str();
  cmd->add_option("--min-change", o.min_change,
                  "and the means must differ by this share at least (0.02: 2 %)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
}

std::filesystem::path cache_of(const BenchCommand& o) {
  return o.cache.empty() ? perf::default_revision_cache() : std::filesystem::path(o.cache);
}

void say(const std::string& line) { std::cerr << "dlf bench: " << line << "\n"; }

// A revision built for the suite in the cache, from the repository this dlf was built from.
perf::RevisionBuild revision(const BenchCommand& o, const std::string& rev) {
  const std::filesystem::path repo = perf::source_of_build(perf::own_build_dir());
  return perf::build_revision(repo, rev, cache_of(o), repo, say);
}

perf::RunOptions run_options(const BenchCommand& o) { return {.lock = o.lock, .reps = o.reps}; }

void run(const BenchCommand& o) {
  const perf::Tier tier = perf::parse_tier(o.tier);
  if (o.list) {
    for (const perf::SuiteCase& c : perf::cases_of(tier, o.cases)) std::cout << c.name << "\n";
    return;
  }
  DLF_CHECK(!o.db.empty(), "dlf bench run needs --db FILE (the history to add the run to)");
  const std::filesystem::path build =
      !o.rev.empty() ? revision(o, o.rev).build
                     : (o.build.empty() ? perf::own_build_dir() : std::filesystem::path(o.build));
  const std::vector<perf::SuiteCase> cases = perf::cases_of(tier, o.cases);
  perf::RunInfo info = perf::describe_build(build);
  info.tier = perf::tier_name(tier);
  perf::History history(o.db);
  perf::RunOptions options = run_options(o);
  options.peer_dir = o.peer;
  say("running the " + info.tier + " tier on " + info.commit.substr(0, 12) + " (" + info.subject +
      ") from " + build.string());
  const perf::SuiteRun r =
      perf::run_suite(history, info, build, cases, options, [](const perf::Result& x) {
        std::printf("%s", perf::describe(x).c_str());
        std::fflush(stdout);
      });
  for (const perf::LeftOut& l : r.left_out) say("left out: " + l.case_name + ": " + l.reason);
  say("run " + std::to_string(r.run_id) + " written to " + o.db + " (" +
      std::to_string(r.results.size()) + " results)");
}

int check(const BenchCommand& o) {
  DLF_CHECK(!o.db.empty(), "dlf bench check needs --db FILE");
  DLF_CHECK(std::filesystem::exists(o.db), "no benchmark history ", o.db,
            " (dlf bench run --db writes one)");
  const perf::HistoryCheck c = perf::check_history(perf::History(o.db), o.metric,
                                                   {.max_p = o.max_p, .min_change = o.min_change});
  std::printf("%s", c.text.c_str());
  return c.regressions_at_newest > 0 ? 1 : 0;
}

void compare(const BenchCommand& o) {
  perf::CompareOptions options{.rounds = o.rounds, .run = run_options(o), .metric = o.metric};
  DLF_CHECK(o.metric != "all", "dlf bench compare decides on one metric: cpu_time or time");
  for (const std::string& kv : o.env_b) {
    const size_t eq = kv.find('=');
    DLF_CHECK(eq != std::string::npos && eq > 0, "--env-b ", kv, " is not KEY=VALUE");
    options.env_b[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const perf::RevisionBuild a = revision(o, o.rev_a);
  const perf::RevisionBuild b = revision(o, o.rev_b);  // A's build again when the same commit
  const std::vector<perf::CaseComparison> results = perf::compare_builds(
      a.build, b.build, perf::cases_of(perf::Tier::quick, o.cases), options, say);
  for (const perf::CaseComparison& c : results)
    std::printf("%s\n", o.json
                            ? perf::to_json_line(c, a.commit, b.commit, o.rounds, o.metric).c_str()
                            : perf::describe(c).c_str());
}

void dashboard(const BenchCommand& o) {
  DLF_CHECK(std::filesystem::exists(o.db), "no benchmark history ", o.db,
            " (dlf bench run --db writes one)");
  const perf::History history(o.db);
  const std::vector<perf::Series> series = history.series();
  const std::vector<perf::Finding> findings =
      perf::find_changes(series, "all", {.max_p = o.max_p, .min_change = o.min_change});
  perf::write_dashboard(o.out, series, findings, {.since = o.since});
  say("dashboard of " + std::to_string(series.size()) + " series written to " + o.out);
}

}  // namespace

CLI::App* add_bench(CLI::App& app, BenchCommand& o) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "The benchmark suite and its history: run it, check it for regressions, compare "
      "two revisions, draw the dashboard");
  bench->require_subcommand(1);
  o.run = bench->add_subcommand("run", "Run the suite's tier and add it to the history");
  o.run->add_option("--tier", o.tier, "quick (about a minute) or full")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  o.run->add_option("--db", o.db, "the history (an SQLite file, created if new)");
  o.run->add_option("--build", o.build,
                    "the build folder to run (default: the one this dlf belongs to)");
  o.run
      ->add_option("--rev", o.rev,
                   "a revision of this dlf's repository to build in the cache and run (a "
                   "backfill)")
      ->excludes("--build");
  o.run
      ->add_option("--peer", o.peer,
                   "the peer's folder (shared/peer: its run.sh builds and runs libtorch's "
                   "benchmark): the training cases that name its work get their ratio to it "
                   "(default: PEER_DIR; none: no ratio)")
      ->envname("PEER_DIR");
  o.run->add_flag("--list", o.list, "print the tier's cases and stop");
  add_case_options(o.run, o);

  o.check = bench->add_subcommand(
      "check",
      "Find the change points of every series; exit 1 if one is a regression at the "
      "newest commit");
  o.check->add_option("--db", o.db, "the history")->required();
  add_detection_options(o.check, o);

  o.compare = bench->add_subcommand(
      "compare",
      "Build two revisions and run the quick tier's cases interleaved (A B, B A, ...): "
      "each case's ratio B/A with a 99 % bootstrap interval");
  o.compare->add_option("rev_a", o.rev_a, "revision A (the baseline)")->required();
  o.compare->add_option("rev_b", o.rev_b, "revision B")->required();
  o.compare->add_option("--rounds", o.rounds, "process runs a side of each case")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  o.compare->add_option("--metric", o.metric, "what decides: cpu_time or time")
      ->check(CLI::IsMember({"cpu_time", "time"}))
      ->capture_default_str();
  o.compare
      ->add_option("--min-change", o.min_change, "a verdict also needs the ratio this far from 1")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  o.compare->add_option("--env-b", o.env_b,
                        "KEY=VALUE set for B's runs only (DLF_BENCH_SLOWDOWN=group_norm=1.1 "
                        "injects a regression)");
  o.compare->add_flag("--json", o.json, "one JSON line a case");
  add_case_options(o.compare, o);

  o.dashboard =
      bench->add_subcommand("dashboard", "Write the history as one self-contained HTML page");
  o.dashboard->add_option("--db", o.db, "the history")->required();
  o.dashboard->add_option("--out", o.out, "the HTML file")->required();
  o.dashboard->add_option("--since", o.since,
                          "list the changes after this commit (default: every change)");
  return bench;
}

int run_bench(const BenchCommand& o) {
  try {
    if (*o.run) run(o);
    if (*o.check) return check(o);
    if (*o.compare) compare(o);
    if (*o.dashboard) dashboard(o);
  } catch (const std::exception& e) {  // dlf::Error, or the file system's: exit 2 either way
    std::cerr << "dlf: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace dlf::app
