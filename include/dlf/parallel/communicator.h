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

/// A group of ranks and its collectives (see above).
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This rank's place in the group, 0 .. size() - 1.
  virtual int rank() const = 0;
  virtual int size() const = 0;  ///< ranks in the group
  /// The group's name ("world", "dp", ...), for traces and errors.
  virtual const std::string& name() const = 0;
  /// This rank's device.
  virtual Device device() const = 0;

  /// Reduces `t` (contiguous, same shape and dtype on every rank) in place. With `async` the
  /// compute stream does not wait for the result: call wait() before using it.
  virtual Work allreduce(Tensor& t, ReduceOp op = ReduceOp::sum, bool async = false) = 0;
  /// Every rank's `t` concatenated along dim 0, in rank order. Given `async`, the compute
  /// stream does not wait for it: *async is the Work to wait() for before using the result
  /// (the bytes are there at once; only the simulated clock tells them apart).
  virtual Tensor allgather(const Tensor& t, Work* async = nullptr) = 0;
  /// Dim 0 of `t` cut into size() equal parts; rank r gets part r reduced over the ranks.
  /// `async` as allgather's.
  virtual Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum,
                                Work* async = nullptr) = 0;
  /// Copies the root's `t` into every rank's `t`.
  virtual void broadcast(Tensor& t, int root) = 0;
  /// Point to point: `send` returns once `t` is copied out; `recv` fills `t` (same shape and
  /// dtype) with the message from `src`. Messages between two ranks arrive in order.
  virtual void send(const Tensor& t, int dst) = 0;
  /// Receives into `t` what `src` sent.
  virtual void recv(Tensor& t, int src) = 0;
  virtual void barrier() = 0;  ///< waits until every rank arrives
  /// The largest of the ranks' values, on every rank: a vote on the host (no device data, no
  /// simulated time) for what all ranks must decide together — stop after an interrupt, agree
  /// on a run's configuration.
  virtual uint64_t host_max(uint64_t value) = 0;
  /// A new group of the ranks that pass the same `color`, ordered by `key` then rank
  /// (MPI_Comm_split). Every rank of this group must call it.
  virtual std::unique_ptr<Communicator> split(int color, int key, std::string name) = 0;

  /// The compute stream waits until `work` has completed.
  void wait(const Work& work) const;
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
