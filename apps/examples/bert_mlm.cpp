// Masked-language modelling: trains bert-tiny on the text of Debian's fortunes, byte by byte.
// Each step hides 15% of the bytes of a batch (mostly behind the [MASK] byte 0) and the model
// learns to restore them from both sides. Prints the loss and the accuracy on the hidden bytes.
//
//   example_bert_mlm [steps]      (default 150, about 30 s on 2 threads)
#include <dlf/autograd/grad_mode.h>
#include <dlf/models/bert.h>
#include <dlf/nn/data/masking.h>
#include <dlf/nn/data/text_dataset.h>
#include <dlf/nn/metrics.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace dlf;

namespace {

constexpr int64_t kBatch = 16, kSeq = 128, kVocab = 256;
constexpr uint64_t kSeed = 0;

struct Score {
  double loss, accuracy;
};

// Loss and masked-byte accuracy of one masked batch, without autograd.
Score score(const models::BertForMaskedLM& bert, const nn::data::MaskedBatch& batch) {
  autograd::NoGradGuard no_grad;
  return {bert.loss(batch.inputs, batch.labels).item<double>(),
          nn::accuracy(bert.forward(batch.inputs), batch.labels)};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int64_t steps = argc > 1 ? std::stoll(argv[1]) : 150;
    const nn::data::TextDataset data(nn::data::default_corpus_paths());
    Generator gen(kSeed);
    models::BertForMaskedLM bert(models::bert_config("bert-tiny"), &gen);
    std::printf("bert-tiny: %lld parameters; %lld train bytes; batch %lld x %lld, %lld steps\n",
                (long long)bert.num_parameters(), (long long)data.size(nn::data::Split::train),
                (long long)kBatch, (long long)kSeq, (long long)steps);

    const double lr = 2e-3;
    nn::optim::AdamW opt(nn::optim::decay_groups(bert.named_parameters(), 0.01),
                         {.lr = lr, .beta2 = 0.98});
    nn::optim::WarmupCosineLR schedule(opt, steps / 10, steps);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < steps; ++step) {
      const Tensor text = data.sample(nn::data::Split::train, step, kBatch, kSeq, kSeed).x;
      const nn::data::MaskedBatch batch =
          nn::data::mask_tokens(text, gen, models::kMaskToken, kVocab);
      if (step % 25 == 0 || step == steps - 1) {  // on this batch, before learning from it
        const Score s = score(bert, batch);
        std::printf("step %4lld  loss %.3f  masked accuracy %.3f\n", (long long)step, s.loss,
                    s.accuracy);
      }
      opt.zero_grad();
      bert.loss(batch.inputs, batch.labels).backward();
      opt.step();
      schedule.step();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("trained in %.1f s (%.0f tokens/s)\n", seconds,
                double(steps * kBatch * kSeq) / seconds);

    // Validation: consecutive windows of the held-out text, masked by a generator of their own.
    Generator val_gen(kSeed + 1);
    double loss = 0, accuracy = 0;
    constexpr int kValBatches = 8;
    for (int i = 0; i < kValBatches; ++i) {
      const Tensor text = data.window(nn::data::Split::val, i, kBatch, kSeq).x;
      const Score s = score(bert, nn::data::mask_tokens(text, val_gen, models::kMaskToken, kVocab));
      loss += s.loss / kValBatches;
      accuracy += s.accuracy / kValBatches;
    }
    std::printf("validation: loss %.3f  masked accuracy %.3f  (ln 256 = 5.545)\n", loss, accuracy);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
