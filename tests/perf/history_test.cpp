// The benchmark history: a run written and read back, migrations from schema version 1, and
// runs that never finish leaving nothing behind.
#include <dlf/perf/history.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

using namespace dlf::perf;

namespace {

// A fresh database path in a folder of its own.
std::string fresh_db(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlf_perf_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

RunInfo run_of(const std::string& commit, const std::string& date) {
  RunInfo r;
  r.commit = commit;
  r.commit_date = date;
  r.subject = "subject of " + commit;
  r.build_flags = "g++ Release";
  r.tier = "quick";
  r.started = date;
  r.host = {"box", "CPU X", "avx2", 2};
  r.load_1m = 1.5, r.load_5m = 1.25, r.load_15m = 1;
  r.commit_depth = commit == "aaa" ? 1 : 2;
  return r;
}

Result result_of(const std::string& name, std::vector<double> reps) {
  Result r;
  r.bench = "op";
  r.case_name = name;
  r.metric = "cpu_time";
  r.repetitions = std::move(reps);
  r.value = r.repetitions[r.repetitions.size() / 2];
  r.headline = 20, r.headline_unit = "GB/s", r.normalised = 0.5, r.normalised_to = "bandwidth";
  return r;
}

// Rows in a table, read with SQLite itself.
int64_t rows(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &s, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

void sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  INFO(message);
  CHECK(rc == SQLITE_OK);
  sqlite3_free(error);
  sqlite3_close(db);
}

}  // namespace

TEST_CASE("a run is written whole and read back as series in commit order") {
  const std::string path = fresh_db("roundtrip.db");
  History h(path);
  CHECK(h.schema_version() == History::kSchemaVersion);
  for (const auto& [commit, date, level] :
       {std::tuple{"bbb", "2026-11-25T09:00:00+00:00", 2.0},
        std::tuple{"aaa", "2026-11-25T08:00:00+00:00", 1.0}}) {  // written newest first
    RunWriter w = h.begin_run(run_of(commit, date));
    w.add(result_of("group_norm", {level, level + 0.1, level - 0.1}));
    w.add_peak({"bandwidth", 40, "GB/s"});
    w.set_load(3.5, 3, 2.5);
    w.commit();
  }
  CHECK(h.runs() == 2);
  const std::vector<Series> s = h.series();
  REQUIRE(s.size() == 1);
  CHECK(s[0].case_name == "group_norm");
  CHECK(s[0].metric == "cpu_time");
  CHECK(s[0].host_class == "CPU X | 2 cores | avx2");
  REQUIRE(s[0].points.size() == 2);
  const SeriesPoint& first = s[0].points[0];
  CHECK(first.run.commit == "aaa");  // by commit date, not by when it was written
  CHECK(first.run.subject == "subject of aaa");
  CHECK(first.run.load_1m == 3.5);
  CHECK(first.run.commit_depth == 1);
  CHECK(first.result.repetitions == std::vector<double>{1.0, 1.1, 0.9});
  CHECK(first.result.normalised == 0.5);
  CHECK(first.result.headline_unit == "GB/s");
  CHECK(s[0].points[1].run.commit == "bbb");
  CHECK(rows(path, "peaks") == 2);
  CHECK(h.series("another host class").empty());
}

TEST_CASE("the cases a run left out are kept with it, in order, with their reasons") {
  const std::string path = fresh_db("left_out.db");
  History h(path);
  RunWriter w = h.begin_run(run_of("aaa", "2026-11-25T08:00:00+00:00"));
  w.add(result_of("group_norm", {1}));
  w.add_left_out({"allreduce f32 4 KiB 2 ranks mpi", "skipped: no mpirun on this host"});
  w.add_left_out({"train gpt-nano bf16 batch 8x64", "no build/bench/suite_train_bench"});
  w.commit();
  const std::vector<LeftOut> l = h.left_out(w.run_id());
  REQUIRE(l.size() == 2);
  CHECK(l[0].case_name == "allreduce f32 4 KiB 2 ranks mpi");
  CHECK(l[0].reason == "skipped: no mpirun on this host");
  CHECK(l[1].case_name == "train gpt-nano bf16 batch 8x64");
  CHECK(h.left_out(w.run_id() + 1).empty());
}

TEST_CASE("a run dropped before its commit leaves no row") {
  const std::string path = fresh_db("dropped.db");
  History h(path);
  {
    RunWriter w = h.begin_run(run_of("aaa", "2026-11-25T08:00:00+00:00"));
    w.add(result_of("group_norm", {1, 2, 3}));
    w.add_left_out({"train vit-tiny bf16 batch 4", "failed"});
  }
  CHECK(h.runs() == 0);
  CHECK(rows(path, "results") == 0);
  CHECK(rows(path, "left_out") == 0);
  CHECK(rows(path, "repetitions") == 0);
  CHECK(rows(path, "hosts") == 0);
}

TEST_CASE("a process killed in the middle of a run leaves no half-written rows") {
  const std::string path = fresh_db("killed.db");
  {
    History h(path);
    RunWriter w = h.begin_run(run_of("aaa", "2026-11-25T08:00:00+00:00"));
    w.add(result_of("before", {1, 2, 3}));
    w.commit();
  }
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // writes half a run, then is killed as a stopped benchmark would be
    History h(path);
    RunWriter w = h.begin_run(run_of("bbb", "2026-11-25T09:00:00+00:00"));
    for (int i = 0; i < 5; ++i) w.add(result_of("case " + std::to_string(i), {1, 2, 3}));
    kill(getpid(), SIGKILL);
    _exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  History h(path);  // the killed writer's journal is rolled back here
  CHECK(h.runs() == 1);
  CHECK(rows(path, "results") == 1);
  CHECK(rows(path, "repetitions") == 3);
  RunWriter w = h.begin_run(run_of("ccc", "2026-11-25T10:00:00+00:00"));  // and it takes runs
  w.add(result_of("after", {4}));
  w.commit();
  CHECK(h.runs() == 2);
}

TEST_CASE("a database of schema version 1 migrates through every version to the current one") {
  const std::string path = fresh_db("v1.db");
  {
    const History old(path, 1);
    CHECK(old.schema_version() == 1);
  }
  // A run as the first schema held it: no load, no peaks, no headline.
  sql(path,
      "INSERT INTO hosts VALUES (1, 'box', 'CPU X', 'avx2', 2);"
      "INSERT INTO runs VALUES (1, 1, 'aaa', '2026-11-25T08:00:00+00:00', 'g++', 'quick', "
      "'2026-11-29T00:00:00Z');"
      "INSERT INTO results VALUES (1, 1, 'op', 'group_norm', 'dlf', 1, 'time', 'ms', 2.0);"
      "INSERT INTO repetitions VALUES (1, 0, 1.9), (1, 1, 2.0), (1, 2, 2.1);");
  {
    const History two(path, 2);
    CHECK(two.schema_version() == 2);
    dlf::test::check_error([&] { two.series(); }, {"schema version 2", "migrate"});
    const History three(path, 3);
    CHECK(three.schema_version() == 3);
  }
  History h(path);
  CHECK(h.schema_version() == History::kSchemaVersion);
  const std::vector<Series> s = h.series();
  REQUIRE(s.size() == 1);
  REQUIRE(s[0].points.size() == 1);
  const SeriesPoint& p = s[0].points[0];
  CHECK(p.run.commit == "aaa");
  CHECK(std::isnan(p.run.load_1m));
  CHECK(p.run.subject.empty());
  CHECK(p.run.commit_depth == 0);
  CHECK(std::isnan(p.result.normalised));
  CHECK(p.result.repetitions == std::vector<double>{1.9, 2.0, 2.1});
  RunWriter w = h.begin_run(run_of("bbb", "2026-11-25T09:00:00+00:00"));  // new runs beside it
  w.add(result_of("group_norm", {1}));
  w.commit();
  CHECK(h.runs() == 2);
}

TEST_CASE("a history of a newer schema, or a file that is none, is refused by name") {
  const std::string path = fresh_db("newer.db");
  { const History h(path); }
  sql(path, "PRAGMA user_version = 99");
  dlf::test::check_error([&] { History h(path); }, {path, "schema version 99", "newer dlf"});
  const std::string junk = fresh_db("junk.db");
  std::ofstream(junk) << std::string(4096, 'x');
  dlf::test::check_error([&] { History h(junk); }, {junk, "not an SQLite database"});
  dlf::test::check_error([&] { History h("/nonexistent-dir/x.db"); }, {"cannot open", "--db"});
}
