#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/nn/data/masking.h>

namespace dlf::nn::data {

namespace {
const int64_t kIgnore = CrossEntropyOptions{}.ignore_index;  // -100
}  // namespace

MaskedBatch mask_tokens(const Tensor& tokens, Generator& gen, int64_t mask_token, int64_t vocab,
                        double probability) {
  DLF_CHECK(tokens.dtype() == DType::i64 || tokens.dtype() == DType::i32,
            "mask_tokens: tokens must be integers, got ", dtype_name(tokens.dtype()));
  DLF_CHECK(vocab >= 2 && mask_token >= 0 && mask_token < vocab, "mask_tokens: mask token ",
            mask_token, " must be in [0, vocab) with vocab >= 2, got vocab ", vocab);
  DLF_CHECK(probability >= 0 && probability <= 1, "mask_tokens: probability ", probability,
            " is outside [0, 1]");
  const Tensor ids = tokens.to(DType::i64);
  const TensorOptions real{.dtype = DType::f64, .device = ids.device()};
  const TensorOptions index{.dtype = DType::i64, .device = ids.device()};
  auto constant = [](double value, TensorOptions options) { return full({}, value, options); };

  const Tensor chosen = lt(rand(ids.shape(), real, &gen), constant(probability, real));
  const Tensor action = rand(ids.shape(), real, &gen);  // < 0.8 mask, < 0.9 random, else keep
  Tensor random = randint(0, vocab - 1, ids.shape(), index, &gen);
  random = where(ge(random, constant(double(mask_token), index)), random + 1.0, random);
  const Tensor replaced =
      where(lt(action, constant(0.8, real)), constant(double(mask_token), index),
            where(lt(action, constant(0.9, real)), random, ids));
  return {.inputs = where(chosen, replaced, ids),
          .labels = where(chosen, ids, constant(double(kIgnore), index))};
}

}  // namespace dlf::nn::data
