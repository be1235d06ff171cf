// The collective cases of `dlf bench run` (perf/suite.cpp lists them; their names say what they
// run, bench/comm_case.h): allreduce, allgather or reduce_scatter of f32 over N ranks, on threads
// of this process (parallel::run_ranks) or one rank a process under mpirun (the suite starts it
// as `mpirun -np N --allow-run-as-root --oversubscribe suite_comm_bench --case NAME`). Every rank
// times the same number of collectives; rank 0 prints the line: µs a collective up to 64 KiB,
// else the bus bandwidth, which the suite puts against the run's copy bandwidth.
//
// Unlike suite_bench it uses today's API: at a past revision it may not build, and `dlf bench
// run` then leaves its cases out.
#include "bench/comm_case.h"
#include "bench/suite_harness.h"

using namespace dlf;

namespace {

// One rank's part of the case: its collective on zeros (sums stay zero, so every call does the
// same work), timed by the harness with as many calls as the slowest rank asks for.
void run_rank(const bench::CommCase& c, const bench::suite::Options& o,
              parallel::Communicator& world) {
  const int64_t n = c.bytes / 4;
  Tensor x = zeros({c.collective == "allgather" ? n / c.ranks : n});
  bench::suite::Case k{.bench = "collective"};
  if (c.collective == "allreduce") k.call = [&world, x]() mutable { world.allreduce(x); };
  if (c.collective == "allgather") k.call = [&world, x] { world.allgather(x); };
  if (c.collective == "reduce_scatter") k.call = [&world, x] { world.reduce_scatter(x); };
  if (!c.latency()) k.bytes = c.bus_bytes();
  const bench::suite::Measured m = bench::suite::measure(
      k, o, [&world](int calls) { return int(world.host_max(uint64_t(calls))); });
  if (world.rank() == 0) bench::suite::print_line(k, o, m);
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite::main_of(
      argc, argv, "suite_comm_bench",
      "dlf bench run's collectives: allreduce|allgather|reduce_scatter f32 SIZE KiB|MiB N ranks "
      "in-process|mpi",
      [] {
        return std::vector<std::string>{
            "allreduce|allgather|reduce_scatter f32 SIZE KiB|MiB N ranks in-process|mpi"};
      },
      [](const bench::suite::Options& o) {
        const bench::CommCase c = bench::parse_comm_case(o.name);
        auto rank = [&](parallel::Communicator& world) { run_rank(c, o, world); };
        if (!c.mpi)
          return parallel::run_ranks(parallel::devices_of(DeviceType::cpu, c.ranks), rank);
        DLF_CHECK(parallel::launched_by_mpi() && parallel::mpi_world_size() == c.ranks, "'", o.name,
                  "' runs as ", c.ranks, " processes under mpirun -np ", c.ranks);
        parallel::run_mpi_rank(kCPU, rank);
      });
}
