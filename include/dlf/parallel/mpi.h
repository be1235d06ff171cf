// SPMD across processes: one rank per process, started by mpirun (OpenMPI), joined by an MPI
// world communicator. The same step function runs here as under run_ranks (launch.h), with the
// same results bit for bit: the MPI backend reduces in rank order like the in-process one.
//
//   mpirun -np 4 ./train       // each process: run_mpi_rank(device, step)
#pragma once
#include <functional>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Whether this process was started by mpirun/mpiexec (OpenMPI's OMPI_COMM_WORLD_SIZE, or
/// PMIX_RANK / PMI_RANK, in the environment).
bool launched_by_mpi();
/// This process's rank in the MPI world and the world's size; 0 and 1 when not launched by MPI.
/// Under mpirun they initialise MPI on first use (every process of the job must then use MPI);
/// MPI is finalised at exit.
int mpi_world_rank();
int mpi_world_size();  ///< processes in MPI_COMM_WORLD (1 outside mpirun)

/// Runs `fn(world)` on the calling thread as this process's one rank of the MPI world, on
/// `device` (sim:i / meta:i devices place the rank in the simulated topology: give rank i
/// device i). Every process of the job calls it; without mpirun the world has one rank. The
/// ranks on one machine share its cores: this thread's kernels get num_threads() / (ranks
/// on this machine) threads while `fn` runs.
///
/// When `fn` throws, the exception propagates to the caller on this rank, while the other
/// ranks wait in their next collective with it: the caller prints its one error line and calls
/// mpi_abort(), which ends every process of the job. (A process that exits instead, after
/// `fn` threw there, aborts the job at exit with code 1, rather than finalising MPI, which
/// would wait for the peers forever.)
void run_mpi_rank(Device device, const std::function<void(Communicator& world)>& fn);

/// Ends every process of the MPI job (MPI_Abort) with exit code `code`; without MPI, exits.
[[noreturn]] void mpi_abort(int code);

}  // namespace dlf::parallel
