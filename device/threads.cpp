#include <dlf/device/threads.h>
#include <dlf/error.h>

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

namespace dlf {
namespace {

int initial_threads() {
  if (const char* env = std::getenv("DLF_NUM_THREADS")) {
    int n = std::atoi(env);
    DLF_CHECK(n > 0, "DLF_NUM_THREADS='", env, "' must be a positive integer");
    return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int>& setting() {
  static std::atomic<int> n{initial_threads()};
  return n;
}

}  // namespace

void set_num_threads(int n) {
  DLF_CHECK(n > 0, "set_num_threads(", n, "): the thread count must be positive");
  setting().store(n);
  detail::apply_num_threads();
}

int num_threads() { return setting().load(); }

namespace detail {
void apply_num_threads() {
  thread_local int applied = 0;
  int n = setting().load(std::memory_order_relaxed);
  if (n != applied) {
    omp_set_num_threads(n);
    applied = n;
  }
}
}  // namespace detail

}  // namespace dlf
