// matmul and linear through dlf's dispatch against a bare oneDNN matmul primitive of the same
// shape, layout and post-ops, timed alternately on the same thread count.
//
//   matmul_bench [--threads N] [--reps N] [--warmup N]
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <dlf/dlf.h>

#include "bench/bare_matmul.h"
#include "bench/bench_cli.h"
#include "bench/bench_json.h"

namespace {

using dlf::bench::BareMatmul;

struct Options {
  int threads = 2;
  int reps = 20;
  int warmup = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"dlf's matmul and linear against bare oneDNN, f32 and bf16: JSON lines"};
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--reps", o.reps, "timed calls")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  dlf::bench::parse_or_exit(app, argc, argv);
  return o;
}

void report(const std::string& case_name, const Options& o, double flops,
            const std::pair<dlf::bench::Timing, dlf::bench::Timing>& t) {
  const double dlf_gflops = flops / (t.first.median_ms * 1e6);
  const double onednn_gflops = flops / (t.second.median_ms * 1e6);
  dlf::bench::JsonLine line;
  line.add("bench", "matmul").add("case", case_name).add("impl", "dlf").add("threads", o.threads);
  line.add("metric", "gflops").add("value", dlf_gflops).add("unit", "GFLOP/s");
  dlf::bench::add_timing(line, t.first);
  line.add("baseline_impl", "onednn").add("baseline", onednn_gflops);
  line.add("ratio", dlf_gflops / onednn_gflops);
  line.print();
}

// Both implementations must compute the same thing, or the timing means nothing.
void check_same(const dlf::Tensor& got, const dlf::Tensor& expected, const std::string& name) {
  std::vector<float> g = got.to_vector<float>(), e = expected.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) {
    DLF_CHECK(std::fabs(g[i] - e[i]) <= 1e-2f * (1 + std::fabs(e[i])), name,
              ": dlf and oneDNN differ at element ", i, ": ", g[i], " vs ", e[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  dlf::set_num_threads(o.threads);
  const int64_t m = 1024;
  const std::pair<int64_t, int64_t> shapes[] = {{768, 3072}, {3072, 768}, {768, 768}};
  dlf::Generator gen(1234);
  for (dlf::DType dtype : {dlf::DType::f32, dlf::DType::bf16}) {
    for (auto [k, n] : shapes) {
      const std::string dims = std::string(dlf::dtype_name(dtype)) + " M" + std::to_string(m) +
                               " K" + std::to_string(k) + " N" + std::to_string(n);
      const double flops = 2.0 * static_cast<double>(m * k * n);
      const dlf::Tensor a = dlf::randn({m, k}, {.dtype = dtype}, &gen);
      const dlf::Tensor b = dlf::randn({k, n}, {.dtype = dtype}, &gen);
      std::optional<BareMatmul> made;
      try {
        made.emplace(a, b, false, dlf::Tensor(), false);
      } catch (const dnnl::error&) {
        std::fprintf(stderr,
                     "matmul_bench: oneDNN has no %s matmul on this CPU (it needs AVX-512); "
                     "skipped\n",
                     dlf::dtype_name(dtype));
        break;
      }
      BareMatmul& bare = *made;
      bare();
      check_same(dlf::matmul(a, b), bare.out(), dims);
      report(dims, o, flops,
             dlf::bench::time_alternating([&] { dlf::matmul(a, b); }, bare, o.warmup, o.reps));

      const dlf::Tensor w = dlf::randn({n, k}, {.dtype = dtype}, &gen);
      const dlf::Tensor bias = dlf::randn({n}, {.dtype = dtype}, &gen);
      const auto gelu = dlf::Activation::gelu_tanh;
      BareMatmul bare_linear(a, w, true, bias, true);
      bare_linear();
      check_same(dlf::linear(a, w, bias, gelu), bare_linear.out(), "linear " + dims);
      report("linear bias+gelu_tanh " + dims, o, flops,
             dlf::bench::time_alternating([&] { dlf::linear(a, w, bias, gelu); }, bare_linear,
                                          o.warmup, o.reps));
    }
  }
}
