// Collectives over a group of ranks. One interface, two backends: in-process (N ranks on N
// threads, see launch.h) and MPI. Every collective is deterministic: reductions add the ranks'
// values in rank order, whatever the backend, so runs repeat bit for bit.
//
// On sim and meta devices a collective also runs on the devices' communication streams: it
// starts when every rank's data is ready and takes the alpha–beta time of its algorithm
// (sim::collective_seconds).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dlf/core/tensor.h>
#include <dlf/device/sim_device.h>

namespace dlf::parallel {

/// How a collective reduces.
enum class ReduceOp : uint8_t { sum, avg, max };

/// A collective on the communication stream: when it starts and completes there (always 0 on
/// the cpu device, which has no simulated clock).
struct Work {
  /// when the collective starts and completes on the communication stream
  ///@{
  sim::Event start, done;
  ///@}
};

/// What a group's collectives (allreduce, allgather, reduce_scatter, send, recv) have cost this
/// rank on the simulated clock since the group was made (zero on the cpu device, which has no
/// clock).
struct CommSeconds {
  double busy = 0;  ///< their spans on the communication stream
  /// how far they held the compute stream back: a blocking collective's wait, and wait() or
  /// wait_for() on an async one
  double exposed = 0;
  /// of `exposed`, what blocking collectives waited for the communication stream to finish
  /// earlier ones (another group's asynchronous collectives) before their own transfer began
  double queued = 0;
};

/// A group of ranks and its collectives (see above).
///
/// allreduce, allgather, reduce_scatter, send and recv are ops: they pass through dispatch() (their
/// kernel is the backend's transfer), so observers see them, graph capture records them between the
/// step's other ops and a captured step replays them in their place. The backends implement
/// the run_* functions.
class Communicator {
 public:
  Communicator();
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This rank's place in the group, 0 .. size() - 1.
  virtual int rank() const = 0;
  virtual int size() const = 0;  ///< ranks in the group
  /// The group's name ("world", "dp", ...), for traces and errors.
  virtual const std::string& name() const = 0;
  /// This rank's device.
  virtual Device device() const = 0;

  /// Reduces `t` (contiguous, same shape and dtype on every rank) in place. With `async` the
  /// compute stream does not wait for the result: call wait() before using it.
  Work allreduce(Tensor& t, ReduceOp op = ReduceOp::sum, bool async = false);
  /// Every rank's `t` concatenated along dim 0, in rank order. Given `async`, the compute
  /// stream does not wait for it: *async is the Work to wait() for before using the result
  /// (the bytes are there at once; only the simulated clock tells them apart).
  Tensor allgather(const Tensor& t, Work* async = nullptr);
  /// Dim 0 of `t` cut into size() equal parts; rank r gets part r reduced over the ranks.
  /// `async` as allgather's.
  Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum, Work* async = nullptr);
  /// Copies the root's `t` into every rank's `t`.
  virtual void broadcast(Tensor& t, int root) = 0;
  /// Point to point: `send` returns once `t` (contiguous) is copied out; `recv` returns the
  /// message from `src`, which must have that shape and dtype, on this rank's device. Messages
  /// between two ranks arrive in order. Both are ops, as the collectives above.
  void send(const Tensor& t, int dst);
  /// What `src` sent (see send).
  Tensor recv(const Shape& shape, DType dtype, int src);
  virtual void barrier() = 0;  ///< waits until every rank arrives
  /// The largest of the ranks' values, on every rank: a vote on the host (no device data, no
  /// simulated time) for what all ranks must decide together — stop after an interrupt, agree
  /// on a run's configuration.
  virtual uint64_t host_max(uint64_t value) = 0;
  /// A new group of the ranks that pass the same `color`, ordered by `key` then rank
  /// (MPI_Comm_split). Every rank of this group must call it.
  virtual std::unique_ptr<Communicator> split(int color, int key, std::string name) = 0;
  /// The group of `ranks` (ascending), for this rank when it is one of them, else a group of
  /// itself alone: a split whose colours every rank knows (by default that split, which every
  /// rank of this group must call), so that a planning group, whose peers do not run, can make
  /// it too (as MPI_Comm_create_group, called by the members alone).
  virtual std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks, std::string name);

  /// The compute stream waits until `work` has completed.
  void wait(const Work& work);
  /// The compute stream waits for the async collective that last made `result` (its output,
  /// or the tensor it reduced in place). An op on simulated devices, so a captured step waits
  /// where the eager one did (nothing to wait for on the cpu).
  void wait_for(const Tensor& result);

  /// What this group's collectives have cost so far: a step's are the difference over it
  /// (eager or a captured step, whose collectives run as ops).
  CommSeconds seconds() const { return seconds_; }

  /// The group a collective op's "group" attribute names (a dlf::Error once it is destroyed):
  /// how a captured collective finds its group again when the graph runs.
  static Communicator& by_handle(int64_t handle);

 protected:
  /// The backend's allreduce of `t` in place (the compute stream waits unless `async`).
  virtual Work run_allreduce(Tensor& t, ReduceOp op, bool async) = 0;
  /// The backend's allgather of `t` into `out` (gathered_shape of t's).
  virtual Work run_allgather(const Tensor& t, Tensor& out, bool async) = 0;
  /// The backend's reduce-scatter of `t` into `out` (scattered_shape of t's).
  virtual Work run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op, bool async) = 0;
  /// The backend's send of `t` to `dst` (it leaves when copied out: async on the clock).
  virtual Work run_send(const Tensor& t, int dst) = 0;
  /// The backend's receive from `src` into `out` (a dlf::Error if the message does not fit).
  virtual Work run_recv(Tensor& out, int src) = 0;

 private:
  friend struct CollectiveKernels;
  int64_t handle_;  // this group's "group" attribute
  Work last_work_;  // what the last collective op's kernel started
  CommSeconds seconds_;
  // Async collectives by result, for wait_for(); dropped once waited for or the result is gone.
  std::vector<std::pair<std::weak_ptr<Storage>, Work>> in_flight_;
};

/// What a simulated device's communication stream has carried since the process began.
struct CommTotals {
  /// bytes this rank sent over links, as the ring algorithms the cost model prices send them:
  /// 2(n-1)/n of an allreduce's buffer, (n-1)/n of an allgather's output or a reduce-scatter's
  /// input, a broadcast's or a message's whole buffer
  double bytes_sent = 0;
  double seconds = 0;  ///< time the stream was busy with collectives
};
/// `device`'s totals (zero for cpu devices, which have no simulated clock).
CommTotals comm_totals(Device device);

/// How long a rank waits in a collective (or a recv) for its peers before it gives up with a
/// dlf::Error naming the collective, its size and the ranks that did not come — a hung or
/// stopped rank then ends the run instead of freezing it (NCCL's and torch.distributed's
/// timeout). Default: DLF_COLLECTIVE_TIMEOUT seconds from the environment, else 600.
double collective_timeout();
void set_collective_timeout(double seconds);  ///< sets collective_timeout() for this process

}  // namespace dlf::parallel
