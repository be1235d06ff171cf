// The MPI backend: one rank per process. Each collective first exchanges a small header (shape,
// dtype, ready time) so that ranks disagreeing on the tensor all throw the same dlf::Error, then
// moves raw bytes (MPI_BYTE) and reduces them here with collective_math.h, in rank order, never
// with MPI_Allreduce (whose order is unspecified): the bits are the in-process backend's.
// Every wait is non-blocking MPI polled against the watchdog's deadline; the headers travel
// point to point, so a rank that never comes is named.
#include <dlf/core/shape.h>
#include <dlf/device/threads.h>
#include <dlf/parallel/mpi.h>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "parallel/collective_clock.h"
#include "parallel/collective_math.h"
#include "parallel/watchdog.h"

namespace dlf::parallel {
namespace {

using detail::collective_timed_out;
using detail::Deadline;
using detail::has_data;
using detail::ready_time;
using sim::Collective;

// What a rank tells its peers before the data: the tensor's shape and dtype, how many bytes
// follow (none on meta devices), and its time on the simulated clock (ready, or sent).
struct Header {
  static constexpr int64_t kMaxDims = 8;
  int64_t ndim = 0;
  int64_t dims[kMaxDims] = {};
  int64_t dtype = 0;
  int64_t bytes = 0;
  double time = 0;

  Shape shape() const { return Shape(dims, dims + ndim); }
  DType type() const { return static_cast<DType>(dtype); }
};

Header header_of(const Tensor& t, double time, const char* what, const std::string& group) {
  DLF_CHECK(t.dim() <= Header::kMaxDims, what, " on group '", group, "': ", shape_str(t.shape()),
            " has more than ", Header::kMaxDims, " dims; reshape the tensor to send it over MPI");
  Header h;
  h.ndim = t.dim();
  std::copy(t.shape().begin(), t.shape().end(), h.dims);
  h.dtype = static_cast<int64_t>(t.dtype());
  h.bytes = has_data(t) ? static_cast<int64_t>(t.nbytes()) : 0;
  h.time = time;
  return h;
}

// MPI counts bytes in ints.
int count(int64_t bytes, const std::string& group) {
  DLF_CHECK(bytes <= INT_MAX, "collective on group '", group, "': ", bytes,
            " bytes exceed MPI's 2 GiB per message; move the tensor in smaller pieces");
  return static_cast<int>(bytes);
}

// A message on its way: MPI reads the header and the copy of the data until both requests
// complete.
struct Outgoing {
  Header header;
  Tensor data;
  std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

// MPI for the life of the process: initialised on first use, finalised at exit.
struct Runtime {
  Runtime() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    DLF_CHECK(provided >= MPI_THREAD_SERIALIZED, "MPI provides thread level ", provided,
              "; dlf needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED, ")");
  }
  ~Runtime() {
    // A rank that failed may have peers waiting for it in a collective, and MPI_Finalize would
    // wait for them: end the job instead.
    if (failed) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  }

  // Forgets the sends MPI has delivered (or copied to its own buffers).
  void reap() {
    outbox.remove_if([](Outgoing& m) {
      int done = 0;
      MPI_Testall(2, m.requests.data(), &done, MPI_STATUSES_IGNORE);
      return done != 0;
    });
  }
  // Waits until every send has left this process.
  void flush() {
    for (Outgoing& m : outbox) MPI_Waitall(2, m.requests.data(), MPI_STATUSES_IGNORE);
    outbox.clear();
  }

  bool failed = false;         // run_mpi_rank threw on this rank
  std::list<Outgoing> outbox;  // sends in flight (a list: MPI holds their addresses)
};

Runtime& runtime() {
  static Runtime mpi;
  return mpi;
}

// An MPI communicator this process owns.
struct OwnedComm {
  explicit OwnedComm(MPI_Comm c) : comm(c) {}
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  ~OwnedComm() { MPI_Comm_free(&comm); }
  MPI_Comm comm;
};

int ranks_on_this_machine() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  const OwnedComm owned(local);
  int n = 1;
  MPI_Comm_size(owned.comm, &n);
  return n;
}

constexpr int kTag = 0;        // point to point: a header, then its data, in order
constexpr int kHeaderTag = 1;  // a collective's headers
constexpr int kDataTag = 2;    // a collective's data

// Polls `requests` until all complete or the watchdog's deadline passes; then names the peers
// (`peers[i]` for request i, -1 for none) whose requests are still open.
void wait_all(std::vector<MPI_Request>& requests, const std::vector<int>& peers, const char* what,
              double bytes, const std::string& group, int size) {
  const Deadline deadline;
  for (;;) {
    bool open = false;
    for (MPI_Request& r : requests) {
      int done = 1;
      if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      open = open || done == 0;
    }
    if (!open) return;
    if (deadline.passed()) break;
    std::this_thread::yield();
  }
  std::vector<int> missing;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i] != MPI_REQUEST_NULL && peers[i] >= 0) missing.push_back(peers[i]);
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  collective_timed_out(what, bytes, group, size, missing);
}

