// A training step fed from token shards against the same step fed from batches already in
// memory (issue 49: within 2 %). The shards are a file of random byte ids (--mib of them) whose
// pages are dropped from the page cache before timing (posix_fadvise), so the stream reads
// them from disk; its batches are drawn on the prefetching thread dlf train uses
// (nn::data::Prefetcher) while the step runs. The two steps alternate on one model and
// optimizer; one `data` JSON line with tokens/s of each and their ratio (> 0.98: within 2 %).
//
//   shard_stream_bench [--model gpt-mini] [--steps N] [--warmup N] [--threads K] [--mib M]
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

using namespace dlf;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string model = "gpt-mini";
  int steps = 20, warmup = 2, threads = 2;
  int64_t mib = 512;  // of ids on disk
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"A training step fed from token shards against one fed from memory: one line"};
  app.add_option("--model", o.model, "a GPT of the zoo with a byte vocabulary")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps of each")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps of each first")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--mib", o.mib, "MiB of u16 ids in the shard")->capture_default_str();
  bench::parse_or_exit(app, argc, argv);
  return o;
}

// A shard of random ids below 256 in a fresh folder.
fs::path write_shard(int64_t mib) {
  const fs::path dir = fs::temp_directory_path() / ("dlf_shard_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  nn::data::ShardWriter writer(dir / "00000.tok", 0, 256);
  Generator gen(7);
  for (int64_t chunk = 0; chunk < mib; ++chunk) {
    const Tensor ids = randint(0, 256, {512 * 1024}, {.dtype = DType::i64}, &gen);
    std::vector<uint32_t> narrow(ids.data<int64_t>(), ids.data<int64_t>() + ids.numel());
    writer.append(narrow);
  }
  writer.close();
  return dir;
}

void drop_from_page_cache(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  set_num_threads(o.threads);
  manual_seed(1234);
  Generator data(1234);
  const models::ExampleStep w = models::example_step(o.model, 0, 0, data);
  nn::optim::AdamW opt({{.params = w.model->parameters(), .weight_decay = 0.1}},
                       {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  const fs::path dir = write_shard(o.mib);
  const nn::data::TokenShards shards(dir.string(), 0.01);
  const int64_t B = w.batch_size, T = w.seq, seed = 42;
  auto draw = [&](int64_t step) {
    const nn::data::TextBatch b = shards.sample(step, B, T, seed, 0, B);
    return std::vector<Tensor>{b.x, b.y};
  };
  // The in-memory baseline steps on batches drawn before timing.
  std::vector<std::vector<Tensor>> in_memory;
  for (int i = 0; i < o.warmup + o.steps; ++i) in_memory.push_back(draw(1000000 + i));
  const double draw_ms = bench::time_ms([&] { draw(2000000); }, 2, 10).median_ms;
  drop_from_page_cache(dir / "00000.tok");

  auto step = [&](const std::vector<Tensor>& batch) {
    opt.zero_grad();
    Tensor loss = w.loss(batch);
    loss.backward();
    opt.step();
    (void)loss.item<double>();
  };
  nn::data::Prefetcher<std::vector<Tensor>> stream(draw, 0);
  size_t next_in_memory = 0;
  const std::vector<bench::Timing> t = bench::time_round_robin(
      {[&] { step(stream.next()); }, [&] { step(in_memory[next_in_memory++]); }}, o.warmup,
      o.steps);
  fs::remove_all(dir);

  const double streamed = double(w.items) / (t[0].median_ms / 1e3);
  const double baseline = double(w.items) / (t[1].median_ms / 1e3);
  bench::JsonLine line;
  line.add("bench", "data")
      .add("case", o.model + " " + std::to_string(B) + "x" + std::to_string(T) +
                       " token shards, prefetched")
      .add("impl", "dlf")
      .add("threads", o.threads)
      .add("metric", "throughput")
      .add("value", streamed)
      .add("unit", "tok/s");
  bench::add_timing(line, t[0]);
  line.add("shard_mib", o.mib).add("draw_ms", draw_ms);
  line.add("baseline_impl", "dlf in-memory batches").add("baseline", baseline);
  line.add("baseline_median_ms", t[1].median_ms).add("ratio", streamed / baseline);
  std::cout << line.str() << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "shard_stream_bench: %s\n", e.what());
  return 1;
}
