// Text generation with a causal language model (GPT, Llama) as Hugging Face's generate and
// llama.cpp do it: a key/value cache (the prompts in one forward, then one forward of one token per
// row and step), prompts of different lengths in one batch, temperature / top-k / top-p sampling,
// stop tokens and a callback per token for streaming.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/core/tensor.h>

namespace dlf::models {

class CausalLM;

/// How the next token is picked from a row of logits.
struct Sampling {
  double temperature = 1;  ///< 0: the likeliest token (greedy); else softmax(logits / temperature)
  int64_t top_k = 0;       ///< sample among the k likeliest (0: all)
  double top_p = 1;        ///< then among the fewest likeliest whose probabilities reach top_p
};

/// What generate() makes and when it stops.
struct GenerateOptions {
  int64_t max_tokens = 200;  ///< new tokens per prompt at most
  Sampling sampling = {};    ///< how each token is picked
  /// Tokens that end a row (an end-of-text token); the stop token is returned as the row's last.
  std::vector<int64_t> stop_tokens = {};
  /// Sample only ids below this (a tokenizer whose vocabulary is smaller than the model's
  /// padded one); 0: every id of the model.
  int64_t vocab = 0;
  /// false recomputes every row's whole prefix for each token: the reference the cache must
  /// equal, and the baseline of bench/generate_bench.
  bool kv_cache = true;
  Generator* gen = nullptr;  ///< the draws (default_generator() if null), one per sampled token
  /// Called with each new token as soon as it is sampled (rows in order within a step);
  /// returning false ends that row (a stop string was met).
  std::function<bool(int64_t row, int64_t token)> on_token = {};
  /// Called before each step's sampling with the next-token logits [B, vocab] (f64) of every
  /// row, finished rows included.
  std::function<void(const Tensor& logits)> on_logits = {};
};

/// Continues each prompt (token ids, of any lengths from 1 to the model's context) and returns
/// each row's new tokens. Rows run in one batch: the prompts are right-padded into one prefill
/// forward (causal attention keeps the padding out of every real position) and each row then
/// keeps its own length in the cache, so positions are exact and no attention mask is needed.
/// A row that fills the context keeps going on its last context/2 tokens, re-read into the cache
/// (llama.cpp's context shift); without the cache each step reads the last `context` tokens.
/// Runs without autograd and in eval mode (the model's mode is restored after). Deterministic
/// for a given generator state.
std::vector<std::vector<int64_t>> generate(CausalLM& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerateOptions& options = {});

}  // namespace dlf::models
