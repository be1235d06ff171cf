// A group seen from one rank whose peers do not run: what a planner needs to run one rank's
// share of a parallel model on the meta device. Collectives give tensors of the right shape
// (no data: meta) at once and are recorded, kind and bytes, for the planner to price over the
// group's links — the model's own collectives, as a run makes them, forward, backward and
// recomputed. A group of one has no peers: on any device, its collectives are exact (each
// rank's tensor is the result).
#pragma once
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// One collective a PlanningCommunicator was asked for.
struct PlannedCollective {
  sim::Collective kind;  ///< which
  /// its buffer, as sim::collective_seconds takes it (allreduce's input, allgather's output, a
  /// reduce-scatter's input, a message)
  double bytes = 0;
};

/// Rank `rank` of a group of `size` on a meta device, its peers absent (see above).
class PlanningCommunicator final : public Communicator {
 public:
  /// A dlf::Error unless `device` is a meta device (or the group has one rank) and
  /// 0 <= rank < size.
  PlanningCommunicator(Device device, int rank, int size, std::string name = "planned");
  int rank() const override { return rank_; }                   ///< as constructed
  int size() const override { return size_; }                   ///< as constructed
  const std::string& name() const override { return name_; }    ///< as constructed
  Device device() const override { return device_; }            ///< the meta device
  void broadcast(Tensor& t, int root) override;                 ///< recorded
  void barrier() override {}                                    ///< nobody to wait for
  uint64_t host_max(uint64_t value) override { return value; }  ///< this rank's value
  /// A dlf::Error: the peers' colours are unknown, so the new group's ranks are too.
  std::unique_ptr<Communicator> split(int color, int key, std::string name) override;
  /// This rank's planning group of `ranks` (or of itself alone when not among them).
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks, std::string name) override;

  /// What was asked for since construction or the last clear(), in order.
  const std::vector<PlannedCollective>& collectives() const { return collectives_; }
  void clear() { collectives_.clear(); }  ///< forgets what was recorded

 protected:
  /// Leaves `t` as it is (meta: there are no values) and records it.
  Work run_allreduce(Tensor& t, ReduceOp op, bool async) override;
  /// Records it (`out` is size() times t's rows, meta).
  Work run_allgather(const Tensor& t, Tensor& out, bool async) override;
  /// Records it (`out` is 1/size() of t's rows, meta).
  Work run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op, bool async) override;
  Work run_send(const Tensor& t, int dst) override;  ///< records it
  Work run_recv(Tensor& t, int src) override;        ///< records it (meta: no values)

 private:
  void check(const Tensor& t, const char* what) const;
  Device device_;
  int rank_, size_;
  std::string name_;
  std::vector<PlannedCollective> collectives_;
};

}  // namespace dlf::parallel
