// Picking the next token from a row of logits: greedy, temperature, top-k and top-p.
#pragma once
#include <cstdint>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/models/generate.h>

namespace dlf::models {

/// temperature 0 picks the largest logit (the first of equals); otherwise softmax of
/// logits/temperature restricted to the top_k largest (all when top_k <= 0), then to the fewest
/// likeliest whose probabilities add up to top_p (nucleus sampling; all when top_p >= 1),
/// sampled with one draw from `gen`.
int64_t sample_token(std::vector<double> logits, const Sampling& sampling, Generator& gen);

}  // namespace dlf::models
