#include "parallel/in_process.h"

#include <dlf/core/shape.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <numeric>

#include <dlf/device/threads.h>

#include "parallel/collective_clock.h"
#include "parallel/collective_math.h"
#include "parallel/watchdog.h"

namespace dlf::parallel::detail {
namespace {

using sim::Collective;

struct AbortFlag {
  std::atomic<bool> raised{false};
};

// What a rank brings to a collective, visible to its peers between two barriers.
struct Slot {
  const void* in = nullptr;
  Shape shape;
  DType dtype = DType::f32;
  double ready = 0;
  int color = 0, key = 0;
  uint64_t vote = 0;  // host_max
};

struct Message {
  Tensor data;  // a copy of what was sent (undefined on meta devices)
  Shape shape;
  DType dtype;
  double sent = 0;  // when the sender's comm stream had it on the wire
};

// The state of one group, shared by its ranks' communicators.
struct Group {
  Group(std::vector<Device> devs, std::shared_ptr<AbortFlag> flag, std::string group_name)
      : devices(std::move(devs)),
        name(std::move(group_name)),
        abort(std::move(flag)),
        here(devices.size(), false),
        slots(devices.size()) {
    for (Device d : devices) device_indices.push_back(d.index);
  }
  int size() const { return static_cast<int>(devices.size()); }

  void check_abort() const {
    if (abort->raised) throw Error("another rank failed; this rank stops with it");
  }

  // All ranks arrive before any leaves. Polls the abort flag so a failed rank frees the others
  // (unless `abortable` is false: see peers_done_reading), and gives up at the watchdog's
  // deadline naming the ranks that did not come to `what`.
  void barrier(int rank, const char* what, double bytes, bool abortable = true) {
    ::dlf::detail::release_kernel_slot();  // a waiting rank lets another run
    const Deadline deadline;
    std::unique_lock lock(mutex);
    if (abortable) check_abort();
    const uint64_t gen = generation;
    here[rank] = true;
    if (++arrived == size()) {
      arrived = 0;
      std::fill(here.begin(), here.end(), false);
      ++generation;
      changed.notify_all();
      return;
    }
    while (generation == gen) {
      changed.wait_for(lock, std::chrono::milliseconds(20));
      if (generation != gen) break;
      if (abortable) check_abort();
      if (deadline.passed()) {
        std::vector<int> missing;
        for (int r = 0; r < size(); ++r)
          if (!here[r]) missing.push_back(r);
        collective_timed_out(what, bytes, name, size(), missing);
      }
    }
  }

  std::vector<Device> devices;
  std::string name;
  std::vector<int> device_indices;
  std::shared_ptr<AbortFlag> abort;
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0;
  std::vector<bool> here;  // by rank: arrived at the barrier under way
  uint64_t generation = 0;
  std::vector<Slot> slots;
  std::map<std::pair<int, int>, std::deque<Message>> mail;             // (src, dst) -> messages
  std::map<std::pair<int64_t, int>, std::shared_ptr<Group>> children;  // (split, color)
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank, std::string name)
      : group_(std::move(group)), rank_(rank), name_(std::move(name)) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& name() const override { return name_; }
  Device device() const override { return group_->devices[rank_]; }

