// The generation cases of `dlf bench run` (perf/suite.cpp lists them): one call continues a
// prompt of 16 random tokens by N tokens, greedily, with models::generate and the key/value
// cache (or, as `no-cache`, recomputing the prefix for each token), on a GPT of the zoo with
// random weights. The headline is new tokens a second; bench/generate_bench has the latency
// percentiles and the comparison with PyTorch.
//
// Its cases' names: bench/generate_case.h.
#include "bench/generate_case.h"
#include "bench/suite_harness.h"

using namespace dlf;

namespace {

bench::suite::Case generate_case(const std::string& name) {
  const bench::GenerateCase g = bench::parse_generate_case(name);
  auto gpt = std::make_shared<models::GPT>(models::gpt_config(g.model));
  Generator gen(1234);
  const Tensor ids = randint(0, gpt->config().vocab, {g.batch, 16}, {.dtype = DType::i64}, &gen);
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t b = 0; b < g.batch; ++b) prompts.push_back(ids.select(0, b).to_vector<int64_t>());
  const models::GenerateOptions options{
      .max_tokens = g.tokens, .sampling = {.temperature = 0}, .kv_cache = g.kv_cache};
  return {.bench = "generate",
          .call = [gpt, prompts, options] { models::generate(*gpt, prompts, options); },
          .items = double(g.batch * g.tokens),
          .item_unit = "tok/s"};
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite::main_of(
      argc, argv, "suite_generate_bench",
      "dlf bench run's generation cases: generate MODEL kv-cache|no-cache batch B tokens N",
      [] { return std::vector<std::string>{"generate MODEL kv-cache|no-cache batch B tokens N"}; },
      [](const bench::suite::Options& o) {
        const bench::suite::Case c = generate_case(o.name);
        bench::suite::print_line(c, o, bench::suite::measure(c, o));
      });
}
