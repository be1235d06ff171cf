// The two kinds of a rank's part of a model, behind make_rank_model().
#pragma once
#include <dlf/train/rank_model.h>

namespace dlf::train {

/// A replica family's whole model or tensor-parallel shard on one rank.
std::unique_ptr<RankModel> make_replica_model(const models::Family& family,
                                              const std::string& model, parallel::Mesh& mesh,
                                              const nn::NamedTensors& whole,
                                              const PartOptions& options, int64_t vocab);

}  // namespace dlf::train
