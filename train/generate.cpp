#include <dlf/train/generate.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/device/atomic_file.h>
#include <dlf/models/bert.h>
#include <dlf/models/ddpm.h>
#include <dlf/models/generate.h>
#include <dlf/models/registry.h>
#include <dlf/models/text_stream.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/data/png.h>
#include <dlf/parallel/launch.h>
#include <dlf/tokenizers/tokenizer.h>

#include <dlf/train/progress.h>
#include <dlf/train/rank_model.h>
#include <dlf/train/run.h>
#include <dlf/train/weights_file.h>

namespace dlf::train {
namespace {

// The model's tokens: the tokenizer's, else bytes (a vocabulary of 256) or ids (past the bytes).
struct TokenCodec {
  std::optional<tokenizers::Tokenizer> tokenizer;
  int64_t vocab;

  std::vector<int64_t> encode(const std::string& text) const {
    if (!tokenizer) return {text.begin(), text.end()};
    const std::vector<uint32_t> ids = tokenizer->encode(text, tokenizers::Specials::recognised);
    return {ids.begin(), ids.end()};
  }
  // A prompt as printed before its continuation.
  std::string shown(const std::string& prompt) const {
    if (tokenizer || vocab <= 256) return prompt;
    std::string ids;
    for (const int64_t id : encode(prompt)) {
      if (!ids.empty()) ids += ' ';
      ids += std::to_string(id);
    }
    return ids;
  }
  std::string text(int64_t id) const {
    if (tokenizer) {
      const bool end = tokenizer->end_of_text() == std::optional<uint32_t>(uint32_t(id));
      return end ? "" : std::string(tokenizer->token_bytes(uint32_t(id)));
    }
    if (vocab <= 256) return std::string(1, char(id));
    std::string spaced(1, ' ');
    return spaced += std::to_string(id);
  }
};

// The tokenizer `asked` (--tokenizer), else the run's; a dlf::Error when the run was trained
// with another one.
TokenCodec codec_for(const models::CausalLM& model, const RunConfig& run,
                     const std::string& asked) {
  TokenCodec codec{.tokenizer = {}, .vocab = model.vocab()};
  const std::string& name = asked.empty() ? run.tokenizer : asked;
  if (name.empty()) return codec;
  codec.tokenizer = tokenizers::Tokenizer::load(name);
  DLF_CHECK(run.tokenizer_hash.empty() || codec.tokenizer->hash_hex() == run.tokenizer_hash,
            "--tokenizer ", name, " (hash ", codec.tokenizer->hash_hex(),
            ") is not the tokenizer the checkpoint was trained with: ", run.tokenizer, " (hash ",
            run.tokenizer_hash, ")");
  // A model's vocabulary may be its tokenizer's padded (nanoGPT's 50304 for GPT-2's 50257).
  const auto have = int64_t(codec.tokenizer->vocab_size());
  DLF_CHECK(have <= model.vocab() && model.vocab() - have < 128, "--tokenizer ", name, " has ",
            have, " tokens, but ", model.model_name(), "'s vocabulary is ", model.vocab(),
            " (a model uses the tokenizer it was trained with)");
  return codec;
}

void continue_text(const nn::Checkpoint& ckpt, const RunConfig& run, const GenerateOptions& o,
                   const TextOut& out) {
  for (const std::string& prompt : o.prompts)
    DLF_CHECK(!prompt.empty(), "--prompt must not be empty");
  manual_seed(run.seed);
  const std::unique_ptr<nn::Module> built =
      models::family_of(run.model).build(run.model, {.vocab = run.vocab});
  auto* model = dynamic_cast<models::CausalLM*>(built.get());
  DLF_CHECK(model, run.model, " is not a causal language model: dlf generate cannot continue text");
  nn::restore_module(*model, ckpt);
  const TokenCodec codec = codec_for(*model, run, o.tokenizer);
  std::vector<std::vector<int64_t>> prompts;
  for (const std::string& prompt : o.prompts) prompts.push_back(codec.encode(prompt));
  // The first prompt's continuation is written as it comes, the others' after.
  out(codec.shown(o.prompts[0]));
  models::TextStream stream(
      int64_t(prompts.size()), [&](int64_t id) { return codec.text(id); }, o.stops,
      [&](int64_t row, std::string_view text) {
        if (row == 0) out(text);
      });
  Generator gen(o.seed);
  std::vector<int64_t> stop_tokens;
  if (codec.tokenizer && codec.tokenizer->end_of_text())
    stop_tokens.push_back(*codec.tokenizer->end_of_text());
  models::generate(
      *model, prompts,
      {.max_tokens = o.max_tokens,
       .sampling = {.temperature = o.temperature, .top_k = o.top_k, .top_p = o.top_p},
       .stop_tokens = stop_tokens,
       .vocab = codec.tokenizer ? int64_t(codec.tokenizer->vocab_size()) : 0,
       .kv_cache = !o.no_cache,
       .gen = &gen,
       .on_token = [&](int64_t row, int64_t token) { return stream.add(row, token); }});
  stream.finish();
  out("\n");
  for (size_t row = 1; row < prompts.size(); ++row)
    out(codec.shown(o.prompts[row]) + stream.text(int64_t(row)) + "\n");
}

// A byte as text: itself if printable, else an escape.
std::string shown(int64_t byte) {
  if (byte >= 0x20 && byte < 0x7f) return std::string(1, char(byte));
  char escaped[8];
  std::snprintf(escaped, sizeof escaped, "\\x%02lx", static_cast<long>(byte));
  return escaped;
}

// BERT's fill-mask (Hugging Face's pipeline): every "[MASK]" of the prompt is one byte to
// predict. Prints the prompt filled with the likeliest bytes, then each mask's top candidates.
void fill_masks(const nn::Checkpoint& ckpt, const RunConfig& run, const GenerateOptions& o,
                const TextOut& out) {
  static const std::string kMark = "[MASK]";
  DLF_CHECK(o.prompts.size() == 1, run.model, " fills one --prompt, not ", o.prompts.size());
  const std::string& prompt = o.prompts[0];
  std::vector<int64_t> ids, masks;
  for (size_t i = 0; i < prompt.size();) {
    if (prompt.compare(i, kMark.size(), kMark) == 0) {
      masks.push_back(int64_t(ids.size()));
      ids.push_back(models::kMaskToken);
      i += kMark.size();
    } else {
      ids.push_back(static_cast<unsigned char>(prompt[i++]));
    }
  }
  DLF_CHECK(!masks.empty(), "--prompt has no [MASK] for ", run.model,
            " to fill: e.g. --prompt \"The [MASK][MASK][MASK] sat\" (one [MASK] per byte)");
  models::BertForMaskedLM bert(models::bert_config(run.model));
  DLF_CHECK(int64_t(ids.size()) <= bert.config().max_positions, "--prompt is ", ids.size(),
            " bytes, more than ", run.model, "'s ", bert.config().max_positions, " positions");
  nn::restore_module(bert, ckpt);
  bert.eval();
  autograd::NoGradGuard no_grad;
  const Tensor probs = softmax(
      bert.forward(from_vector(ids, {1, int64_t(ids.size())})).select(0, 0).to(DType::f64), -1);
  const int64_t top = std::min<int64_t>(std::max<int64_t>(o.top_k, 1), 5);
  std::string filled;
  std::vector<std::string> lines;
  for (size_t m = 0; m < masks.size(); ++m) {
    std::vector<double> p = probs.select(0, masks[m]).to_vector<double>();
    p[models::kMaskToken] = 0;  // the mask itself is no answer
    std::string line = "  [MASK] " + std::to_string(m + 1) + ":";
    for (int64_t k = 0; k < top; ++k) {
      const auto best = int64_t(std::max_element(p.begin(), p.end()) - p.begin());
      char text[64];
      std::snprintf(text, sizeof text, "  '%s' %.3f", shown(best).c_str(), p[size_t(best)]);
      line += text;
      if (k == 0) ids[size_t(masks[m])] = best;
      p[size_t(best)] = -1;
    }
    lines.push_back(line);
  }
  for (int64_t b : ids) filled += char(b);
  out(filled + "\n");
  for (const std::string& line : lines) out(line + "\n");
}

void sample_images(const nn::Checkpoint& ckpt, const RunConfig& run, const GenerateOptions& o,
                   const TextOut& out) {
  DLF_CHECK(!o.out.empty(), "--out FILE.png: where to write the samples of ", run.model);
  check_writable(o.out, "--out");  // before sampling
  models::UNet unet(models::unet_config(run.model));
  nn::restore_module(unet, ckpt);
  Generator gen(o.seed);
  const int64_t steps = std::min<int64_t>(o.sampling_steps, models::DDPM().steps());
  PhaseProgress progress(true, "sampling " + std::to_string(o.samples) + " images", steps,
                         "denoising steps");
  const Tensor images =
      models::DDPM().sample(unet, o.samples, gen, o.sampling_steps,
                            [&](int64_t done, int64_t) { progress.update(done); });
  const auto columns = static_cast<int64_t>(std::ceil(std::sqrt(double(o.samples))));
  const int64_t height = images.size(2), width = images.size(3);
  const int64_t scale = nn::data::readable_png_scale(height, width);
  nn::data::write_png_grid(o.out, images, columns, scale);
  char said[1024];
  std::snprintf(said, sizeof said,
                "%s: %ld samples (%ld denoising steps) written to %s (each %ldx%ld image enlarged "
                "%ldx)\n",
                run.model.c_str(), static_cast<long>(o.samples),
                static_cast<long>(o.sampling_steps), o.out.c_str(), static_cast<long>(height),
                static_cast<long>(width), static_cast<long>(scale));
  out(said);
}

}  // namespace

void generate(const GenerateOptions& o, const TextOut& out) {
  const std::string& path = o.weights.empty() ? o.checkpoint : o.weights;
  const Weights weights = read_weights(path);
  const RunConfig run = run_for_weights(weights, path, o.model);
  const nn::Checkpoint ckpt{.model = weights.tensors};  // the family's model checks them
  switch (models::family_of(run.model).generates) {
    case models::Generates::text:
      return continue_text(ckpt, run, o, out);
    case models::Generates::filled_masks:
      return fill_masks(ckpt, run, o, out);
    case models::Generates::images:
      return sample_images(ckpt, run, o, out);
    case models::Generates::nothing:
      throw Error(run.model +
                  " classifies images and generates nothing: evaluate it with dlf eval (GPT "
                  "continues text, BERT fills masks, UNet samples images)");
  }
}

CheckpointEvaluation evaluate_checkpoint(const EvalOptions& o) {
  const nn::Checkpoint ckpt = nn::load_checkpoint(o.checkpoint);
  RunConfig run = run_config_from_json(ckpt.config);
  const models::Family& family = models::family_of(run.model);
  if (!o.data.empty()) {
    DLF_CHECK(family.unit == "tok", "--data: ", run.model,
              " evaluates on Fashion-MNIST's test set, not text");
    run.data = o.data;
  }
  const models::TrainData data = load_data(run);
  // The whole test set for the classifier, else 16 batches.
  const int64_t batches = o.batches > 0 ? o.batches : (family.eval_batches == 0 ? 0 : 16);
  models::Evaluation e;
  // The training step's model on one device evaluates exactly as training does.
  parallel::run_ranks({kCPU}, [&](parallel::Communicator& world) {
    parallel::Mesh mesh(world, {});
    const std::unique_ptr<RankModel> model =
        make_rank_model(family, run.model, mesh, ckpt.model, {}, run.vocab);
    const std::unique_ptr<models::Task> task =
        family.task({.model = run.model,
                     .data = data,
                     .batch = run.batch,
                     .seq = run.seq,
                     .seed = run.seed,
                     .eval_batches = batches,
                     .eval_progress = evaluation_progress()});
    e = model->evaluate(*task);
  });
  return {.run = run, .value = e, .batches = batches};
}

}  // namespace dlf::train
