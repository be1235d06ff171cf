#include <dlf/parallel/planning_communicator.h>

#include <algorithm>

#include "parallel/collective_math.h"

namespace dlf::parallel {

PlanningCommunicator::PlanningCommunicator(Device device, int rank, int size, std::string name)
    : device_(device), rank_(rank), size_(size), name_(std::move(name)) {
  DLF_CHECK(size == 1 || !device.has_data(), "a planning group of ", size,
            " runs on a meta device, not ", device.str(), ": its collectives make no data");
  DLF_CHECK(size > 0 && rank >= 0 && rank < size, "a planning group's rank ", rank,
            " is not in 0..", size - 1);
}

void PlanningCommunicator::check(const Tensor& t, const char* what) const {
  DLF_CHECK(t.device() == device_, name_, ": ", what, " of a tensor on ", t.device().str(),
            ", not on the group's ", device_.str());
}

Work PlanningCommunicator::run_allreduce(Tensor& t, ReduceOp, bool) {
  check(t, "allreduce");
  collectives_.push_back({sim::Collective::allreduce, double(t.nbytes())});
  return {};
}

Work PlanningCommunicator::run_allgather(const Tensor& t, Tensor& out, bool) {
  check(t, "allgather");
  if (device_.has_data()) out.copy_(t.reshape(out.shape()));  // a group of one: itself
  collectives_.push_back({sim::Collective::allgather, double(out.nbytes())});
  return {};
}

Work PlanningCommunicator::run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp, bool) {
  check(t, "reduce_scatter");
  if (device_.has_data()) out.copy_(t.reshape(out.shape()));  // a group of one: itself
  collectives_.push_back({sim::Collective::reduce_scatter, double(t.nbytes())});
  return {};
}

void PlanningCommunicator::broadcast(Tensor& t, int) {
  check(t, "broadcast");
  collectives_.push_back({sim::Collective::broadcast, double(t.nbytes())});
}

Work PlanningCommunicator::run_send(const Tensor& t, int) {
  check(t, "send");
  collectives_.push_back({sim::Collective::send_recv, double(t.nbytes())});
  return {};
}

Work PlanningCommunicator::run_recv(Tensor& t, int) {
  check(t, "recv");
  collectives_.push_back({sim::Collective::send_recv, double(t.nbytes())});
  return {};
}

std::unique_ptr<Communicator> PlanningCommunicator::split(int, int, std::string name) {
  throw Error(name_ + ": a planning group cannot split into '" + name +
              "': its peers do not run, so their colours are unknown");
}

std::unique_ptr<Communicator> PlanningCommunicator::subgroup(const std::vector<int>& ranks,
                                                             std::string name) {
  const auto at = std::find(ranks.begin(), ranks.end(), rank_);
  if (at == ranks.end()) return std::make_unique<PlanningCommunicator>(device_, 0, 1, name);
  return std::make_unique<PlanningCommunicator>(device_, int(at - ranks.begin()), int(ranks.size()),
                                                std::move(name));
}

}  // namespace dlf::parallel
