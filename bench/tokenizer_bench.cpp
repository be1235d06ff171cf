// Encoding speed of dlf's tokenizers on one thread: each tokenizer encodes the whole text (the
// fortunes corpus, or --data) with a fresh Encoder per repetition, so its piece cache fills
// within the run as it would on a corpus read once. One line per tokenizer, in MB/s of text.
// bench/tokenizer_vs_tiktoken.sh runs it beside tiktoken's npm package.
#include <CLI/CLI.hpp>

#include <time.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include <dlf/nn/data/text_dataset.h>
#include <dlf/tokenizers/tokenizer.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tokenizer_bench: dlf's BPE encoding speed on one thread"};
  std::vector<std::string> names = {"gpt2", "cl100k_base", "o200k_base"};
  std::vector<std::string> data;
  int warmup = 1, reps = 5;
  app.add_option("--tokenizer", names, "tokenizer names or paths")->capture_default_str();
  app.add_option("--data", data, "text files, encoded as one text (default: the fortunes corpus)");
  app.add_option("--warmup", warmup, "untimed encodings")->capture_default_str();
  app.add_option("--reps", reps, "timed encodings")->capture_default_str();
  bench::parse_or_exit(app, argc, argv);

  if (data.empty()) data = nn::data::default_corpus_paths();
  std::string text;
  for (const std::string& file : data) {
    std::ifstream in(file, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ostringstream what;
  what << (data.size() == 1 ? data[0] : std::to_string(data.size()) + " files") << ", "
       << text.size() << " bytes";

  for (const std::string& name : names) {
    const tokenizers::Tokenizer tokenizer = tokenizers::Tokenizer::load(name);
    std::vector<uint32_t> ids;
    ids.reserve(text.size());
    // Wall time is the figure; this thread's CPU time beside it says how much of the wall time
    // other processes took on a shared machine.
    std::vector<double> wall_ms, cpu_ms;
    for (int rep = -warmup; rep < reps; ++rep) {
      const double cpu_start = thread_cpu_ms();
      const double wall = bench::time_once_ms([&] {
        ids.clear();
        tokenizers::Encoder(tokenizer).encode(text, ids);
      });
      if (rep < 0) continue;
      wall_ms.push_back(wall);
      cpu_ms.push_back(thread_cpu_ms() - cpu_start);
    }
    const bench::Timing t = bench::summarize(wall_ms);
    JsonLine line;
    line.add("bench", "tokenizer")
        .add("case", name + " encode, " + what.str())
        .add("impl", "dlf")
        .add("threads", 1)
        .add("metric", "throughput")
        .add("value", double(text.size()) / 1e3 / t.median_ms)
        .add("unit", "MB/s");
    bench::add_timing(line, t)
        .add("cpu_median_ms", bench::summarize(cpu_ms).median_ms)
        .add("tokens", int64_t(ids.size()))
        .add("reps", reps);
    line.print();
  }
}
