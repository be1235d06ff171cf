// The collectives as ops (see communicator.h): a group is named in an op's attributes by a
// handle, the process-wide registry below maps it back to the group, and each op's kernel is
// the group's backend transfer.
#include <dlf/autograd/backward.h>
#include <dlf/core/op.h>
#include <dlf/parallel/communicator.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "parallel/collective_clock.h"
#include "parallel/collective_math.h"

namespace dlf::parallel {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<int64_t, Communicator*> groups;
  std::atomic<int64_t> next{0};
};
Registry& registry() {
  static Registry r;
  return r;
}

Attrs collective_attrs(int64_t handle, ReduceOp op, bool async) {
  return {{"group", handle}, {"reduce", int64_t(op)}, {"async", async}};
}

}  // namespace

Communicator::Communicator() : handle_(registry().next++) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.groups.emplace(handle_, this);
}

Communicator::~Communicator() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.groups.erase(handle_);
}

Communicator& Communicator::by_handle(int64_t handle) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.groups.find(handle);
  DLF_CHECK(it != r.groups.end(), "a collective of group ", handle,
            ", which no longer exists: a captured collective runs only while its group lives");
  return *it->second;
}

// The ops' kernels: the backend's transfer, its Work kept for the caller.
struct CollectiveKernels {
  static Communicator& group(const Attrs& a) { return Communicator::by_handle(a.i("group")); }
  static ReduceOp reduce(const Attrs& a) { return static_cast<ReduceOp>(a.i("reduce")); }

  // Runs `transfer` (the backend's collective making `result`) and keeps its Work: for the
  // caller, in the group's seconds, and by result when async (for wait_for).
  template <typename Transfer>
  static void run(Communicator& c, const Attrs& a, const Tensor& result, Transfer transfer) {
    const double before = detail::compute_time(c.device());
    const Work work = transfer();
    c.last_work_ = work;
    c.seconds_.busy += work.done.time - work.start.time;
    const double waited = detail::compute_time(c.device()) - before;  // a blocking one's wait
    c.seconds_.exposed += waited;
    c.seconds_.queued += std::max(0.0, waited - (work.done.time - work.start.time));
    if (!a.b("async")) return;
    std::erase_if(c.in_flight_, [](const auto& entry) { return entry.first.expired(); });
    c.in_flight_.emplace_back(result.storage(), work);
  }
  static void allreduce(Inputs, const Attrs& a, Outputs out) {
    Communicator& c = group(a);
    run(c, a, out[0], [&] { return c.run_allreduce(out[0], reduce(a), a.b("async")); });
  }
  static void allgather(Inputs in, const Attrs& a, Outputs out) {
    Communicator& c = group(a);
    run(c, a, out[0], [&] { return c.run_allgather(in[0], out[0], a.b("async")); });
  }
  static void reduce_scatter(Inputs in, const Attrs& a, Outputs out) {
    Communicator& c = group(a);
    run(c, a, out[0], [&] { return c.run_reduce_scatter(in[0], out[0], reduce(a), a.b("async")); });
  }
  static void send(Inputs in, const Attrs& a, Outputs) {
    Communicator& c = group(a);
    run(c, a, in[0], [&] { return c.run_send(in[0], int(a.i("peer"))); });
  }
  static void recv(Inputs, const Attrs& a, Outputs out) {
    Communicator& c = group(a);
    run(c, a, out[0], [&] { return c.run_recv(out[0], int(a.i("peer"))); });
  }
  static void wait(Inputs in, const Attrs& a, Outputs) {
    Communicator& c = group(a);
    const auto it = std::find_if(c.in_flight_.begin(), c.in_flight_.end(),
                                 [&](const auto& e) { return e.first.lock() == in[0].storage(); });
    if (it == c.in_flight_.end()) return;  // not async, or waited for already
    c.wait(it->second);
    c.in_flight_.erase(it);
  }
};

namespace {

const OpDef& allreduce_op = register_op({
    .name = "allreduce_",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Communicator& c = CollectiveKernels::group(a);
      detail::check_reducible(in[0].dtype(), CollectiveKernels::reduce(a), c.name());
      detail::check_contiguous(in[0], "allreduce", c.name());
      return {{in[0].shape(), in[0].dtype()}};
    },
    .kernel = CollectiveKernels::allreduce,
    .inplace = 0,
    .collective = true,
});

