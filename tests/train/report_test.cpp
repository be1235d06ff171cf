#include <dlf/core/factory.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/train/report.h>
#include <dlf/train/run_watch.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"

namespace dlf {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int64_t count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report: a run's facts, its two curves, and the profiled step's ops and memory") {
  train::RunReport report({.model = "gpt-<nano>",
                           .layout = "dp 2 x tp 1 x pp 1",
                           .device = "cpu",
                           .flags = "precision fp32",
                           .parameters = 1234567,
                           .item_unit = "tokens"},
                          kCPU, 1);
  const Tensor a = ones({4, 8}), b = ones({8, 2});
  for (int64_t step = 0; step < 3; ++step) {
    report.begin_step(step);
    const Tensor c = matmul(a, b);  // the one op of each step; step 1's is profiled
    report.end_step(step, 3.0 - double(step), 1000, 0);
  }
  report.evaluation(3, 1.5);
  const std::string path =
      (std::filesystem::temp_directory_path() / "dlf_report_test.html").string();
  report.write(path);
  const std::string html = read_text(path);
  std::filesystem::remove(path);
  CHECK(html.find("<h1>gpt-&lt;nano&gt;</h1>") != std::string::npos);  // escaped
  CHECK(html.find("<th>parameters</th><td>1.23M</td>") != std::string::npos);
  CHECK(html.find("<th>steps</th><td>3</td>") != std::string::npos);
  // loss: training and validation; throughput: measured only (no simulated figures)
  CHECK(count(html, "<polyline") == 3);
  CHECK(html.find(">validation loss</text>") != std::string::npos);
  CHECK(html.find(">simulated</text>") == std::string::npos);
  // the op table holds step 1's matmul, one call, and no other op
  CHECK(html.find("<tr><td>matmul</td><td>1</td>") != std::string::npos);
  CHECK(html.find(" ms in 1 ops (wall clock)") != std::string::npos);
  CHECK(count(html, "<svg class=\"figure\"") == 3);  // loss, throughput, memory
}

TEST_CASE("run watch: the trainer's hooks feed the report, written when the run ends") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "dlf_watch_test.html").string();
  CHECK(!train::RunWatch({.header = {}}).hooks().begin_step);  // nothing asked, nothing watched
  train::RunWatch watch({.header = {.model = "toy"}, .report = path, .first = 2, .stop = 5});
  const train::TrainHooks hooks = watch.hooks();
  const Tensor a = ones({4, 8}), b = ones({8, 2});
  for (int64_t step = 2; step < 5; ++step) {  // a resumed run: steps 2, 3 and 4; 3 is profiled
    hooks.begin_step(step);
    if (step == 3) (void)matmul(a, b);
    hooks.end_step({.step = step, .loss = 1, .items_per_s = 10});
  }
  hooks.ended("dp 1 x tp 1 x pp 1", true);
  const std::string html = read_text(path);
  std::filesystem::remove(path);
  CHECK(html.find("<th>steps</th><td>3</td>") != std::string::npos);
  CHECK(html.find("<tr><td>matmul</td><td>1</td>") != std::string::npos);
}

}  // namespace dlf
