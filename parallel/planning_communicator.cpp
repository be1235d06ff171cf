#include <dlf/parallel/planning_communicator.h>

#include <algorithm>
#include <numeric>

#include "parallel/collective_clock.h"
#include "parallel/collective_math.h"

namespace dlf::parallel {

PlanningCommunicator::PlanningCommunicator(Device device, int rank, int size, std::string name,
                                           std::vector<int> devices)
    : device_(device),
      rank_(rank),
      size_(size),
      name_(std::move(name)),
      devices_(std::move(devices)) {
  DLF_CHECK(size == 1 || !device.has_data(), "a planning group of ", size,
            " runs on a meta device, not ", device.str(), ": its collectives make no data");
  DLF_CHECK(size > 0 && rank >= 0 && rank < size, "a planning group's rank ", rank,
            " is not in 0..", size - 1);
  if (devices_.empty()) {
    devices_.resize(size_t(size));
    std::iota(devices_.begin(), devices_.end(), 0);
  }
  DLF_CHECK(int(devices_.size()) == size, "a planning group of ", size, " ranks names ",
            devices_.size(), " devices: name one a rank");
}

void PlanningCommunicator::check(const Tensor& t, const char* what) const {
  DLF_CHECK(t.device() == device_, name_, ": ", what, " of a tensor on ", t.device().str(),
            ", not on the group's ", device_.str());
}

Work PlanningCommunicator::charge(sim::Collective kind, double bytes, bool async, int peer) const {
  if (peer < 0) {
    return detail::run_collective(device_, kind, bytes, devices_, detail::ready_time(device_),
                                  async, name_);
  }
  const int pair[] = {devices_[size_t(rank_)], devices_[size_t(peer)]};
  return detail::run_collective(device_, kind, bytes, pair, detail::ready_time(device_), async,
                                name_);
}

Work PlanningCommunicator::run_allreduce(Tensor& t, ReduceOp, bool async) {
  check(t, "allreduce");
  return charge(sim::Collective::allreduce, double(t.nbytes()), async);
}

Work PlanningCommunicator::run_allgather(const Tensor& t, Tensor& out, bool async) {
  check(t, "allgather");
  if (device_.has_data()) out.copy_(t.reshape(out.shape()));  // a group of one: itself
  return charge(sim::Collective::allgather, double(out.nbytes()), async);
}

Work PlanningCommunicator::run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp, bool async) {
  check(t, "reduce_scatter");
  if (device_.has_data()) out.copy_(t.reshape(out.shape()));  // a group of one: itself
  return charge(sim::Collective::reduce_scatter, double(t.nbytes()), async);
}

void PlanningCommunicator::broadcast(Tensor& t, int) {
  check(t, "broadcast");
  charge(sim::Collective::broadcast, double(t.nbytes()), false);
}

Work PlanningCommunicator::run_send(const Tensor& t, int dst) {
  check(t, "send");
  detail::check_rank(dst, size_, "send", name_);
  return charge(sim::Collective::send_recv, double(t.nbytes()), true, dst);
}

Work PlanningCommunicator::run_recv(Tensor& t, int src) {
  check(t, "recv");
  detail::check_rank(src, size_, "recv", name_);
  return charge(sim::Collective::send_recv, double(t.nbytes()), false, src);
}

std::unique_ptr<Communicator> PlanningCommunicator::split(int, int, std::string name) {
  throw Error(name_ + ": a planning group cannot split into '" + name +
              "': its peers do not run, so their colours are unknown");
}

std::unique_ptr<Communicator> PlanningCommunicator::subgroup(const std::vector<int>& ranks,
                                                             std::string name) {
  const auto at = std::find(ranks.begin(), ranks.end(), rank_);
  if (at == ranks.end()) {
    return std::make_unique<PlanningCommunicator>(device_, 0, 1, std::move(name),
                                                  std::vector<int>{devices_[size_t(rank_)]});
  }
  std::vector<int> devices;
  for (int r : ranks) devices.push_back(devices_.at(size_t(r)));
  return std::make_unique<PlanningCommunicator>(device_, int(at - ranks.begin()), int(ranks.size()),
                                                std::move(name), std::move(devices));
}

}  // namespace dlf::parallel
