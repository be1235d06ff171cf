// The name of a generation case of `dlf bench run` (bench/suite_generate_bench.cpp) says all it
// runs, so that adding one is a line in perf/suite.cpp:
//
//   generate MODEL kv-cache|no-cache batch B tokens N
//
// MODEL a GPT of the zoo; B prompts of 16 tokens continued greedily by N tokens each, with the
// key/value cache or recomputing each row's prefix for every token.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>

#include <dlf/error.h>

namespace dlf::bench {

/// A generation case, as its name says.
struct GenerateCase {
  std::string model;  ///< "gpt-mini"
  bool kv_cache = true;
  int64_t batch = 0, tokens = 0;
};

/// The case `name` names; a dlf::Error saying the form otherwise.
inline GenerateCase parse_generate_case(const std::string& name) {
  std::istringstream in(name);
  GenerateCase g;
  std::string word, mode, batch_word, tokens_word, rest;
  in >> word >> g.model >> mode >> batch_word >> g.batch >> tokens_word >> g.tokens;
  const bool whole = static_cast<bool>(in) && !(in >> rest);
  DLF_CHECK(whole && word == "generate" && (mode == "kv-cache" || mode == "no-cache") &&
                batch_word == "batch" && tokens_word == "tokens" && g.batch > 0 && g.tokens > 0,
            "not a generation case: '", name,
            "' (generate MODEL kv-cache|no-cache batch B tokens N)");
  g.kv_cache = mode == "kv-cache";
  return g;
}

}  // namespace dlf::bench
