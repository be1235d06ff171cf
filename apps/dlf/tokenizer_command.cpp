#include "tokenizer_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include <dlf/device/atomic_file.h>
#include <dlf/error.h>
#include <dlf/nn/data/text_dataset.h>
#include <dlf/tokenizers/id_text.h>
#include <dlf/tokenizers/train.h>

#include "validators.h"

namespace dlf::app {
namespace {

using tokenizers::Tokenizer;

// A file's bytes, or standard input's for "-".
std::string read_input(const std::string& path) {
  if (path == "-") {
    return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  }
  std::ifstream in(path, std::ios::binary);
  DLF_CHECK(in.good(), "cannot read ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> inputs(const std::vector<std::string>& files) {
  return files.empty() ? std::vector<std::string>{"-"} : files;
}

void write(std::string_view bytes) {
  DLF_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size(),
            "writing the output failed");
}

// Each input's ids on one line, separated by spaces.
void run_encode(const TokenizerCommand& o) {
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  tokenizers::Encoder encoder(tokenizer);
  const auto specials =
      o.specials ? tokenizers::Specials::recognised : tokenizers::Specials::as_text;
  std::vector<uint32_t> ids;
  std::string line;
  for (const std::string& file : inputs(o.files)) {
    ids.clear();
    encoder.encode(read_input(file), ids, specials);
    line.clear();
    tokenizers::append_ids_text(ids, line);
    line += '\n';
    write(line);
  }
}

// The bytes of whitespace-separated ids.
void run_decode(const TokenizerCommand& o) {
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  for (const std::string& file : inputs(o.files))
    write(tokenizers::decode_ids_text(tokenizer, read_input(file), file));
}

void run_train(const TokenizerCommand& o) {
  check_writable(o.out, "dlf tokenizer train --out");
  const std::vector<std::string> files = o.data.empty() ? nn::data::default_corpus_paths() : o.data;
  const auto start = std::chrono::steady_clock::now();
  const tokenizers::FilesTraining t = tokenizers::train_files({.vocab_size = o.vocab,
                                                               .pattern = o.pattern,
                                                               .special_tokens = o.special_tokens,
                                                               .min_frequency = o.min_frequency},
                                                              files);
  t.tokenizer.save(o.out);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: %u tokens (%u asked) from %zu files, %llu bytes, %zu distinct pieces, in %.1f "
      "s; hash %s\n",
      o.out.c_str(), t.tokenizer.vocab_size(), o.vocab, files.size(),
      static_cast<unsigned long long>(t.bytes), t.distinct_pieces, seconds,
      t.tokenizer.hash_hex().c_str());
}

void run_save(const TokenizerCommand& o) {
  check_writable(o.out, "dlf tokenizer save --out");
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  tokenizer.save(o.out);
  std::printf("%s: %s as a tokenizer.json, %u tokens, hash %s\n", o.out.c_str(),
              tokenizer.source().c_str(), tokenizer.vocab_size(), tokenizer.hash_hex().c_str());
}

void run_info(const TokenizerCommand& o) {
  std::printf("%s", Tokenizer::load(o.tokenizer).describe().c_str());
}

void run_tokenize(train::TokenizeOptions o) {
  o.progress = [](const train::TokenizeProgress& p) {
    std::fprintf(stderr, "%s\n", train::describe(p).c_str());
  };
  std::printf("%s\n", train::describe(train::tokenize_corpus(o), o).c_str());
}

void add_tokenizer_option(CLI::App* cmd, TokenizerCommand& o) {
  cmd->add_option("--tokenizer", o.tokenizer,
                  "gpt2, r50k_base, p50k_base, cl100k_base or o200k_base (from the npm cache "
                  "scripts/reference_tokenizers.sh fills), or a path: a tokenizer.json, a "
                  ".tiktoken rank file, or a directory holding a tokenizer.json or GPT-2's "
                  "encoder.json + vocab.bpe")
      ->check(non_empty())
      ->capture_default_str();
}

}  // namespace

CLI::App* add_tokenizer(CLI::App& app, TokenizerCommand& o) {
  CLI::App* cmd = app.add_subcommand(
      "tokenizer",
      "Byte-level BPE tokenizers (GPT-2's, tiktoken's, Hugging Face's tokenizer.json): encode "
      "text to token ids, decode them, train one on a corpus");
  cmd->require_subcommand(1);

  o.encode = cmd->add_subcommand("encode", "Print each file's token ids, separated by spaces");
  add_tokenizer_option(o.encode, o);
  o.encode->add_flag("--specials", o.specials,
                     "special tokens' texts in the input (<|endoftext|>) are those tokens "
                     "(default: ordinary text)");
  o.encode->add_option("files", o.files, "text files (default, or -: standard input)");

  o.decode = cmd->add_subcommand("decode", "Write the bytes of whitespace-separated token ids");
  add_tokenizer_option(o.decode, o);
  o.decode->add_option("files", o.files, "files of ids (default, or -: standard input)");

  o.train = cmd->add_subcommand(
      "train", "Train a byte-level BPE on text files and save it as a tokenizer.json");
  o.train
      ->add_option("--vocab", o.vocab,
                   "tokens in all: the 256 bytes, the merges and the special tokens")
      ->check(whole(257, 1 << 24))
      ->capture_default_str();
  o.train->add_option("--data", o.data, "text files (default: the fortunes corpus)");
  o.train->add_option("--out", o.out, "the tokenizer.json to write")
      ->required()
      ->check(non_empty());
  o.train
      ->add_option("--pattern", o.pattern,
                   "the pre-tokenisation regex: gpt2, cl100k_base, o200k_base (theirs) or a "
                   "regex")
      ->check(non_empty())
      ->capture_default_str();
  o.train->add_option("--special", o.special_tokens, "special tokens, given the last ids")
      ->capture_default_str();
  o.train
      ->add_option("--min-frequency", o.min_frequency,
                   "pairs seen fewer times are not merged (training may stop short of --vocab)")
      ->check(whole(1, int64_t(1) << 62))
      ->capture_default_str();

  o.save = cmd->add_subcommand(
      "save", "Write a tokenizer as a Hugging Face tokenizer.json (GPT-2's files, a trained one)");
  add_tokenizer_option(o.save, o);
  o.save->add_option("--out", o.out, "the tokenizer.json to write")->required()->check(non_empty());

  o.info = cmd->add_subcommand("info",
                               "Print a tokenizer's source, vocabulary size, hash, regex and "
                               "special tokens");
  add_tokenizer_option(o.info, o);

  o.tokenize = app.add_subcommand(
      "tokenize", "Write text files as token shards that dlf train --data reads (docs/data.md)");
  train::TokenizeOptions& s = o.shards;
  o.tokenize->add_option("--data", s.data, "text files or folders (default: the fortunes corpus)");
  o.tokenize->add_option("--out", s.out, "the folder of the shards")
      ->required()
      ->check(non_empty());
  o.tokenize->add_option("--tokenizer", s.tokenizer,
                         "a name or path as dlf tokenizer's (default: bytes)");
  o.tokenize->add_option("--jobs", s.threads, "files encoded at once (default: the cores)")
      ->check(whole(1, 1024));
  return cmd;
}

void run_tokenizer(const TokenizerCommand& o) {
  if (*o.encode) run_encode(o);
  if (*o.decode) run_decode(o);
  if (*o.train) run_train(o);
  if (*o.save) run_save(o);
  if (*o.info) run_info(o);
  if (*o.tokenize) run_tokenize(o.shards);
}

}  // namespace dlf::app
