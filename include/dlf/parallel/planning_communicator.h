// A group seen from one rank whose peers do not run: what a planner needs to run one rank's
// share of a parallel model on the meta device. Collectives give tensors of the right shape
// (no data: meta) at once and run on the device's communication stream as an in-process group's
// do (the same code: parallel/collective_clock.h), for the time the cost model gives a group of
// size() over the devices the group names in the spec's topology — blocking or async, overlapping
// compute as a run's do. The peers are taken to be ready when this rank is (SPMD ranks of one
// layout are). A group of one has no peers: on any device, its collectives are exact (each
// rank's tensor is the result).
#pragma once
#include <vector>

#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// Rank `rank` of a group of `size` on a meta device, its peers absent (see above).
class PlanningCommunicator final : public Communicator {
 public:
  /// A dlf::Error unless `device` is a meta device (or the group has one rank) and
  /// 0 <= rank < size. `devices`: the group's ranks' device indices in the spec's topology
  /// (which links join them), size() of them; empty: 0 .. size - 1.
  PlanningCommunicator(Device device, int rank, int size, std::string name = "planned",
                       std::vector<int> devices = {});
  int rank() const override { return rank_; }                   ///< as constructed
  int size() const override { return size_; }                   ///< as constructed
  const std::string& name() const override { return name_; }    ///< as constructed
  Device device() const override { return device_; }            ///< the meta device
  void broadcast(Tensor& t, int root) override;                 ///< charged (see above)
  void barrier() override {}                                    ///< nobody to wait for
  uint64_t host_max(uint64_t value) override { return value; }  ///< this rank's value
  /// A dlf::Error: the peers' colours are unknown, so the new group's ranks are too.
  std::unique_ptr<Communicator> split(int color, int key, std::string name) override;
  /// This rank's planning group of `ranks` (or of itself alone when not among them), on
  /// their devices.
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& ranks, std::string name) override;

 protected:
  /// Leaves `t` as it is (meta: there are no values) and charges it.
  Work run_allreduce(Tensor& t, ReduceOp op, bool async) override;
  /// Charges it (`out` is size() times t's rows, meta).
  Work run_allgather(const Tensor& t, Tensor& out, bool async) override;
  /// Charges it (`out` is 1/size() of t's rows, meta).
  Work run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op, bool async) override;
  /// Charges it over the link to `dst`'s device (it leaves when copied out: async).
  Work run_send(const Tensor& t, int dst) override;
  /// Charges it over the link from `src`'s device, which sent it now (meta: no values).
  Work run_recv(Tensor& t, int src) override;

 private:
  void check(const Tensor& t, const char* what) const;
  // Runs the collective on the device's communication stream from when its data is ready.
  Work charge(sim::Collective kind, double bytes, bool async, int peer = -1) const;
  Device device_;
  int rank_, size_;
  std::string name_;
  std::vector<int> devices_;
};

}  // namespace dlf::parallel
