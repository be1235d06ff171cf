#include <dlf/core/random.h>
#include <dlf/device/threads.h>
#include <dlf/device/trace.h>
#include <dlf/parallel/launch.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "parallel/in_process.h"

namespace dlf::parallel {

std::vector<Device> devices_of(DeviceType type, int n) {
  DLF_CHECK(n > 0, "the number of devices must be positive, got ", n);
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back({type, type == DeviceType::cpu ? 0 : i});
  return devices;
}

void run_ranks(const std::vector<Device>& devices,
               const std::function<void(Communicator& world)>& fn) {
  detail::InProcessWorld world = detail::in_process_world(devices);
  const int n = static_cast<int>(devices.size());
  const int threads = num_threads();
  const int per_rank = std::max(1, threads / n);
  const int slots = n * per_rank > threads ? std::max(1, threads / per_rank) : 0;
  set_kernel_slots(slots);

  std::mutex mutex;
  std::exception_ptr first_failure;
  int failed_rank = -1;
  auto run_rank = [&](int r) {
    try {
      if (n > 1) set_thread_num_threads(per_rank);  // one rank: the caller's count already
      set_rank_thread(true);
      trace::name_thread("rank " + std::to_string(r));
      fn(*world.ranks[r]);
      set_rank_thread(false);
    } catch (...) {
      set_rank_thread(false);
      std::lock_guard lock(mutex);
      // The rank that failed first explains; the others only stopped because of it.
      if (!first_failure) {
        first_failure = std::current_exception();
        failed_rank = r;
      }
      world.abort();
    }
  };
  // One rank runs on the calling thread. On a thread of its own it would open a second OpenMP
  // team beside the caller's, whose threads outlive its parallel regions: with more of libgomp's
  // threads than CPUs, idle workers stop spinning, and every parallel region of the rank waited
  // ~100 us on a futex wake (a fifth of unet-small's step on 2 cores). It starts from what a
  // thread of its own has — a fresh default generator, no trace name — and the caller gets its
  // own back.
  std::vector<std::thread> ranks;
  if (n == 1) {
    const Generator caller_generator = std::exchange(default_generator(), Generator());
    const std::string caller_name = trace::name_thread("");
    run_rank(0);
    default_generator() = caller_generator;
    trace::name_thread(caller_name);
  }
  for (int r = 0; n > 1 && r < n; ++r) ranks.emplace_back(run_rank, r);
  for (std::thread& t : ranks) t.join();
  set_kernel_slots(0);
  if (!first_failure) return;
  if (n == 1) std::rethrow_exception(first_failure);  // no rank to name
  try {
    std::rethrow_exception(first_failure);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(::dlf::detail::concat("rank ", failed_rank, ": ", e.what()));
  } catch (const Error& e) {
    throw Error(::dlf::detail::concat("rank ", failed_rank, ": ", e.what()));
  }
}

}  // namespace dlf::parallel
