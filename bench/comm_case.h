// The name of a collective case of `dlf bench run` (bench/suite_comm_bench.cpp) says all it runs,
// so that adding one is a line in perf/suite.cpp:
//
//   COLLECTIVE f32 SIZE KiB|MiB N ranks in-process|mpi
//
// COLLECTIVE allreduce, allgather or reduce_scatter; SIZE the buffer (allreduce's), the gathered
// output (allgather's) or the input (reduce_scatter's); the ranks on threads of one process
// (parallel::run_ranks) or one a process under mpirun. Up to 64 KiB the case measures latency
// (µs a collective); above, the bus bandwidth (NCCL-tests' busbw: the bytes a rank sends in the
// ring algorithm, 2(n-1)/n of the size for an allreduce and (n-1)/n for the others, a second).
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <dlf/error.h>

namespace dlf::bench {

/// A collective case, as its name says.
struct CommCase {
  std::string collective;  ///< allreduce, allgather or reduce_scatter
  int64_t bytes = 0;       ///< the size the name gives
  int ranks = 0;
  bool mpi = false;  ///< one rank a process under mpirun, else threads of one process
  /// Up to 64 KiB: latency, not bandwidth.
  bool latency() const { return bytes <= (int64_t(64) << 10); }
  /// The bytes a rank sends in the ring algorithm, for the bus bandwidth.
  double bus_bytes() const {
    const double share = double(ranks - 1) / ranks;
    return double(bytes) * (collective == "allreduce" ? 2 * share : share);
  }
};

/// The case `name` names; a dlf::Error saying what is wrong and the form otherwise.
inline CommCase parse_comm_case(const std::string& name) {
  std::istringstream in(name);
  std::vector<std::string> w;
  for (std::string word; in >> word;) w.push_back(word);
  const std::string form =
      " (the form: allreduce|allgather|reduce_scatter f32 SIZE KiB|MiB N ranks in-process|mpi)";
  DLF_CHECK(w.size() == 7 && w[1] == "f32" && (w[3] == "KiB" || w[3] == "MiB") && w[5] == "ranks" &&
                (w[6] == "in-process" || w[6] == "mpi"),
            "'", name, "' is no collective case", form);
  CommCase c{.collective = w[0], .mpi = w[6] == "mpi"};
  DLF_CHECK(c.collective == "allreduce" || c.collective == "allgather" ||
                c.collective == "reduce_scatter",
            "'", name, "': no collective '", c.collective, "'", form);
  size_t used_size = 0, used_ranks = 0;
  try {
    c.bytes = std::stoll(w[2], &used_size) << (w[3] == "KiB" ? 10 : 20);
    c.ranks = std::stoi(w[4], &used_ranks);
  } catch (const std::exception&) {
    used_size = 0;
  }
  DLF_CHECK(used_size == w[2].size() && used_ranks == w[4].size() && c.bytes > 0 && c.ranks >= 2,
            "'", name, "': the size and the ranks must be positive integers, 2 ranks or more",
            form);
  DLF_CHECK(c.bytes % (int64_t(4) * c.ranks) == 0, "'", name,
            "': the size must split into the ranks' equal parts of f32", form);
  return c;
}

}  // namespace dlf::bench
