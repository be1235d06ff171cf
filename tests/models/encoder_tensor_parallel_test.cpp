// BERT, ViT and Llama with their blocks split over a tensor-parallel group: each rank's loss is one
// device's, each gradient is that rank's part of one device's gradient, and the shards gather
// back into the whole state they were cut from.
#include <dlf/models/bert.h>
#include <dlf/models/llama.h>
#include <dlf/models/vit.h>
#include <dlf/nn/data/masking.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/tensor_parallel.h>

#include <map>
#include <mutex>

#include "test_util.h"

using namespace dlf;

namespace {

// `loss_of(model)` on one device and on every rank of n-way tensor parallelism, from the same
// whole f64 state.
template <typename Model, typename Config, typename LossOf>
void check_tensor_parallel(const Config& config, const parallel::SplitRule& rule, int n,
                           LossOf loss_of) {
  manual_seed(5);
  Model whole(config);
  nn::NamedTensors initial;
  for (const auto& [name, t] : whole.state_dict()) initial.emplace_back(name, t.clone());
  const Tensor loss = loss_of(whole);
  loss.backward();
  std::map<std::string, Tensor> grads;
  for (const auto& [name, p] : whole.named_parameters()) grads[name] = p.grad();

  std::mutex mutex;
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](parallel::Communicator& tp) {
    Config split = config;
    split.linears = parallel::megatron_linears(tp);
    Model model(split);
    parallel::load_shards(model, initial, rule, tp);
    const Tensor rank_loss = loss_of(model);
    rank_loss.backward();
    const nn::NamedTensors gathered = parallel::gather_state_dict(model, rule, tp);
    // Optimizer state by parameter name, as checkpoints keep it: each slot is cut like its
    // parameter and gathers back whole.
    nn::NamedTensors state = {{"step", full({}, 3.0)}};
    for (const auto& [name, g] : grads) state.emplace_back(name + ".exp_avg", g);
    const nn::NamedTensors state_shards = parallel::shard_state(state, rule, tp);
    const nn::NamedTensors state_again = parallel::gather_state(state_shards, rule, tp);
    std::lock_guard lock(mutex);
    CAPTURE(n);
    CHECK(rank_loss.item<double>() == doctest::Approx(loss.item<double>()).epsilon(1e-12));
    int64_t split_count = 0;
    for (const auto& [name, p] : model.named_parameters()) {
      CAPTURE(name);
      split_count += rule(name) != parallel::Split::none;
      test::check_close(p.grad(), parallel::shard_of(rule(name), grads.at(name), tp), 1e-10, 1e-8);
    }
    CHECK(split_count > 0);
    REQUIRE(state_shards.size() == state.size());
    REQUIRE(state_again.size() == state.size());
    for (size_t i = 1; i < state.size(); ++i) {
      const std::string param = nn::optim::parameter_of_slot(state[i].first);
      CAPTURE(state[i].first);
      test::check_close(state_shards[i].second,
                        parallel::shard_of(rule(param), state[i].second, tp), 0, 0);
      test::check_close(state_again[i].second, state[i].second, 0, 0);
    }
    REQUIRE(gathered.size() == initial.size());
    for (size_t i = 0; i < gathered.size(); ++i) {
      CAPTURE(gathered[i].first);
      CHECK(gathered[i].first == initial[i].first);
      test::check_close(gathered[i].second, initial[i].second, 0, 0);
    }
  });
}

models::BertConfig small_bert() {
  return {.name = "small",
          .vocab = 32,
          .max_positions = 16,
          .layers = 2,
          .heads = 4,
          .dim = 16,
          .ffn = 32,
          .dtype = DType::f64};
}

models::ViTConfig small_vit() {
  return {.name = "small",
          .image = 8,
          .channels = 1,
          .patch = 4,
          .dim = 16,
          .depth = 2,
          .heads = 4,
          .classes = 5,
          .dtype = DType::f64};
}

}  // namespace

TEST_CASE("tensor-parallel BERT: tp = 2 and 4 give one device's loss and gradients") {
  Generator gen(3);
  const Tensor tokens = randint(1, 32, {3, 10}, {.dtype = DType::i64}, &gen);
  const nn::data::MaskedBatch batch = nn::data::mask_tokens(tokens, gen, 0, 32, 0.4);
  for (int n : {2, 4}) {
    check_tensor_parallel<models::BertForMaskedLM>(
        small_bert(), models::bert_tensor_parallel_split, n,
        [&](const models::BertForMaskedLM& m) { return m.loss(batch.inputs, batch.labels); });
  }
}

TEST_CASE("tensor-parallel ViT: tp = 2 and 4 give one device's loss and gradients") {
  Generator gen(4);
  const Tensor images = randn({3, 1, 8, 8}, {.dtype = DType::f64}, &gen);
  const Tensor labels = randint(0, 5, {3}, {.dtype = DType::i64}, &gen);
  for (int n : {2, 4}) {
    check_tensor_parallel<models::VisionTransformer>(
        small_vit(), models::vit_tensor_parallel_split, n,
        [&](const models::VisionTransformer& m) { return m.loss(images, labels); });
  }
}

TEST_CASE(
    "tensor-parallel Llama: tp = 2 (one kv head a rank) gives one device's loss and gradients") {
  Generator gen(5);
  const Tensor ids = randint(0, 32, {2, 6}, {.dtype = DType::i64}, &gen);
  const Tensor targets = randint(0, 32, {2, 6}, {.dtype = DType::i64}, &gen);
  const models::LlamaConfig config{.name = "small",
                                   .vocab = 32,
                                   .context = 8,
                                   .layers = 2,
                                   .heads = 4,
                                   .kv_heads = 2,
                                   .dim = 16,
                                   .ffn = 24,
                                   .dtype = DType::f64};
  check_tensor_parallel<models::Llama>(
      config, models::llama_tensor_parallel_split, 2,
      [&](const models::Llama& m) { return m.loss(ids, targets); });
}

TEST_CASE("tensor-parallel BERT and ViT refuse heads that do not split over the ranks") {
  auto with_ranks = [](int n, auto build) {
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n),
                        [&](parallel::Communicator& tp) { build(parallel::megatron_linears(tp)); });
  };
  test::check_error(
      [&] {
        with_ranks(3, [](nn::LinearMaker linears) {
          models::BertConfig c = small_bert();
          c.heads = 2;
          c.dim = 12;
          c.ffn = 24;
          c.linears = linears;
          models::BertForMaskedLM m(c);
        });
      },
      {"BERT: 2 heads do not split over the tensor-parallel ranks"});
  test::check_error(
      [&] {
        with_ranks(2, [](nn::LinearMaker linears) {
          models::ViTConfig c = models::vit_config("vit-tiny");
          c.linears = linears;
          models::VisionTransformer m(c);
        });
      },
      {"attention: 3 heads do not split over 2 tensor-parallel ranks (--tp must divide the "
       "heads)"});
}

TEST_CASE("a row-parallel Linear refuses an activation before the sum over the group") {
  test::check_error(
      [&] {
        parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 2),
                            [&](parallel::Communicator& tp) {
                              parallel::RowParallelLinear proj(4, 2, tp);
                              proj.forward(ones({1, 2}), Activation::relu);
                            });
      },
      {"RowParallelLinear: an activation must follow the sum over the group"});
}
