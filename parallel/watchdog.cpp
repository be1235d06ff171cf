#include "parallel/watchdog.h"

#include <dlf/device/allocator.h>
#include <dlf/parallel/communicator.h>

#include <atomic>
#include <cmath>
#include <cstdlib>

namespace dlf::parallel {
namespace {

double timeout_from_environment() {
  const char* text = std::getenv("DLF_COLLECTIVE_TIMEOUT");
  if (text == nullptr || *text == '\0') return 600;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  DLF_CHECK(*end == '\0' && std::isfinite(seconds) && seconds > 0 && seconds <= 1e6,
            "DLF_COLLECTIVE_TIMEOUT must be a number of seconds in (0, 1e6], got '", text, "'");
  return seconds;
}

std::atomic<double>& timeout_seconds() {
  static std::atomic<double> seconds = timeout_from_environment();
  return seconds;
}

}  // namespace

double collective_timeout() { return timeout_seconds(); }

void set_collective_timeout(double seconds) {
  DLF_CHECK(std::isfinite(seconds) && seconds > 0 && seconds <= 1e6,
            "the collective timeout must be in (0, 1e6] seconds, got ", seconds);
  timeout_seconds() = seconds;
}

namespace detail {

Deadline::Deadline()
    : end_(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(collective_timeout()))) {}

void collective_timed_out(const std::string& what, double bytes, const std::string& group, int size,
                          const std::vector<int>& missing) {
  std::string ranks;
  for (size_t i = 0; i < missing.size(); ++i) ranks += (i ? ", " : "") + std::to_string(missing[i]);
  throw Error(::dlf::detail::concat(
      "collective watchdog: ", what, " of ", format_bytes(bytes), " on group '", group, "' (", size,
      " ranks) waited ", collective_timeout(), " s ",
      missing.empty() ? "for an exchange every rank had joined (a rank stopped mid-way?)"
                      : (missing.size() == 1 ? "for rank " : "for ranks ") + ranks +
                            " (hung, stopped or dead?)",
      "; to wait longer set --collective-timeout or DLF_COLLECTIVE_TIMEOUT"));
}

}  // namespace detail
}  // namespace dlf::parallel
