#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/models/causal_lm.h>
#include <dlf/models/generate.h>

#include <algorithm>
#include <optional>

#include "models/sampling.h"

namespace dlf::models {
namespace {

using Rows = std::vector<std::vector<int64_t>>;

// The next-token logits [B, vocab] (f64) of `rows` right-padded into one [B, T] forward (through
// `cache` when not null): row b's at its last real position. Causal attention keeps the padding
// out of every real position, so each row's logits are its own.
Tensor last_logits(const CausalLM& model, Device device, const Rows& rows, nn::KVCache* cache) {
  const auto B = static_cast<int64_t>(rows.size());
  size_t T = 0;
  for (const auto& row : rows) T = std::max(T, row.size());
  std::vector<int64_t> ids(size_t(B) * T, 0);
  for (size_t b = 0; b < rows.size(); ++b) std::copy(rows[b].begin(), rows[b].end(), &ids[b * T]);
  const Tensor h = model.hidden(from_vector(ids, {B, int64_t(T)}).to(device), cache);
  const bool one_length =
      std::all_of(rows.begin(), rows.end(), [&](const auto& row) { return row.size() == T; });
  Tensor last;
  if (one_length) {
    last = h.select(1, -1);
  } else {
    std::vector<Tensor> picked;
    for (int64_t b = 0; b < B; ++b)
      picked.push_back(h.select(0, b).narrow(0, int64_t(rows[size_t(b)].size()) - 1, 1));
    last = cat(picked, 0);
  }
  return model.head(last).to(DType::f64).to(kCPU).contiguous();
}

// The last `n` tokens of `row` (all of it when shorter).
std::vector<int64_t> last_tokens(const std::vector<int64_t>& row, int64_t n) {
  return {row.end() - std::min<int64_t>(n, int64_t(row.size())), row.end()};
}

void check_prompts(const CausalLM& model, const Rows& prompts, const GenerateOptions& o) {
  const std::string& name = model.model_name();
  const int64_t vocab = model.vocab(), context = model.context();
  DLF_CHECK(!prompts.empty(), "generate: no prompts");
  DLF_CHECK(o.max_tokens >= 0, "generate: max_tokens must be >= 0, got ", o.max_tokens);
  DLF_CHECK(o.vocab >= 0 && o.vocab <= vocab, "generate: vocab ", o.vocab, " is past ", name, "'s ",
            vocab, " tokens");
  for (size_t b = 0; b < prompts.size(); ++b) {
    const auto n = int64_t(prompts[b].size());
    DLF_CHECK(n >= 1 && n <= context, "generate: prompt ", b + 1, " is ", n, " tokens, outside 1..",
              context, " (", name, "'s context)");
    for (const int64_t id : prompts[b])
      DLF_CHECK(id >= 0 && id < vocab, "generate: prompt ", b + 1, " holds token ", id,
                ", outside ", name, "'s vocabulary 0..", vocab - 1);
  }
}

}  // namespace

Rows generate(CausalLM& model, const Rows& prompts, const GenerateOptions& o) {
  check_prompts(model, prompts, o);
  const int64_t context = model.context(), model_vocab = model.vocab();
  const Device device = model.parameters().front().device();
  autograd::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  Generator& gen = o.gen ? *o.gen : default_generator();
  const auto B = static_cast<int64_t>(prompts.size());
  const int64_t vocab = o.vocab > 0 ? o.vocab : model_vocab;
  Rows history = prompts;
  Rows made(static_cast<size_t>(B));
  std::vector<bool> active(size_t(B), true);
  auto windows = [&] {
    Rows w;
    for (const auto& row : history) w.push_back(last_tokens(row, context));
    return w;
  };

  std::optional<nn::KVCache> cache;
  std::vector<int64_t> lengths;  // each row's positions in the cache
  Tensor logits;
  if (o.kv_cache) {
    cache.emplace(model.make_cache(B));
    logits = last_logits(model, device, prompts, &*cache);
    for (const auto& p : prompts) lengths.push_back(int64_t(p.size()));
  } else {
    logits = last_logits(model, device, windows(), nullptr);
  }
  for (int64_t step = 0; step < o.max_tokens; ++step) {
    if (o.on_logits) o.on_logits(logits);
    for (int64_t b = 0; b < B; ++b) {
      if (!active[size_t(b)]) continue;
      const double* row = logits.data<double>() + b * model_vocab;
      const int64_t token = sample_token({row, row + vocab}, o.sampling, gen);
      history[size_t(b)].push_back(token);
      made[size_t(b)].push_back(token);
      const bool stop =
          std::find(o.stop_tokens.begin(), o.stop_tokens.end(), token) != o.stop_tokens.end();
      if ((o.on_token && !o.on_token(b, token)) || stop) active[size_t(b)] = false;
    }
    if (step + 1 == o.max_tokens || std::none_of(active.begin(), active.end(), std::identity{}))
      break;
    if (!o.kv_cache) {
      logits = last_logits(model, device, windows(), nullptr);
      continue;
    }
    Rows next;
    for (int64_t b = 0; b < B; ++b) {
      int64_t& n = lengths[size_t(b)];
      if (!active[size_t(b)]) {
        n = 0;  // a finished row's token goes to position 0, read by nothing
      } else if (n == context) {
        // Context shift: the row's last context/2 tokens before the new one, read again from
        // position 0.
        const std::vector<int64_t>& row = history[size_t(b)];
        const std::vector<int64_t> kept(row.end() - 1 - context / 2, row.end() - 1);
        n = int64_t(kept.size());
        if (!kept.empty()) {
          nn::KVCache shifted = model.make_cache(1);
          last_logits(model, device, {kept}, &shifted);
          cache->copy_row(b, shifted, 0);
        }
      }
      next.push_back({history[size_t(b)].back()});
    }
    cache->set_lengths(lengths);
    logits = last_logits(model, device, next, &*cache);
    for (int64_t b = 0; b < B; ++b) lengths[size_t(b)] += active[size_t(b)] ? 1 : 0;
  }
  model.train(was_training);
  return made;
}

}  // namespace dlf::models
