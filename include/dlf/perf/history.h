// The benchmark history: every run of the suite in an SQLite database (runs, hosts, results,
// every repetition, the host's peaks), its schema versioned and migrated on open.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

/// \namespace dlf::perf
/// Performance tracking: the benchmark suite's runner, its history in SQLite, change points
/// over each series, A/B comparisons of two revisions, and the dashboard.
namespace dlf::perf {

/// The machine a run ran on. Runs compare only within a host class (host_class()).
struct Host {
  std::string name;       ///< the host name
  std::string cpu_model;  ///< /proc/cpuinfo's model name
  std::string isa_flags;  ///< the ISA extensions that matter to the kernels (avx2, avx512f, ...)
  int cores = 0;          ///< logical CPUs
  /// What makes timings comparable: CPU model, ISA and cores (not the name).
  std::string host_class() const;
};

/// This machine, read from /proc/cpuinfo and the kernel.
Host this_host();

/// What a run was: which code, built how, on which host, under what load.
struct RunInfo {
  std::string commit;       ///< the revision's full hash
  std::string commit_date;  ///< its committer date, ISO 8601 (orders the history)
  /// Its commits in all (git rev-list --count): orders commits of the same second; 0 unknown
  int64_t commit_depth = 0;
  std::string subject;      ///< its subject line
  std::string build_flags;  ///< compiler and flags the revision was built with
  std::string tier;         ///< quick or full
  std::string started;      ///< when the run started, ISO 8601 UTC
  Host host;                ///< where it ran
  /// The load averages (1, 5 and 15 minutes) at the end of the run; NaN for runs recorded
  /// before schema version 2
  ///@{
  double load_1m = 0, load_5m = 0, load_15m = 0;
  ///@}
};

/// One case's result in a run: one series point with every repetition.
struct Result {
  std::string bench;         ///< the family: op, matmul, train, dispatch, peak
  std::string case_name;     ///< what ran: "group_norm forward f32 [8,64,32,32] g32"
  std::string impl = "dlf";  ///< who ran it
  int threads = 1;           ///< CPU threads
  /// The series' metric: "time" (wall-clock ms a call) or "cpu_time" (the process's CPU ms a
  /// call: on one thread, without the time spent waiting for a core); lower is better for both.
  std::string metric = "time";
  std::string unit = "ms";          ///< of value and the repetitions
  double value = 0;                 ///< the median of the repetitions
  std::vector<double> repetitions;  ///< every timed repetition, in order
  double headline = 0;              ///< the case's own figure (GFLOP/s, GB/s, tok/s), or 0
  std::string headline_unit;        ///< its unit
  /// The headline as a share of the same run's peak (matmul GFLOP/s, copy GB/s): figures of
  /// different hosts and days compare; NaN when the case has none
  double normalised = std::numeric_limits<double>::quiet_NaN();
  std::string normalised_to;  ///< the peak it is a share of
  /// dlf's speed over the peer's (libtorch, shared/peer) on the same work in the same run: the
  /// peer's median wall-clock time over dlf's (above 1: dlf faster); NaN without a peer
  double peer_ratio = std::numeric_limits<double>::quiet_NaN();
};

/// A case a run left out: it failed (it may not exist at that revision) or could not run here
/// (no mpirun).
struct LeftOut {
  std::string case_name;  ///< as the suite names it
  std::string reason;     ///< one line
};

/// A host peak measured in a run (the normalisation's denominators).
struct Peak {
  std::string name;  ///< matmul_f32, matmul_bf16, bandwidth
  double value = 0;  ///< its figure
  std::string unit;  ///< GFLOP/s, GB/s
};

/// One stored run of a series: its run's facts and the result.
struct SeriesPoint {
  int64_t run_id = 0;  ///< the run's row
  RunInfo run;         ///< what the run was
  Result result;       ///< the case's result in it
};

/// The runs of one case and metric on one host class, oldest commit first (by commit date, then
/// depth), then by start.
struct Series {
  std::string host_class;           ///< Host::host_class() of its runs
  std::string case_name;            ///< the case
  std::string metric;               ///< time or cpu_time
  std::string unit;                 ///< of the values
  std::vector<SeriesPoint> points;  ///< in commit order
};

class RunWriter;

/// An SQLite benchmark history. Opening migrates an older schema to the current one, each
/// version's step in its own transaction; a database of a newer schema is refused.
class History {
 public:
  /// The schema this code writes: 1 runs, hosts, results, repetitions; 2 the load of each run;
  /// 3 the host's peaks of each run, normalised figures and headlines, the commit's subject;
  /// 4 the commit's depth; 5 the cases a run left out and the ratio to the peer.
  static constexpr int kSchemaVersion = 5;

  /// Opens (creating) the database at `path` and migrates it to `version` (tests migrate to an
  /// older one to make a database as an older dlf wrote it). A dlf::Error names the file and
  /// the problem: not a database, written by a newer dlf, not writable.
  explicit History(const std::string& path, int version = kSchemaVersion);
  ~History();
  History(const History&) = delete;             ///< one connection, not copyable
  History& operator=(const History&) = delete;  ///< one connection, not copyable

  /// The schema version the file is at.
  int schema_version() const;
  /// The file.
  const std::string& path() const { return path_; }

  /// Starts writing a run: every row it adds is in one transaction until RunWriter::commit();
  /// a writer dropped uncommitted, or a process killed before the commit, leaves no row of it.
  RunWriter begin_run(const RunInfo& run);

  /// Every series in the history, each in commit order; `host_class` empty: every host.
  std::vector<Series> series(const std::string& host_class = "") const;
  /// The runs' count.
  int64_t runs() const;
  /// The cases run `run_id` left out, in the order it met them.
  std::vector<LeftOut> left_out(int64_t run_id) const;

  /// The SQLite handle (sqlite3*), for RunWriter.
  void* handle() const { return db_; }

 private:
  void migrate(int version);
  std::string path_;
  void* db_ = nullptr;
};

/// A run being written (History::begin_run): add its results and peaks, then commit.
class RunWriter {
 public:
  /// Begins the transaction and writes the run's row (and its host's, if new).
  RunWriter(History& history, const RunInfo& run);
  /// Rolls back unless committed.
  ~RunWriter();
  RunWriter(RunWriter&& other) noexcept;            ///< moves the open transaction
  RunWriter(const RunWriter&) = delete;             ///< one transaction, one writer
  RunWriter& operator=(const RunWriter&) = delete;  ///< one transaction, one writer
  RunWriter& operator=(RunWriter&&) = delete;       ///< one transaction, one writer

  /// Adds one result with its repetitions.
  void add(const Result& result);
  /// Adds one of the host's peaks measured in this run.
  void add_peak(const Peak& peak);
  /// Records a case the run left out, and why.
  void add_left_out(const LeftOut& left_out);
  /// Updates the run's load averages (measured at its end).
  void set_load(double load_1m, double load_5m, double load_15m);
  /// Commits the run: from here on it is in the history whole.
  void commit();
  /// The run's row id.
  int64_t run_id() const { return run_id_; }

 private:
  History* history_;
  int64_t run_id_ = 0;
  bool open_ = false;
};

}  // namespace dlf::perf
