#include <dlf/error.h>
#include <dlf/perf/history.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace dlf::perf {
namespace {

sqlite3* db_of(const History& h) { return static_cast<sqlite3*>(h.handle()); }

void exec(sqlite3* db, const std::string& sql, const std::string& what) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw Error("benchmark history " + std::string(sqlite3_db_filename(db, "main")) + ": " + what +
                " failed: " + text);
  }
}

// One prepared statement; bind in order, step, read columns.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error("benchmark history: preparing '" + sql + "' failed: " + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(const std::string& v) {
    sqlite3_bind_text(stmt_, ++next_, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int64_t v) {
    sqlite3_bind_int64(stmt_, ++next_, v);
    return *this;
  }
  Statement& bind(double v) {
    if (std::isfinite(v)) {
      sqlite3_bind_double(stmt_, ++next_, v);
    } else {
      sqlite3_bind_null(stmt_, ++next_);
    }
    return *this;
  }
  // Steps once: true while a row is there.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("benchmark history: ") + sqlite3_errmsg(db_));
  }
  void run() {
    while (step()) {
    }
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    next_ = 0;
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  double real(int i) const {
    return sqlite3_column_type(stmt_, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt_, i);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int next_ = 0;
};

// The schema's steps: migrations[v - 1] takes a database from version v - 1 to v. A step is
// never edited once released: a change is a new step.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> steps = {
      // 1: runs on hosts, each case's result with every repetition
      R"(CREATE TABLE hosts(id INTEGER PRIMARY KEY, name TEXT NOT NULL, cpu_model TEXT NOT NULL,
                            isa_flags TEXT NOT NULL, cores INTEGER NOT NULL,
                            UNIQUE(name, cpu_model, isa_flags, cores));
         CREATE TABLE runs(id INTEGER PRIMARY KEY, host_id INTEGER NOT NULL REFERENCES hosts(id),
                           commit_sha TEXT NOT NULL, commit_date TEXT NOT NULL,
                           build_flags TEXT NOT NULL, tier TEXT NOT NULL, started TEXT NOT NULL);
         CREATE TABLE results(id INTEGER PRIMARY KEY,
                              run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                              bench TEXT NOT NULL, case_name TEXT NOT NULL, impl TEXT NOT NULL,
                              threads INTEGER NOT NULL, metric TEXT NOT NULL, unit TEXT NOT NULL,
                              value REAL NOT NULL);
         CREATE TABLE repetitions(result_id INTEGER NOT NULL
                                      REFERENCES results(id) ON DELETE CASCADE,
                                  idx INTEGER NOT NULL, value REAL NOT NULL,
                                  PRIMARY KEY(result_id, idx));)",
      // 2: the load the run ran under (uptime's averages at its end)
      R"(ALTER TABLE runs ADD COLUMN load_1m REAL;
         ALTER TABLE runs ADD COLUMN load_5m REAL;
         ALTER TABLE runs ADD COLUMN load_15m REAL;)",
      // 3: the host's peaks of each run, and each result's headline and normalised figure
      R"(CREATE TABLE peaks(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                            name TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL,
                            PRIMARY KEY(run_id, name));
         ALTER TABLE runs ADD COLUMN subject TEXT NOT NULL DEFAULT '';
         ALTER TABLE results ADD COLUMN headline REAL;
         ALTER TABLE results ADD COLUMN headline_unit TEXT NOT NULL DEFAULT '';
         ALTER TABLE results ADD COLUMN normalised REAL;
         ALTER TABLE results ADD COLUMN normalised_to TEXT NOT NULL DEFAULT '';
         CREATE INDEX results_of_run ON results(run_id);)",
      // 4: the commit's depth, which orders commits made in the same second
      R"(ALTER TABLE runs ADD COLUMN commit_depth INTEGER;)",
      // 5: the cases a run left out (failed, or skipped: no mpirun) and why; the ratio to the
      // peer
      R"(CREATE TABLE left_out(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                               case_name TEXT NOT NULL, reason TEXT NOT NULL);
         ALTER TABLE results ADD COLUMN peer_ratio REAL;)",
  };
  return steps;
}

std::string first_line_with(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "";
}

}  // namespace

std::string Host::host_class() const {
  return cpu_model + " | " + std::to_string(cores) + " cores | " + isa_flags;
}

Host this_host() {
  Host h;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  h.name = name;
  h.cpu_model = first_line_with("/proc/cpuinfo", "model name");
  std::istringstream flags(first_line_with("/proc/cpuinfo", "flags"));
  const std::set<std::string> wanted = {"avx2",        "fma",         "avx512f",  "avx512bw",
                                        "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile"};
  for (std::string f; flags >> f;) {
    if (wanted.count(f)) h.isa_flags += (h.isa_flags.empty() ? "" : " ") + f;
  }
  h.cores = int(std::thread::hardware_concurrency());
  return h;
}