  Work run_allreduce(Tensor& t, ReduceOp op, bool async) override {
    const double start = publish(t, "allreduce");
    const int64_t n = t.numel(), parts = size();
    const int64_t lo = n * rank_ / parts, hi = n * (rank_ + 1) / parts;
    const size_t elem = dtype_size(t.dtype());
    // Rank r reduces part r of every rank's buffer (in rank order) into part r of its own —
    // no other rank reads part r meanwhile — then every rank copies the other parts from
    // their owners: reduce-scatter, then allgather, in place and without scratch memory.
    auto part = [&](const void* base, int r) {
      return static_cast<std::byte*>(const_cast<void*>(base)) + n * r / parts * int64_t(elem);
    };
    if (has_data(t)) reduce_range(inputs(), part(t.raw_data(), rank_), lo, hi, t.dtype(), op);
    peers_done_reading("allreduce", t.nbytes());
    if (has_data(t)) {
      for (int r = 0; r < parts; ++r) {
        const int64_t bytes = (n * (r + 1) / parts - n * r / parts) * int64_t(elem);
        if (r == rank_ || bytes == 0) continue;
        std::memcpy(part(t.raw_data(), r), part(group_->slots[r].in, r),
                    static_cast<size_t>(bytes));
      }
      t.storage()->bump_version();
    }
    peers_done_reading("allreduce", t.nbytes());
    return run(Collective::allreduce, t.nbytes(), start, async);
  }

  Work run_allgather(const Tensor& t, Tensor& out, bool async) override {
    const double start = publish(t, "allgather");
    if (has_data(t)) {
      for (int r = 0; r < size(); ++r) {
        std::memcpy(static_cast<std::byte*>(out.raw_data()) + r * t.nbytes(), group_->slots[r].in,
                    t.nbytes());
      }
    }
    peers_done_reading("allgather", out.nbytes());
    return run(Collective::allgather, out.nbytes(), start, async);
  }

  Work run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op, bool async) override {
    const double start = publish(t, "reduce_scatter");
    if (has_data(t)) {
      const int64_t part = out.numel();
      reduce_range(inputs(), out.raw_data(), part * rank_, part * (rank_ + 1), t.dtype(), op);
    }
    peers_done_reading("reduce_scatter", t.nbytes());
    return run(Collective::reduce_scatter, t.nbytes(), start, async);
  }

  void broadcast(Tensor& t, int root) override {
    check_rank(root, size(), "broadcast", name_);
    const double start = publish(t, "broadcast");
    if (rank_ != root && has_data(t)) {
      std::memcpy(t.raw_data(), group_->slots[root].in, t.nbytes());
      t.storage()->bump_version();
    }
    peers_done_reading("broadcast", t.nbytes());
    run(Collective::broadcast, t.nbytes(), start, false);
  }

  Work run_send(const Tensor& t, int dst) override {
    Message m{has_data(t) ? t.clone() : Tensor(), t.shape(), t.dtype(), ready_time(device())};
    const Work work = run(Collective::send_recv, t.nbytes(), m.sent, true, dst);
    std::lock_guard lock(group_->mutex);
    group_->mail[{rank_, dst}].push_back(std::move(m));
    group_->changed.notify_all();
    return work;
  }

  Work run_recv(Tensor& t, int src) override {
    Message m;
    {
      std::unique_lock lock(group_->mutex);
      auto& box = group_->mail[{src, rank_}];
      if (box.empty()) ::dlf::detail::release_kernel_slot();
      const Deadline deadline;
      while (box.empty()) {
        group_->changed.wait_for(lock, std::chrono::milliseconds(20));
        if (!box.empty()) break;
        group_->check_abort();
        if (deadline.passed()) collective_timed_out("recv", t.nbytes(), name_, size(), {src});
      }
      m = std::move(box.front());
      box.pop_front();
    }
    check_message(m.shape, m.dtype, src, t, name_);
    if (has_data(t)) {
      std::memcpy(t.raw_data(), m.data.raw_data(), t.nbytes());
      t.storage()->bump_version();
    }
    const double start = std::max(m.sent, ready_time(device()));
    return run(Collective::send_recv, t.nbytes(), start, false, src);
  }

  void barrier() override {
    group_->slots[rank_].ready = ready_time(device());
    wait_for_peers("barrier", 0);
    const double start = latest_ready();
    wait_for_peers("barrier", 0);
    run(Collective::barrier, 0, start, false);
  }

  uint64_t host_max(uint64_t value) override {
    group_->slots[rank_].vote = value;
    wait_for_peers("host_max", sizeof value);
    uint64_t largest = 0;
    for (const Slot& s : group_->slots) largest = std::max(largest, s.vote);
    wait_for_peers("host_max", sizeof value);  // everyone has read the votes
    return largest;
  }