void wait_one(MPI_Request request, const char* what, double bytes, const std::string& group,
              int size, int peer = -1) {
  std::vector<MPI_Request> requests{request};
  wait_all(requests, {peer}, what, bytes, group, size);
}

class MpiCommunicator final : public Communicator {
 public:
  // Takes `comm`, which every rank of it passes along with its device.
  MpiCommunicator(MPI_Comm comm, Device device, std::string name)
      : comm_(comm), device_(device), name_(std::move(name)) {
    MPI_Comm_rank(comm_.comm, &rank_);
    MPI_Comm_size(comm_.comm, &size_);
    const int mine[2] = {static_cast<int>(device.type), device.index};
    std::vector<int> all(2 * size_);
    MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_.comm);
    for (int r = 0; r < size_; ++r) {
      const Device other{static_cast<DeviceType>(all[2 * r]), all[2 * r + 1]};
      DLF_CHECK(other.type == device.type, "group '", name_, "': rank ", r, " runs on ",
                other.str(), " and rank ", rank_, " on ", device.str(),
                "; give every rank the same kind of device");
      device_indices_.push_back(other.index);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  Device device() const override { return device_; }

  Work run_allreduce(Tensor& t, ReduceOp op, bool async) override {
    const double start = agree(t, "allreduce");
    if (has_data(t)) {
      // Reduce-scatter, then allgather: rank r reduces part r of every rank's buffer into part
      // r of its own, then gathers the other reduced parts from their owners.
      const Parts parts = parts_of(t);
      auto* base = static_cast<std::byte*>(t.raw_data());
      reduce_own_part(t, parts, base + parts.displs[rank_], op);
      const std::span<const std::byte> mine(base + parts.displs[rank_],
                                            size_t(parts.counts[rank_]));
      std::vector<std::span<const std::byte>> send(size_, mine);
      std::vector<std::span<std::byte>> recv;
      for (int r = 0; r < size_; ++r)
        recv.emplace_back(base + parts.displs[r], size_t(parts.counts[r]));
      transfer(send, recv, kDataTag, "allreduce", double(t.nbytes()));
      t.storage()->bump_version();
    }
    return run(Collective::allreduce, t.nbytes(), start, async);
  }

  Work run_allgather(const Tensor& t, Tensor& out, bool async) override {
    const double start = agree(t, "allgather");
    if (has_data(t)) {
      const size_t bytes = size_t(count(t.nbytes(), name_));
      auto* base = static_cast<std::byte*>(out.raw_data());
      std::memcpy(base + size_t(rank_) * bytes, t.raw_data(), bytes);
      std::vector<std::span<const std::byte>> send(
          size_, {static_cast<const std::byte*>(t.raw_data()), bytes});
      std::vector<std::span<std::byte>> recv;
      for (int r = 0; r < size_; ++r) recv.emplace_back(base + size_t(r) * bytes, bytes);
      transfer(send, recv, kDataTag, "allgather", double(out.nbytes()));
    }
    return run(Collective::allgather, out.nbytes(), start, async);
  }

  Work run_reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op, bool async) override {
    const double start = agree(t, "reduce_scatter");
    if (has_data(t)) reduce_own_part(t, parts_of(t), out.raw_data(), op);
    return run(Collective::reduce_scatter, t.nbytes(), start, async);
  }

  void broadcast(Tensor& t, int root) override {
    detail::check_rank(root, size_, "broadcast", name_);
    const double start = agree(t, "broadcast");
    if (has_data(t)) {
      const std::span<std::byte> data(static_cast<std::byte*>(t.raw_data()),
                                      size_t(count(t.nbytes(), name_)));
      std::vector<std::span<const std::byte>> send(size_);
      std::vector<std::span<std::byte>> recv(size_);
      if (rank_ == root) {
        std::fill(send.begin(), send.end(), data);
      } else {
        recv[root] = data;
      }
      transfer(send, recv, kDataTag, "broadcast", double(t.nbytes()));
      if (rank_ != root) t.storage()->bump_version();
    }
    run(Collective::broadcast, t.nbytes(), start, false);
  }