const OpDef& allgather_op = register_op({
    .name = "allgather",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Communicator& c = CollectiveKernels::group(a);
      detail::check_contiguous(in[0], "allgather", c.name());
      return {{detail::gathered_shape(in[0].shape(), c.size(), c.name()), in[0].dtype()}};
    },
    .kernel = CollectiveKernels::allgather,
    .collective = true,
});

const OpDef& reduce_scatter_op = register_op({
    .name = "reduce_scatter",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Communicator& c = CollectiveKernels::group(a);
      detail::check_reducible(in[0].dtype(), CollectiveKernels::reduce(a), c.name());
      detail::check_contiguous(in[0], "reduce_scatter", c.name());
      return {{detail::scattered_shape(in[0].shape(), c.size(), c.name()), in[0].dtype()}};
    },
    .kernel = CollectiveKernels::reduce_scatter,
    .collective = true,
});

// Point to point: attrs "group" and "peer", and for recv what arrives ("shape", "dtype", and
// "device": the op has no input).
Attrs message_attrs(int64_t handle, int peer) {
  return {{"group", handle}, {"peer", int64_t(peer)}, {"async", false}};
}

const OpDef& send_op = register_op({
    .name = "send",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Communicator& c = CollectiveKernels::group(a);
      detail::check_peer(int(a.i("peer")), c.rank(), c.size(), "send", c.name());
      detail::check_contiguous(in[0], "send", c.name());
      return {};
    },
    .kernel = CollectiveKernels::send,
    .collective = true,
});

const OpDef& recv_op = register_op({
    .name = "recv",
    .infer = [](Inputs, const Attrs& a) -> std::vector<TensorMeta> {
      const Communicator& c = CollectiveKernels::group(a);
      detail::check_peer(int(a.i("peer")), c.rank(), c.size(), "recv", c.name());
      return {{a.ints("shape"), a.dtype("dtype")}};
    },
    .kernel = CollectiveKernels::recv,
    .collective = true,
});

const OpDef& wait_op = register_op({
    .name = "collective_wait",
    .infer = [](Inputs, const Attrs&) { return std::vector<TensorMeta>{}; },
    .kernel = CollectiveKernels::wait,
    .cost = [](Inputs, const Attrs&, std::span<const Tensor>) { return Cost{}; },
    .collective = true,
});

// Differentiated through autograd functions (tensor_parallel.cpp's regions), not as ops.
[[maybe_unused]] const bool nondifferentiable = [] {
  for (const char* op :
       {"allreduce_", "allgather", "reduce_scatter", "send", "recv", "collective_wait"})
    autograd::register_nondifferentiable(op);
  return true;
}();

}  // namespace

void Communicator::wait_for(const Tensor& result) {
  if (device().type == DeviceType::cpu) return;
  dispatch(wait_op, {result}, collective_attrs(handle_, ReduceOp::sum, false));
}

std::unique_ptr<Communicator> Communicator::subgroup(const std::vector<int>& ranks,
                                                     std::string name) {
  const bool member = std::find(ranks.begin(), ranks.end(), rank()) != ranks.end();
  return split(member ? 0 : 1 + rank(), rank(), std::move(name));
}

void Communicator::send(const Tensor& t, int dst) {
  dispatch(send_op, {t}, message_attrs(handle_, dst));
}

Tensor Communicator::recv(const Shape& shape, DType dtype, int src) {
  Attrs attrs = message_attrs(handle_, src);
  attrs.set("shape", shape);
  attrs.set("dtype", dtype);
  attrs.set("device", device());
  return dispatch1(recv_op, {}, std::move(attrs));
}

Work Communicator::allreduce(Tensor& t, ReduceOp op, bool async) {
  last_work_ = {};
  dispatch(allreduce_op, {t}, collective_attrs(handle_, op, async));
  return last_work_;
}

Tensor Communicator::allgather(const Tensor& t, Work* async) {
  last_work_ = {};
  Tensor out =
      dispatch1(allgather_op, {t}, collective_attrs(handle_, ReduceOp::sum, async != nullptr));
  detail::hand_over(last_work_, async);
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op, Work* async) {
  last_work_ = {};
  Tensor out = dispatch1(reduce_scatter_op, {t}, collective_attrs(handle_, op, async != nullptr));
  detail::hand_over(last_work_, async);
  return out;
}

}  // namespace dlf::parallel
