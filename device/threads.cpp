#include <dlf/device/threads.h>
#include <dlf/error.h>

#include "device/openmp_spin_at_load.h"

#include <omp.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace dlf {
namespace {

// libgomp has read GOMP_SPINCOUNT by now (libdlf starts after it): what libdlf_openmp_spin put
// in the environment for it leaves again.
[[maybe_unused]] const bool environment_as_given = [] {
  if (dlf_openmp_spin_set_at_load()) ::unsetenv("GOMP_SPINCOUNT");
  return true;
}();

int initial_threads() {
  if (const char* env = std::getenv("DLF_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    DLF_CHECK(*env != '\0' && *end == '\0' && n > 0 && n <= kMaxThreads, "DLF_NUM_THREADS='", env,
              "' must be a whole number from 1 to ", kMaxThreads);
    return int(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int>& setting() {
  static std::atomic<int> n{initial_threads()};
  return n;
}

}  // namespace

void set_num_threads(int n) {
  DLF_CHECK(n > 0 && n <= kMaxThreads, "set_num_threads(", n,
            "): the thread count must be from 1 to ", kMaxThreads);
  setting().store(n);
  detail::apply_num_threads();
}

namespace {
thread_local int thread_setting = 0;
thread_local bool rank_thread = false;
thread_local bool holds_slot = false;

struct Slots {
  std::mutex mutex;
  std::condition_variable freed;
  std::atomic<int> limit{0};  // read without the lock on the hot path
  int used = 0;
};
Slots& slots() {
  static Slots s;
  return s;
}
}  // namespace

int num_threads() { return thread_setting > 0 ? thread_setting : setting().load(); }

void set_thread_num_threads(int n) {
  DLF_CHECK(n >= 0, "set_thread_num_threads(", n, "): the thread count must be >= 0");
  thread_setting = n;
  detail::apply_num_threads();
}

void set_kernel_slots(int n) {
  DLF_CHECK(n >= 0, "set_kernel_slots(", n, "): must be >= 0 (0: no limit)");
  Slots& s = slots();
  std::lock_guard lock(s.mutex);
  s.limit = n;
  s.freed.notify_all();
}

void set_rank_thread(bool is_rank) {
  if (!is_rank) detail::release_kernel_slot();
  rank_thread = is_rank;
}

namespace detail {
void apply_num_threads() {
  thread_local int applied = 0;
  const int n = thread_setting > 0 ? thread_setting : setting().load(std::memory_order_relaxed);
  if (n != applied) {
    omp_set_num_threads(n);
    applied = n;
  }
}

void acquire_kernel_slot() {
  if (!rank_thread || holds_slot) return;
  Slots& s = slots();
  if (s.limit.load(std::memory_order_relaxed) == 0) return;
  std::unique_lock lock(s.mutex);
  s.freed.wait(lock, [&] { return s.limit == 0 || s.used < s.limit; });
  if (s.limit == 0) return;
  ++s.used;
  holds_slot = true;
}

void release_kernel_slot() {
  if (!holds_slot) return;
  Slots& s = slots();
  {
    std::lock_guard lock(s.mutex);
    --s.used;
  }
  holds_slot = false;
  s.freed.notify_one();
}
}  // namespace detail

}  // namespace dlf
