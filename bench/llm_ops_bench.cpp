// The fused kernels of Llama-shaped models (rms_norm, rotary_embedding, swiglu, forward and
// backward) on a [4096, 768] activation, as GB/s of the bytes each must move, against a plain
// copy (clone) of the same tensor measured in the same run, round robin: the ratio is the share
// of the machine's copy bandwidth each kernel reaches.
//
//   llm_ops_bench [--threads N] [--reps N] [--warmup N] [--rows N] [--width N]
#include <functional>
#include <string>
#include <vector>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

namespace {

struct Options {
  int threads = 2;
  int reps = 30;
  int warmup = 5;
  int64_t rows = 4096;
  int64_t width = 768;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"rms_norm, rotary_embedding and swiglu against a copy's bandwidth: JSON lines"};
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--reps", o.reps, "timed calls")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  app.add_option("--rows", o.rows, "rows (tokens) of the activation")->capture_default_str();
  app.add_option("--width", o.width, "its width (12 heads of 64 for rotary)")
      ->capture_default_str();
  dlf::bench::parse_or_exit(app, argc, argv);
  return o;
}

struct Case {
  std::string name;
  double bytes;  // what the kernel must read and write at least
  std::function<void()> run;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  DLF_CHECK(o.width % 64 == 0, "llm_ops_bench: --width must be a multiple of 64 (heads of 64)");
  dlf::set_num_threads(o.threads);
  dlf::autograd::NoGradGuard no_grad;
  dlf::Generator gen(7);
  for (dlf::DType dtype : {dlf::DType::f32, dlf::DType::bf16}) {
    const double e = static_cast<double>(dlf::dtype_size(dtype));
    const double n = static_cast<double>(o.rows * o.width);
    auto randn = [&](const dlf::Shape& s) { return dlf::randn(s, {.dtype = dtype}, &gen); };
    const dlf::Tensor x = randn({o.rows, o.width}), g = randn({o.rows, o.width});
    const dlf::Tensor b = randn({o.rows, o.width}), w = randn({o.width});
    // [B, T, H, 64] with T = 1024 positions (or all rows when fewer), rotated along T.
    const int64_t t = std::min<int64_t>(o.rows, 1024);
    const dlf::Tensor heads = x.reshape({o.rows / t, t, o.width / 64, 64});
    const dlf::Tensor rstd = dlf::dispatch(dlf::find_op("rms_norm"), {x, w}, {{"eps", 1e-6}})[1];
    const double rows_stat = static_cast<double>(o.rows * 4);  // rstd in f32
    const std::vector<Case> cases = {
        {"copy", 2 * n * e, [&] { x.clone(); }},
        {"rms_norm", 2 * n * e + rows_stat, [&] { dlf::rms_norm(x, w); }},
        {"rms_norm_backward", 3 * n * e + rows_stat,
         [&] {
           dlf::dispatch(dlf::find_op("rms_norm_backward"), {g, x, w, rstd});
         }},
        {"rotary_embedding", 2 * n * e,
         [&] { dlf::rotary_embedding(heads, {.theta = 500000, .seq_dim = 1}); }},
        {"swiglu", 3 * n * e, [&] { dlf::swiglu(x, b); }},
        {"swiglu_backward", 5 * n * e,
         [&] {
           dlf::dispatch(dlf::find_op("swiglu_backward"), {g, x, b});
         }},
    };
    std::vector<std::function<void()>> fns;
    for (const Case& c : cases) fns.push_back(c.run);
    const std::vector<dlf::bench::Timing> times =
        dlf::bench::time_round_robin(fns, o.warmup, o.reps);
    const double copy_gbs = cases[0].bytes / (times[0].median_ms * 1e6);
    for (size_t i = 0; i < cases.size(); ++i) {
      const double gbs = cases[i].bytes / (times[i].median_ms * 1e6);
      dlf::bench::JsonLine line;
      line.add("bench", "llm_ops")
          .add("case", cases[i].name + " " + dlf::dtype_name(dtype) + " [" +
                           std::to_string(o.rows) + ", " + std::to_string(o.width) + "]")
          .add("impl", "dlf")
          .add("threads", o.threads)
          .add("metric", "bandwidth")
          .add("value", gbs)
          .add("unit", "GB/s");
      dlf::bench::add_timing(line, times[i]);
      line.add("baseline_impl", "copy").add("baseline", copy_gbs).add("ratio", gbs / copy_gbs);
      line.print();
    }
  }
}
