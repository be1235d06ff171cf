// GPT decoding speed (greedy, random weights): tokens/s over the decode steps and the per-token
// latency (median and p99 of the steps), one line per comparison:
//   kv-cache   the key/value cache against recomputing the prefix for every token (gpt-mini,
//              its context raised to 1024 so that the new tokens all fit);
//   vs-torch   against PyTorch eager decoding with its own cache (bench/generate_torch.py,
//              /usr/bin/python3 with python3-torch) on gpt-small at each --batch.
// Run from the repository root (the torch script's path): build/release/bench/generate_bench
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include <dlf/core/factory.h>
#include <dlf/device/threads.h>
#include <dlf/json_line.h>
#include <dlf/models/generate.h>
#include <dlf/models/gpt.h>
#include <dlf/models/registry.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"
#include "core/json.h"

using namespace dlf;

namespace {

struct Decode {
  double tokens_per_s = 0, median_ms = 0, p99_ms = 0;
};

// Greedy generation of `tokens` from `batch` random prompts of `prompt` tokens (after a short
// untimed one); the decode steps are the intervals between a row's tokens.
Decode decode(models::GPT& gpt, int64_t batch, int64_t prompt, int64_t tokens, bool cache) {
  Generator gen(1);
  const Tensor ids = randint(0, gpt.config().vocab, {batch, prompt}, {.dtype = DType::i64}, &gen);
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t b = 0; b < batch; ++b) prompts.push_back(ids.select(0, b).to_vector<int64_t>());
  std::vector<double> stamps;
  models::GenerateOptions o{.sampling = {.temperature = 0}, .kv_cache = cache};
  o.on_token = [&](int64_t row, int64_t) {
    if (row == 0)
      stamps.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
    return true;
  };
  for (const int64_t n : {int64_t{8}, tokens}) {
    stamps.clear();
    o.max_tokens = n;
    models::generate(gpt, prompts, o);
  }
  std::vector<double> steps;
  for (size_t i = 1; i < stamps.size(); ++i) steps.push_back(stamps[i] - stamps[i - 1]);
  std::sort(steps.begin(), steps.end());
  const double total = stamps.back() - stamps.front();
  const size_t p99 = size_t(std::ceil(0.99 * double(steps.size()))) - 1;
  return {double(batch) * double(steps.size()) / (total / 1e3), steps[steps.size() / 2],
          steps[std::min(p99, steps.size() - 1)]};
}

JsonLine line(const std::string& name, int threads, const Decode& d) {
  JsonLine l;
  l.add("bench", "generate").add("case", name).add("impl", "dlf").add("threads", threads);
  l.add("metric", "throughput").add("value", d.tokens_per_s).add("unit", "tok/s");
  return l.add("median_ms", d.median_ms).add("p99_ms", d.p99_ms);
}

JsonLine& compared(JsonLine& l, const std::string& impl, const Decode& d, double value) {
  return l.add("baseline_impl", impl)
      .add("baseline", d.tokens_per_s)
      .add("baseline_median_ms", d.median_ms)
      .add("baseline_p99_ms", d.p99_ms)
      .add("ratio", value / d.tokens_per_s);
}

// bench/generate_torch.py's line for the same model and shape.
Decode torch_decode(const std::string& script, const models::GPTConfig& c, int64_t batch,
                    int64_t prompt, int64_t tokens, int threads) {
  char command[1024];
  std::snprintf(command, sizeof command,
                "/usr/bin/python3 %s --vocab %ld --context %ld --layers %ld --heads %ld --dim %ld "
                "--batch %ld --prompt %ld --tokens %ld --threads %d",
                script.c_str(), long(c.vocab), long(c.context), long(c.layers), long(c.heads),
                long(c.dim), long(batch), long(prompt), long(tokens), threads);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command, "r"), pclose);
  DLF_CHECK(pipe != nullptr, "cannot run ", command);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe.get())) out += buf;
  const json::Value v = json::parse(out);
  auto number = [&](const char* key) {
    const json::Value* f = v.find(key);
    DLF_CHECK(f != nullptr, script, " printed no ", key, ": ", out);
    return std::stod(f->text);
  };
  return {number("tokens_per_s"), number("median_ms"), number("p99_ms")};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"generate_bench: GPT decoding with and without the key/value cache, and PyTorch's"};
  std::vector<std::string> cases = {"kv-cache", "vs-torch"};
  int threads = 2;
  int64_t cache_tokens = 512;
  int64_t torch_tokens = 64;
  std::vector<int64_t> batches = {1, 8};
  std::string script = "bench/generate_torch.py";
  app.add_option("--case", cases, "kv-cache, vs-torch")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads")->capture_default_str();
  app.add_option("--cache-tokens", cache_tokens, "new tokens of the kv-cache case")
      ->capture_default_str();
  app.add_option("--torch-tokens", torch_tokens, "new tokens of the vs-torch case")
      ->capture_default_str();
  app.add_option("--batch", batches, "batch sizes of the vs-torch case")->capture_default_str();
  app.add_option("--torch-script", script, "PyTorch's decoder")->capture_default_str();
  bench::parse_or_exit(app, argc, argv);
  set_num_threads(threads);

  for (const std::string& which : cases) {
    if (which == "kv-cache") {
      models::GPTConfig c = models::gpt_config("gpt-mini");
      c.context = 1024;
      models::GPT gpt(c);
      const Decode cached = decode(gpt, 1, 1, cache_tokens, true);
      const Decode recomputed = decode(gpt, 1, 1, cache_tokens, false);
      JsonLine l =
          line("kv-cache gpt-mini b1 " + std::to_string(cache_tokens) + " tokens", threads, cached);
      std::puts(compared(l, "dlf no cache", recomputed, cached.tokens_per_s).str().c_str());
    } else if (which == "vs-torch") {
      models::GPT gpt(models::gpt_config("gpt-small"));
      for (const int64_t b : batches) {
        const Decode ours = decode(gpt, b, 16, torch_tokens, true);
        const Decode theirs = torch_decode(script, gpt.config(), b, 16, torch_tokens, threads);
        JsonLine l = line("vs-torch gpt-small b" + std::to_string(b) + " prompt 16 " +
                              std::to_string(torch_tokens) + " tokens",
                          threads, ours);
        std::puts(compared(l, "torch", theirs, ours.tokens_per_s).str().c_str());
      }
    } else {
      std::fprintf(stderr, "generate_bench: unknown case %s (kv-cache, vs-torch)\n", which.c_str());
      return 2;
    }
    std::fflush(stdout);
  }
}