  Work run_send(const Tensor& t, int dst) override {
    Header header = header_of(t, 0, "send", name_);
    const int bytes = count(header.bytes, name_);
    Runtime& mpi = runtime();
    Outgoing& m = mpi.outbox.emplace_back();
    if (bytes > 0) m.data = t.clone();  // the caller may change `t` once send returns
    header.time = ready_time(device_);  // on the wire once copied, as in-process
    m.header = header;
    const Work work = run(Collective::send_recv, t.nbytes(), header.time, true, dst);
    MPI_Isend(&m.header, sizeof(Header), MPI_BYTE, dst, kTag, comm_.comm, &m.requests[0]);
    if (bytes > 0)
      MPI_Isend(m.data.raw_data(), bytes, MPI_BYTE, dst, kTag, comm_.comm, &m.requests[1]);
    mpi.reap();
    return work;
  }

  Work run_recv(Tensor& t, int src) override {
    Header h;
    MPI_Request request;
    MPI_Irecv(&h, sizeof(Header), MPI_BYTE, src, kTag, comm_.comm, &request);
    wait_one(request, "recv", t.nbytes(), name_, size_, src);
    if (h.bytes > 0) {
      // A message that does not fit `t` is still taken off the wire: the next one stays next.
      const bool fits = h.shape() == t.shape() && h.type() == t.dtype() && has_data(t);
      auto discard = std::make_unique_for_overwrite<std::byte[]>(fits ? 0 : h.bytes);
      MPI_Irecv(fits ? t.raw_data() : discard.get(), count(h.bytes, name_), MPI_BYTE, src, kTag,
                comm_.comm, &request);
      wait_one(request, "recv", double(h.bytes), name_, size_, src);
      if (fits) t.storage()->bump_version();
    }
    detail::check_message(h.shape(), h.type(), src, t, name_);
    return run(Collective::send_recv, t.nbytes(), std::max(h.time, ready_time(device_)), false,
               src);
  }

  void barrier() override {
    const double ready = ready_time(device_);
    std::vector<double> all(size_);
    exchange(&ready, all.data(), sizeof ready, "barrier", 0);
    run(Collective::barrier, 0, *std::max_element(all.begin(), all.end()), false);
  }

  uint64_t host_max(uint64_t value) override {
    std::vector<uint64_t> all(size_);
    exchange(&value, all.data(), sizeof value, "host_max", sizeof value);
    return *std::max_element(all.begin(), all.end());
  }

  std::unique_ptr<Communicator> split(int color, int key, std::string name) override {
    DLF_CHECK(color >= 0, "split of group '", name_, "': color ", color,
              " must be >= 0 (MPI_Comm_split)");
    MPI_Comm comm;
    MPI_Comm_split(comm_.comm, color, key, &comm);
    return std::make_unique<MpiCommunicator>(comm, device_, std::move(name));
  }

 private:
  // Rank r's part of a buffer, in bytes from its start: in_process.cpp's parts, elements
  // [n * r / size, n * (r + 1) / size).
  struct Parts {
    std::vector<int> counts, displs;
  };
  Parts parts_of(const Tensor& t) const {
    const int64_t n = t.numel(), elem = static_cast<int64_t>(dtype_size(t.dtype()));
    Parts parts;
    for (int r = 0; r < size_; ++r) {
      parts.displs.push_back(count(n * r / size_ * elem, name_));
      parts.counts.push_back(count((n * (r + 1) / size_ - n * r / size_) * elem, name_));
    }
    return parts;
  }

