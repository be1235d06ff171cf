#include <dlf/device/formatted.h>
#include <dlf/error.h>
#include <dlf/nn/data/text_dataset.h>
#include <dlf/nn/data/token_stream.h>
#include <dlf/tokenizers/tokenizer.h>
#include <dlf/train/tokenize.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

namespace dlf::train {
namespace fs = std::filesystem;

namespace {

// Text is read and encoded this much at a time, cut after the last line end in it.
constexpr size_t kPieceBytes = size_t(8) << 20;

// The encoding of one file: bytes, or a tokenizer's ids.
class PieceEncoder {
 public:
  explicit PieceEncoder(const std::optional<tokenizers::Tokenizer>& tokenizer) {
    if (tokenizer) encoder_.emplace(*tokenizer);
  }
  void encode(std::string_view text, std::vector<uint32_t>& ids) {
    ids.clear();
    if (encoder_) {
      encoder_->encode(text, ids);
    } else {
      for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    }
  }

 private:
  std::optional<tokenizers::Encoder> encoder_;
};

struct Shared {
  std::atomic<int64_t> next_file{0}, files_done{0}, bytes_done{0}, tokens{0};
  std::mutex failure_lock;
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
};

void tokenize_file(const std::string& file, const fs::path& shard,
                   const std::optional<tokenizers::Tokenizer>& tokenizer, Shared& shared) {
  std::ifstream in(file, std::ios::binary);
  DLF_CHECK(in.good(), "cannot read text file ", file);
  nn::data::ShardWriter writer(shard, tokenizer ? tokenizer->hash() : 0,
                               tokenizer ? tokenizer->vocab_size() : 256);
  if (tokenizer && tokenizer->end_of_text()) writer.append(std::vector{*tokenizer->end_of_text()});
  PieceEncoder encoder(tokenizer);
  std::string text, carry;
  std::vector<uint32_t> ids;
  while (in || !carry.empty()) {
    text = std::move(carry);
    carry.clear();
    const size_t have = text.size();
    text.resize(have + kPieceBytes);
    in.read(text.data() + have, std::streamsize(kPieceBytes));
    text.resize(have + size_t(in.gcount()));
    DLF_CHECK(!in.bad(), "reading text file ", file, " failed");
    const size_t cut = in ? text.rfind('\n') : std::string::npos;
    if (cut != std::string::npos) {
      carry = text.substr(cut + 1);
      text.resize(cut + 1);
    }
    encoder.encode(text, ids);
    writer.append(ids);
    shared.bytes_done += int64_t(text.size());
    shared.tokens += int64_t(ids.size());
    if (!in && carry.empty()) break;
  }
  writer.close();
}

}  // namespace

TokenizeSummary tokenize_corpus(const TokenizeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> files =
      nn::data::text_files(o.data.empty() ? nn::data::default_corpus_paths() : o.data);
  DLF_CHECK(!o.out.empty(), "tokenize: no output folder given (--out)");
  fs::create_directories(o.out);
  DLF_CHECK(!nn::data::TokenShards::is_shard_folder(o.out), o.out,
            " holds token shards already: remove them or pick another --out");
  std::optional<tokenizers::Tokenizer> tokenizer;
  if (!o.tokenizer.empty()) tokenizer = tokenizers::Tokenizer::load(o.tokenizer);

  TokenizeProgress totals{.files = int64_t(files.size())};
  for (const std::string& f : files) totals.bytes += int64_t(fs::file_size(f));
  Shared shared;
  auto work = [&] {
    for (int64_t i; (i = shared.next_file++) < totals.files;) {
      try {
        char name[32];
        std::snprintf(name, sizeof name, "%05lld%s", static_cast<long long>(i),
                      nn::data::kShardExtension);
        tokenize_file(files[size_t(i)], fs::path(o.out) / name, tokenizer, shared);
        ++shared.files_done;
      } catch (...) {
        const std::lock_guard lock(shared.failure_lock);
        if (!shared.failure) shared.failure = std::current_exception();
        shared.failed = true;
        shared.next_file = totals.files;  // the others stop after their file
      }
    }
  };
  const int threads = std::max(
      1, std::min<int>(o.threads > 0 ? o.threads : int(std::thread::hardware_concurrency()),
                       int(files.size())));
  auto report = [&] {
    totals.files_done = shared.files_done;
    totals.bytes_done = shared.bytes_done;
    totals.tokens = shared.tokens;
    if (o.progress) o.progress(totals);
  };
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back(work);
    for (auto last = std::chrono::steady_clock::now();
         shared.files_done < totals.files && !shared.failed;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (std::chrono::steady_clock::now() - last < std::chrono::milliseconds(500)) continue;
      last = std::chrono::steady_clock::now();
      report();
    }
  }
  if (shared.failure) std::rethrow_exception(shared.failure);
  report();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(tokenizer ? tokenizer->hash() : 0));
  return {
      .totals = totals,
      .tokenizer_hash = hash,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

std::string describe(const TokenizeProgress& p) {
  return formatted("tokenize: %lld/%lld files, %.1f/%.1f MB, %lld tokens",
                   static_cast<long long>(p.files_done), static_cast<long long>(p.files),
                   double(p.bytes_done) / 1e6, double(p.bytes) / 1e6,
                   static_cast<long long>(p.tokens));
}

std::string describe(const TokenizeSummary& s, const TokenizeOptions& o) {
  return formatted(
      "%s: %lld shards, %lld tokens of %.1f MB of text (tokenizer %s, hash %s) in %.1f s, "
      "%.1f MB/s",
      o.out.c_str(), static_cast<long long>(s.totals.files),
      static_cast<long long>(s.totals.tokens), double(s.totals.bytes) / 1e6,
      o.tokenizer.empty() ? "bytes" : o.tokenizer.c_str(), s.tokenizer_hash.c_str(), s.seconds,
      double(s.totals.bytes) / 1e6 / s.seconds);
}

}  // namespace dlf::train
