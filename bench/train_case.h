// The name of a training-step case of `dlf bench run` (bench/suite_train_bench.cpp) says all it
// runs, so that adding one is a line in perf/suite.cpp:
//
//   train MODEL PRECISION [compiled|recompute] batch B[xT]
//
// MODEL a zoo model (any family), PRECISION fp32 or bf16 (autocast), `compiled` the step as one
// captured graph (dlf train --compile), `recompute` every block's activations recomputed in the
// backward (--recompute full); B sequences or images a step, T tokens a sequence (GPT, BERT).
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <dlf/error.h>

namespace dlf::bench {

/// A training-step case, as its name says.
struct TrainCase {
  std::string model;               ///< "gpt-nano"
  std::string precision = "fp32";  ///< fp32 or bf16
  std::string mode = "eager";      ///< eager, compiled or recompute
  int64_t batch = 0, seq = 0;      ///< seq 0: the model's default (ViT, UNet have none)
};

/// The case `name` names; a dlf::Error saying what is wrong and the form otherwise.
inline TrainCase parse_train_case(const std::string& name) {
  std::istringstream in(name);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  const std::string form = " (the form: train MODEL fp32|bf16 [compiled|recompute] batch B[xT])";
  DLF_CHECK(words.size() >= 5 && words[0] == "train", "'", name, "' is no training case", form);
  TrainCase c{.model = words[1], .precision = words[2]};
  DLF_CHECK(c.precision == "fp32" || c.precision == "bf16", "'", name, "': no precision '",
            c.precision, "'", form);
  size_t at = 3;
  if (words[at] == "compiled" || words[at] == "recompute") c.mode = words[at++];
  DLF_CHECK(words.size() == at + 2 && words[at] == "batch", "'", name, "' is no training case",
            form);
  const std::string& size = words[at + 1];
  const size_t x = size.find('x');
  size_t used = 0, used_seq = 0;
  try {
    c.batch = std::stoll(size.substr(0, x), &used);
    if (x != std::string::npos) c.seq = std::stoll(size.substr(x + 1), &used_seq);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool whole = used == std::min(x, size.size()) &&
                     (x == std::string::npos || used_seq == size.size() - x - 1);
  DLF_CHECK(whole && c.batch > 0 && (x == std::string::npos || c.seq > 0), "'", name,
            "': the batch '", size, "' is not B or BxT (positive integers)", form);
  return c;
}

}  // namespace dlf::bench