History::History(const std::string& path, int version) : path_(path) {
  DLF_CHECK(version >= 1 && version <= kSchemaVersion, "benchmark history: no schema version ",
            version, " (1 to ", kSchemaVersion, ")");
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  db_ = db;
  if (rc != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw Error("benchmark history " + path + ": cannot open it (" + why +
                "); give --db a writable file");
  }
  sqlite3_busy_timeout(db, 60'000);  // another run's commit
  try {
    exec(db, "PRAGMA foreign_keys = ON", "enabling foreign keys");
    migrate(version);
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
}

History::~History() { sqlite3_close(db_of(*this)); }

int History::schema_version() const {
  Statement s(db_of(*this), "PRAGMA user_version");
  s.step();
  return int(s.integer(0));
}

void History::migrate(int version) {
  sqlite3* db = db_of(*this);
  int at = 0;
  try {
    at = schema_version();
  } catch (const Error&) {
    throw Error("benchmark history " + path_ +
                ": not an SQLite database (give --db a new file, or the history dlf wrote)");
  }
  DLF_CHECK(at <= kSchemaVersion, "benchmark history ", path_, ": schema version ", at,
            " was written by a newer dlf (this one reads up to ", kSchemaVersion,
            "); use that dlf or a new file");
  for (int v = at + 1; v <= version; ++v) {
    exec(db, "BEGIN IMMEDIATE", "starting the migration to schema version " + std::to_string(v));
    try {
      exec(db, migrations()[size_t(v - 1)], "migrating to schema version " + std::to_string(v));
      exec(db, "PRAGMA user_version = " + std::to_string(v), "recording the schema version");
      exec(db, "COMMIT", "committing schema version " + std::to_string(v));
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
}

RunWriter History::begin_run(const RunInfo& run) { return RunWriter(*this, run); }

int64_t History::runs() const {
  Statement s(db_of(*this), "SELECT count(*) FROM runs");
  s.step();
  return s.integer(0);
}

std::vector<LeftOut> History::left_out(int64_t run_id) const {
  Statement s(db_of(*this),
              "SELECT case_name, reason FROM left_out WHERE run_id = ? ORDER BY rowid");
  s.bind(run_id);
  std::vector<LeftOut> out;
  while (s.step()) out.push_back({s.text(0), s.text(1)});
  return out;
}

std::vector<Series> History::series(const std::string& host_class) const {
  DLF_CHECK(schema_version() == kSchemaVersion, "benchmark history ", path_, ": at schema version ",
            schema_version(), ", not ", kSchemaVersion, " (open it without a version to migrate)");
  sqlite3* db = db_of(*this);
  Statement s(db,
              "SELECT runs.id, commit_sha, commit_date, subject, build_flags, tier, started, "
              "load_1m, load_5m, load_15m, hosts.name, cpu_model, isa_flags, cores, results.id, "
              "bench, case_name, impl, threads, metric, unit, results.value, headline, "
              "headline_unit, normalised, normalised_to, commit_depth, peer_ratio FROM results "
              "JOIN runs ON "
              "results.run_id = runs.id JOIN hosts ON runs.host_id = hosts.id "
              "ORDER BY commit_date, commit_depth, started, runs.id, results.id");
  Statement reps(db, "SELECT value FROM repetitions WHERE result_id = ? ORDER BY idx");
  std::map<std::tuple<std::string, std::string, std::string>, Series> by_key;
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  while (s.step()) {
    SeriesPoint p;
    p.run_id = s.integer(0);
    RunInfo& r = p.run;
    r.commit = s.text(1), r.commit_date = s.text(2), r.subject = s.text(3);
    r.build_flags = s.text(4), r.tier = s.text(5), r.started = s.text(6);
    r.load_1m = s.real(7), r.load_5m = s.real(8), r.load_15m = s.real(9);
    r.host = {s.text(10), s.text(11), s.text(12), int(s.integer(13))};
    Result& x = p.result;
    x.bench = s.text(15), x.case_name = s.text(16), x.impl = s.text(17);
    x.threads = int(s.integer(18)), x.metric = s.text(19), x.unit = s.text(20);
    x.value = s.real(21), x.headline = s.real(22), x.headline_unit = s.text(23);
    x.normalised = s.real(24), x.normalised_to = s.text(25);
    r.commit_depth = s.integer(26);
    x.peer_ratio = s.real(27);
    const std::string cls = r.host.host_class();
    if (!host_class.empty() && cls != host_class) continue;
    reps.bind(s.integer(14));
    while (reps.step()) x.repetitions.push_back(reps.real(0));
    reps.run();
    const auto key = std::make_tuple(cls, x.case_name, x.metric);
    auto [it, added] = by_key.try_emplace(key, Series{cls, x.case_name, x.metric, x.unit, {}});
    if (added) order.push_back(key);
    it->second.points.push_back(std::move(p));
  }
  std::vector<Series> out;
  for (const auto& key : order) out.push_back(std::move(by_key[key]));
  return out;
}

RunWriter::RunWriter(History& history, const RunInfo& run) : history_(&history) {
  DLF_CHECK(history.schema_version() == History::kSchemaVersion, "benchmark history ",
            history.path(), ": runs are written at schema version ", History::kSchemaVersion);
  sqlite3* db = db_of(history);
  exec(db, "BEGIN IMMEDIATE", "starting a run");
  open_ = true;
  const Host& h = run.host;
  Statement(db,
            "INSERT OR IGNORE INTO hosts(name, cpu_model, isa_flags, cores) VALUES (?, ?, ?, ?)")
      .bind(h.name)
      .bind(h.cpu_model)
      .bind(h.isa_flags)
      .bind(int64_t(h.cores))
      .run();
  Statement host(db,
                 "SELECT id FROM hosts WHERE name = ? AND cpu_model = ? AND isa_flags = ? "
                 "AND cores = ?");
  host.bind(h.name).bind(h.cpu_model).bind(h.isa_flags).bind(int64_t(h.cores));
  host.step();
  Statement(db,
            "INSERT INTO runs(host_id, commit_sha, commit_date, subject, build_flags, tier, "
            "started, load_1m, load_5m, load_15m, commit_depth) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(host.integer(0))
      .bind(run.commit)
      .bind(run.commit_date)
      .bind(run.subject)
      .bind(run.build_flags)
      .bind(run.tier)
      .bind(run.started)
      .bind(run.load_1m)
      .bind(run.load_5m)
      .bind(run.load_15m)
      .bind(run.commit_depth)
      .run();
  run_id_ = sqlite3_last_insert_rowid(db);
}

RunWriter::RunWriter(RunWriter&& other) noexcept
    : history_(other.history_), run_id_(other.run_id_), open_(other.open_) {
  other.open_ = false;
}

RunWriter::~RunWriter() {
  if (open_) sqlite3_exec(db_of(*history_), "ROLLBACK", nullptr, nullptr, nullptr);
}

void RunWriter::add(const Result& r) {
  DLF_CHECK(open_, "benchmark history: the run was committed already");
  sqlite3* db = db_of(*history_);
  Statement(db,
            "INSERT INTO results(run_id, bench, case_name, impl, threads, metric, unit, value, "
            "headline, headline_unit, normalised, normalised_to, peer_ratio) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(run_id_)
      .bind(r.bench)
      .bind(r.case_name)
      .bind(r.impl)
      .bind(int64_t(r.threads))
      .bind(r.metric)
      .bind(r.unit)
      .bind(r.value)
      .bind(r.headline)
      .bind(r.headline_unit)
      .bind(r.normalised)
      .bind(r.normalised_to)
      .bind(r.peer_ratio)
      .run();
  const int64_t id = sqlite3_last_insert_rowid(db);
  Statement rep(db, "INSERT INTO repetitions(result_id, idx, value) VALUES (?, ?, ?)");
  for (size_t i = 0; i < r.repetitions.size(); ++i)
    rep.bind(id).bind(int64_t(i)).bind(r.repetitions[i]).run();
}

void RunWriter::add_peak(const Peak& p) {
  DLF_CHECK(open_, "benchmark history: the run was committed already");
  Statement(db_of(*history_),
            "INSERT OR REPLACE INTO peaks(run_id, name, value, unit) "
            "VALUES (?, ?, ?, ?)")
      .bind(run_id_)
      .bind(p.name)
      .bind(p.value)
      .bind(p.unit)
      .run();
}

void RunWriter::add_left_out(const LeftOut& l) {
  DLF_CHECK(open_, "benchmark history: the run was committed already");
  Statement(db_of(*history_), "INSERT INTO left_out(run_id, case_name, reason) VALUES (?, ?, ?)")
      .bind(run_id_)
      .bind(l.case_name)
      .bind(l.reason)
      .run();
}

void RunWriter::set_load(double load_1m, double load_5m, double load_15m) {
  Statement(db_of(*history_), "UPDATE runs SET load_1m = ?, load_5m = ?, load_15m = ? WHERE id = ?")
      .bind(load_1m)
      .bind(load_5m)
      .bind(load_15m)
      .bind(run_id_)
      .run();
}

void RunWriter::commit() {
  DLF_CHECK(open_, "benchmark history: the run was committed already");
  exec(db_of(*history_), "COMMIT", "committing the run");
  open_ = false;
}

}  // namespace dlf::perf
