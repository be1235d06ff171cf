// `dlf tokenizer`: encode text to token ids, decode ids to text, train a byte-level BPE, write
// one as a tokenizer.json, and say what a tokenizer is (dlf::tokenizers). `dlf tokenize`:
// write a corpus as token shards (train::tokenize_corpus).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <dlf/train/tokenize.h>

namespace dlf::app {

struct TokenizerCommand {
  CLI::App *encode = nullptr, *decode = nullptr, *train = nullptr, *save = nullptr, *info = nullptr;
  std::string tokenizer = "gpt2";  ///< a name or a path (Tokenizer::load)
  bool specials = false;           ///< encode: special tokens' texts are those tokens
  std::vector<std::string> files;  ///< encode, decode: the inputs (none or "-": stdin)
  // train
  uint32_t vocab = 8192;
  std::vector<std::string> data;  ///< text files (default: the fortunes corpus)
  std::string out;                ///< train, save: the tokenizer.json to write
  std::string pattern = "gpt2";
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  uint64_t min_frequency = 2;
  CLI::App* tokenize = nullptr;
  train::TokenizeOptions shards;  ///< dlf tokenize's
};

/// Adds `dlf tokenizer` and its commands, and `dlf tokenize`, to `app`; returns the first.
CLI::App* add_tokenizer(CLI::App& app, TokenizerCommand& o);
/// Runs the command the command line named (`dlf tokenizer ...` or `dlf tokenize`).
void run_tokenizer(const TokenizerCommand& o);

}  // namespace dlf::app
