#include <cstdlib>

#include <dlf/plan/host_memory.h>

#include "test_util.h"

namespace dlf {

TEST_CASE("host memory: every device at the plan's peak and a quarter more, and the shared model") {
  plan::Plan p;
  p.options.layout = {.dp = 2, .tp = 1, .pp = 2};
  p.worst.peak_bytes = 1000;
  p.parameters = 10;
  // 1.25 x 4 devices x 1000 bytes, and 16 bytes a parameter: the start model and the gathered
  // checkpoint (weights and Adam's two moments)
  CHECK(plan::host_memory_needed(p) == 5160);
  // whole replicas: weights, gradients and two moments (16 bytes a parameter) each, and the same
  CHECK(plan::host_memory_needed(1000, 2) == 48000);
}

TEST_CASE("host memory: a run may take 90 % of what is available, else it is refused by name") {
  CHECK(plan::host_fits(90, 100));
  CHECK_FALSE(plan::host_fits(91, 100));
  CHECK(plan::host_refusal(900, "gpt-nano", 1000).empty());
  const std::string refusal = plan::host_refusal(2048, "gpt-nano as dp 2", 1024);
  CHECK(refusal.find("gpt-nano as dp 2 needs about 2.00 KiB of host memory") == 0);
  CHECK(refusal.find("and 1.00 KiB is available") != std::string::npos);
  test::check_error([] { plan::check_host_fits(2048, "gpt-nano", 1024); },
                    {"gpt-nano needs about 2.00 KiB", "more tensor or pipeline parallelism"});
  plan::check_host_fits(10, "gpt-nano", 1024);  // fits: nothing thrown
}

TEST_CASE("host memory: DLF_HOST_MEMORY stands for the host's, and a bad one is refused") {
  const char* before = std::getenv("DLF_HOST_MEMORY");
  const std::string saved = before ? before : "";
  setenv("DLF_HOST_MEMORY", "512M", 1);
  CHECK(plan::available_host_memory() == 512.0 * (1 << 20));
  setenv("DLF_HOST_MEMORY", "3G", 1);
  CHECK(plan::available_host_memory() == 3.0 * (1 << 30));
  setenv("DLF_HOST_MEMORY", "12X", 1);
  test::check_error([] { plan::available_host_memory(); }, {"DLF_HOST_MEMORY='12X'"});
  unsetenv("DLF_HOST_MEMORY");
  CHECK(plan::available_host_memory() > 0);  // the machine's
  if (before) setenv("DLF_HOST_MEMORY", saved.c_str(), 1);
}

}  // namespace dlf
