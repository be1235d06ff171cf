// `dlf train --model bert-*`: masked-language modelling on text (15 % of the bytes chosen, 80 %
// of those masked, 10 % replaced, 10 % kept), data-parallel; the score is masked-byte accuracy.
#pragma once
#include <memory>

#include <dlf/nn/data/text_dataset.h>

#include "task.h"

namespace dlf::app {

/// Bytes per sequence when the run gives none (the peer's, and BERT pre-training's first phase).
constexpr int64_t kBertSequence = 128;
/// A BERT run's bytes per sequence: `seq`, or kBertSequence when it gives none (0).
constexpr int64_t bert_sequence(int64_t seq) { return seq > 0 ? seq : kBertSequence; }

std::unique_ptr<RankTask> make_bert_task(const TaskSetup& setup, const nn::data::TextDataset& data);

}  // namespace dlf::app