  // Receives this rank's part of every rank's `t` and reduces them, in rank order, into `out`.
  void reduce_own_part(const Tensor& t, const Parts& parts, void* out, ReduceOp op) {
    const int mine = parts.counts[rank_];
    std::vector<int> counts(size_, mine), displs;
    for (int r = 0; r < size_; ++r) displs.push_back(count(int64_t(r) * mine, name_));
    auto received = std::make_unique_for_overwrite<std::byte[]>(size_t(size_) * mine);
    const auto* base = static_cast<const std::byte*>(t.raw_data());
    std::vector<std::span<const std::byte>> send;
    std::vector<std::span<std::byte>> recv;
    for (int r = 0; r < size_; ++r) {
      send.emplace_back(base + parts.displs[r], size_t(parts.counts[r]));
      recv.emplace_back(received.get() + displs[r], size_t(mine));
    }
    std::memcpy(recv[rank_].data(), send[rank_].data(), size_t(mine));
    transfer(send, recv, kDataTag, "reduce", double(t.nbytes()));
    std::vector<const void*> inputs;
    for (int r = 0; r < size_; ++r) inputs.push_back(received.get() + displs[r]);
    const int64_t elem = static_cast<int64_t>(dtype_size(t.dtype()));
    detail::reduce_range(inputs, out, 0, mine / elem, t.dtype(), op);
  }

  // Checks that every rank brings the same shape and dtype (each sees every header, so all
  // throw alike); returns when the collective starts: the latest ready time in the group.
  double agree(const Tensor& t, const char* what) {
    detail::check_contiguous(t, what, name_);
    const Header mine = header_of(t, ready_time(device_), what, name_);
    std::vector<Header> all(size_);
    exchange(&mine, all.data(), sizeof(Header), what, double(t.nbytes()));
    double start = 0;
    for (int r = 0; r < size_; ++r) {
      detail::check_same_tensor(what, name_, r, all[0].shape(), all[0].type(), all[r].shape(),
                                all[r].type());
      start = std::max(start, all[r].time);
    }
    return start;
  }

  // Every rank's `bytes` from `mine` into `all` (rank order).
  void exchange(const void* mine, void* all, size_t bytes, const char* what, double size) {
    auto* out = static_cast<std::byte*>(all);
    std::memcpy(out + size_t(rank_) * bytes, mine, bytes);
    std::vector<std::span<const std::byte>> send(size_,
                                                 {static_cast<const std::byte*>(mine), bytes});
    std::vector<std::span<std::byte>> recv;
    for (int r = 0; r < size_; ++r) recv.emplace_back(out + size_t(r) * bytes, bytes);
    transfer(send, recv, kHeaderTag, what, size);
  }

  // Point to point with every peer at once: send[r] goes to rank r and recv[r] comes from it
  // (this rank's own and empty ones are skipped). Every data movement of the collectives is
  // made of these, so the watchdog can name the peers whose messages never completed.
  void transfer(const std::vector<std::span<const std::byte>>& send,
                const std::vector<std::span<std::byte>>& recv, int tag, const char* what,
                double size) {
    std::vector<MPI_Request> requests;
    std::vector<int> peers;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || recv[r].empty()) continue;
      MPI_Irecv(recv[r].data(), count(int64_t(recv[r].size()), name_), MPI_BYTE, r, tag, comm_.comm,
                &requests.emplace_back());
      peers.push_back(r);
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || send[r].empty()) continue;
      MPI_Isend(send[r].data(), count(int64_t(send[r].size()), name_), MPI_BYTE, r, tag, comm_.comm,
                &requests.emplace_back());
      peers.push_back(r);
    }
    wait_all(requests, peers, what, size, name_, size_);
  }

  // Charges the collective to this rank's clock; point to point goes over the link to `peer`.
  Work run(Collective kind, double bytes, double start, bool async, int peer = -1) {
    return detail::run_collective(device_, kind, bytes, device_indices_, start, async, name_, peer);
  }

  OwnedComm comm_;
  Device device_;
  std::string name_;
  int rank_ = 0, size_ = 1;
  std::vector<int> device_indices_;  // by rank: where each rank sits in the sim topology
};

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

int mpi_world_rank() {
  if (!launched_by_mpi()) return 0;
  runtime();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int mpi_world_size() {
  if (!launched_by_mpi()) return 1;
  runtime();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void run_mpi_rank(Device device, const std::function<void(Communicator& world)>& fn) {
  Runtime& mpi = runtime();
  // The ranks on this machine share its cores, as run_ranks' threads do.
  set_thread_num_threads(std::max(1, num_threads() / ranks_on_this_machine()));
  try {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // dlf's messages never meet the program's own
    MpiCommunicator world(comm, device, "world");
    fn(world);
    mpi.flush();  // every message has left before the world goes
  } catch (...) {
    set_thread_num_threads(0);
    mpi.failed = true;
    throw;
  }
  set_thread_num_threads(0);
}

void mpi_abort(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace dlf::parallel
