// Picking the next token from a row of logits: greedy, temperature and top-k.
#pragma once
#include <cstdint>
#include <vector>

#include <dlf/core/random.h>

namespace dlf::models {

/// temperature 0 picks the largest logit (the first of equals); otherwise softmax of
/// logits/temperature restricted to the top_k largest (all when top_k <= 0), sampled with one
/// draw from `gen`.
int64_t sample_token(std::vector<double> logits, double temperature, int64_t top_k, Generator& gen);

}  // namespace dlf::models
