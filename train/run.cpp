#include <dlf/core/random.h>
#include <dlf/device/device.h>
#include <dlf/models/causal_lm.h>
#include <dlf/tokenizers/tokenizer.h>
#include <dlf/train/run.h>

#include <algorithm>

namespace dlf::train {
namespace {

// The run's model, initialised from its seed, on the default device.
std::unique_ptr<nn::Module> build(const RunConfig& run) {
  manual_seed(run.seed);
  return models::family_of(run.model).build(run.model, {.vocab = run.vocab});
}

// The ids a model of `run` embeds; 0 for a model that predicts no tokens.
int64_t model_vocab(const RunConfig& run) {
  DefaultDeviceGuard meta(kMeta);
  const std::unique_ptr<nn::Module> model = build(run);
  const auto* lm = dynamic_cast<const models::CausalLM*>(model.get());
  return lm ? lm->vocab() : 0;
}

std::string tokenizer_named(const std::string& name, const std::string& hash) {
  return name.empty() ? std::string("bytes (no --tokenizer)")
                      : "the tokenizer " + name + " (hash " + hash + ")";
}

}  // namespace

void record_tokenizer(RunConfig& run) {
  if (run.tokenizer.empty()) return;
  const tokenizers::Tokenizer tokenizer = tokenizers::Tokenizer::load(run.tokenizer);
  run.tokenizer_hash = tokenizer.hash_hex();
  run.vocab = tokenizer.vocab_size();  // the model's vocabulary follows its tokenizer
  DLF_CHECK(model_vocab(run) == run.vocab, "--tokenizer: ", run.model, " does not predict tokens");
}

void apply_recipe(RunConfig& run, const std::set<std::string>& given) {
  const models::Recipe& r = models::family_of(run.model).recipe;
  if (!given.contains("--weight-decay")) run.weight_decay = r.weight_decay;
  if (!given.contains("--warmup") && r.warmup > 0)
    run.warmup = std::min<int64_t>(r.warmup, run.steps - 1);
  if (!given.contains("--min-lr")) {
    if (r.min_lr_share >= 0) run.min_lr = r.min_lr_share * run.lr;
    if (run.min_lr > run.lr) run.min_lr = run.lr / 10;
  }
  DLF_CHECK(run.min_lr <= run.lr, "--min-lr ", run.min_lr, " is above --lr ", run.lr,
            ": the cosine decays from --lr down to --min-lr");
}

models::TrainData load_data(const RunConfig& run) {
  models::TrainData data = models::family_of(run.model).load_data(run.data, run.val_fraction);
  if (!data.tokens) {
    DLF_CHECK(run.tokenizer.empty(), "--tokenizer ", run.tokenizer,
              " trains on token shards: write them with dlf tokenize --tokenizer ", run.tokenizer,
              " --data TEXT --out SHARDS and pass --data SHARDS");
    return data;
  }
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(data.tokens->tokenizer_hash()));
  const std::string shards = data.tokens->tokenizer_hash() == 0 ? "" : hash;
  DLF_CHECK(shards == run.tokenizer_hash, "the token shards in ", run.data[0], " were made by ",
            shards.empty() ? "bytes (dlf tokenize without --tokenizer)"
                           : std::string("a tokenizer of hash ") + hash,
            ", but the run's ids are ", tokenizer_named(run.tokenizer, run.tokenizer_hash),
            ": train with the shards' tokenizer, or tokenize the text again with the run's");
  const int64_t vocab = model_vocab(run);
  DLF_CHECK(int64_t(data.tokens->vocab()) <= vocab, "the token shards in ", run.data[0],
            " hold ids up to ", data.tokens->vocab(), ", more than ", run.model,
            "'s vocabulary of ", vocab);
  return data;
}

int64_t default_eval_every(const RunConfig& run, const models::TrainData& data) {
  if (models::family_of(run.model).recipe.eval_every >= 0)
    return models::family_of(run.model).recipe.eval_every;
  return data.train->images.size(0) / run.batch;  // an epoch
}

nn::NamedTensors initial_state(const RunConfig& run) { return build(run)->state_dict(); }

nn::NamedTensors state_from_weights(const RunConfig& run, const nn::NamedTensors& weights) {
  std::unique_ptr<nn::Module> model;
  {
    DefaultDeviceGuard meta(kMeta);  // shapes only: the weights give the values
    model = build(run);
  }
  model->to_empty(kCPU);
  try {
    model->load_state_dict(weights);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the weights are not " + run.model + "'s)");
  }
  return model->state_dict();
}

int64_t parameter_count(const std::string& model, int64_t vocab) {
  DefaultDeviceGuard meta(kMeta);
  return models::family_of(model).build(model, {.vocab = vocab})->num_parameters();
}

}  // namespace dlf::train