  std::unique_ptr<Communicator> split(int color, int key, std::string name) override {
    Slot& mine = group_->slots[rank_];
    mine.color = color;
    mine.key = key;
    wait_for_peers("split", 0);
    std::vector<int> members;
    for (int r = 0; r < size(); ++r) {
      if (group_->slots[r].color == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return group_->slots[a].key < group_->slots[b].key; });
    const int64_t id = splits_++;
    if (members.front() == rank_) {  // the new group's first rank builds its state
      std::vector<Device> devices;
      for (int r : members) devices.push_back(group_->devices[r]);
      std::lock_guard lock(group_->mutex);
      group_->children[{id, color}] = std::make_shared<Group>(devices, group_->abort, name);
    }
    wait_for_peers("split", 0);
    std::shared_ptr<Group> child;
    {
      std::lock_guard lock(group_->mutex);
      child = group_->children.at({id, color});
    }
    wait_for_peers("split", 0);  // everyone holds its child before the map lets go of it
    if (members.front() == rank_) {
      std::lock_guard lock(group_->mutex);
      group_->children.erase({id, color});
    }
    const int new_rank =
        static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    return std::make_unique<InProcessCommunicator>(std::move(child), new_rank, std::move(name));
  }

 private:
  // Puts this rank's tensor in its slot, waits for all, checks they agree; returns the start
  // time of the collective (the latest ready time in the group).
  double publish(const Tensor& t, const char* what) {
    check_contiguous(t, what, name_);
    Slot& mine = group_->slots[rank_];
    mine.in = has_data(t) ? t.raw_data() : nullptr;
    mine.shape = t.shape();
    mine.dtype = t.dtype();
    mine.ready = ready_time(device());
    wait_for_peers(what, double(t.nbytes()));
    const Slot& first = group_->slots[0];
    for (int r = 1; r < size(); ++r) {
      const Slot& other = group_->slots[r];
      check_same_tensor(what, name_, r, first.shape, first.dtype, other.shape, other.dtype);
    }
    return latest_ready();
  }

  void wait_for_peers(const char* what, double bytes) { group_->barrier(rank_, what, bytes); }
  // After a collective's publish every rank of the group is in it and reads the others'
  // buffers: none may leave, not even when another group's rank has failed (it would free a
  // buffer a peer is reading), and none fails before arriving, so this barrier completes.
  void peers_done_reading(const char* what, double bytes) {
    group_->barrier(rank_, what, bytes, /*abortable=*/false);
  }

  double latest_ready() const {
    double start = 0;
    for (const Slot& s : group_->slots) start = std::max(start, s.ready);
    return start;
  }

  std::vector<const void*> inputs() const {
    std::vector<const void*> in;
    for (const Slot& s : group_->slots) in.push_back(s.in);
    return in;
  }

  // Charges the collective to this rank's clock; point to point goes over the link to `peer`.
  Work run(Collective kind, double bytes, double start, bool async, int peer = -1) {
    return run_collective(device(), kind, bytes, group_->device_indices, start, async, name_, peer);
  }

  std::shared_ptr<Group> group_;
  int rank_;
  std::string name_;
  int64_t splits_ = 0;
};

}  // namespace

InProcessWorld in_process_world(const std::vector<Device>& devices) {
  DLF_CHECK(!devices.empty(), "a world needs at least one rank");
  auto flag = std::make_shared<AbortFlag>();
  auto group = std::make_shared<Group>(devices, flag, "world");
  InProcessWorld world;
  for (int r = 0; r < static_cast<int>(devices.size()); ++r)
    world.ranks.push_back(std::make_unique<InProcessCommunicator>(group, r, "world"));
  world.abort = [flag] { flag->raised = true; };
  return world;
}

}  // namespace dlf::parallel::detail
