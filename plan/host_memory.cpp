#include <dlf/plan/host_memory.h>

#include <dlf/device/allocator.h>
#include <dlf/error.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace dlf::plan {
namespace {

// The whole model in f32 that the ranks start from (4 bytes a parameter), and the lead rank's
// gathered model and Adam moments for a checkpoint (12).
double shared_bytes(double parameters) { return 16 * parameters; }

// The share of the host's available memory a run may plan to take.
constexpr double kHostShare = 0.9;

}  // namespace

double available_host_memory() {
  if (const char* budget = std::getenv("DLF_HOST_MEMORY")) {
    char* end = nullptr;
    const double value = std::strtod(budget, &end);
    const std::string unit = end;
    const double scale = unit.empty()  ? 1
                         : unit == "K" ? 1 << 10
                         : unit == "M" ? 1 << 20
                         : unit == "G" ? double(1 << 30)
                                       : 0;
    DLF_CHECK(end != budget && scale > 0 && std::isfinite(value) && value > 0, "DLF_HOST_MEMORY='",
              budget, "' must be a size such as 8G, 512M or 1000000");
    return value * scale;
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(256, '\n');
  }
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
}

double host_memory_needed(const Plan& plan) {
  // The planner's peak misses some temporaries of a real step (gpt-small on 8 sim devices as
  // dp 2 x tp 4: planned 2.23 GiB a device, measured 2.69): a quarter more, to be safe.
  constexpr double kPlannerMargin = 1.25;
  return kPlannerMargin * double(plan.options.layout.devices()) * double(plan.worst.peak_bytes) +
         shared_bytes(double(plan.parameters));
}

double host_memory_needed(int64_t parameters, int replicas) {
  // Parameters, gradients and Adam's two moments, f32.
  return 16 * double(parameters) * replicas + shared_bytes(double(parameters));
}

bool host_fits(double needed, double available) { return needed <= kHostShare * available; }

std::string host_refusal(double needed, const std::string& what, double available) {
  if (host_fits(needed, available)) return "";
  return what + " needs about " + format_bytes(needed) +
         " of host memory (every rank's tensors live in this process, a simulated device's "
         "too), and " +
         format_bytes(available) +
         " is available: use fewer --devices, a smaller --batch, or more tensor or pipeline "
         "parallelism";
}

void check_host_fits(double needed, const std::string& what, double available) {
  const std::string refusal = host_refusal(needed, what, available);
  DLF_CHECK(refusal.empty(), refusal);
}

}  // namespace dlf::plan
