// Masked-language-model batches, as Hugging Face's DataCollatorForLanguageModeling makes them
// (nn::accuracy scores a model's predictions on the masked positions).
#pragma once
#include <dlf/core/random.h>
#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// The model's input and its labels: the original token where one was chosen for prediction,
/// -100 (cross_entropy's ignore_index) elsewhere.
struct MaskedBatch {
  /// the masked ids, and the original ids where masked (-100 elsewhere)
  ///@{
  Tensor inputs, labels;
  ///@}
};

/// Chooses each position of the integer `tokens` with `probability`; of the chosen, 80% become
/// `mask_token`, 10% a random token other than `mask_token` (uniform over the other vocab - 1
/// ids) and 10% stay as they are. Both outputs are i64 of the tokens' shape; the draws come from
/// `gen` alone, so the same generator state gives the same batch.
MaskedBatch mask_tokens(const Tensor& tokens, Generator& gen, int64_t mask_token, int64_t vocab,
                        double probability = 0.15);

}  // namespace dlf::nn::data
