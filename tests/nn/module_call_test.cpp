// Call syntax on modules (fc(x)), children held by value, and libtorch's module holders.
#include "test_util.h"

#include <type_traits>

#include <dlf/nn/activation.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/conv.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>
#include <dlf/nn/transformer.h>

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

constexpr nn::LinearOptions kF64{.dtype = DType::f64};

// Children held by value, as a PyTorch module holds them (self.fc1 = nn.Linear(3, 4)).
struct ValueNet : nn::Module, nn::Callable<ValueNet> {
  nn::Linear fc1{3, 4, kF64}, fc2{4, 2, kF64};
  ValueNet() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) const { return fc2(fc1(x).relu()); }
};

// libtorch's way: a holder member set in the constructor, a forward that is not const, and
// DLF_MODULE naming the holder of TwoLayerImpl.
class TwoLayerImpl : public nn::Module {
 public:
  TwoLayerImpl(int64_t in, int64_t out)
      : fc(register_module("fc", nn::ModuleHolder<nn::Linear>(in, out, kF64))) {}
  Tensor forward(const Tensor& x) { return fc(x).tanh(); }
  nn::ModuleHolder<nn::Linear> fc{nullptr};
};
DLF_MODULE(TwoLayer);

// A layer that overrides Linear's forward, as the tensor-parallel ones do.
struct DoubledLinear : nn::Linear {
  using nn::Linear::Linear;
  Tensor forward(const Tensor& x, Activation activation) const override {
    return nn::Linear::forward(x, activation) * 2.0;
  }
};

std::vector<std::string> names(const nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [name, t] : list) out.push_back(name);
  return out;
}

// x W^T + b, written out.
Tensor affine(const nn::Linear& fc, const Tensor& x) {
  return x.matmul(fc.weight.transpose(0, 1)) + fc.bias;
}

}  // namespace

TEST_CASE("fc(x) is fc.forward(x) for every layer of nn/, and for a module's own forward") {
  manual_seed(5);
  const Tensor x = randn({2, 3}, {.dtype = DType::f64});
  ValueNet net;
  CHECK(names(net.named_parameters()) ==
        std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  check_close(net(x), affine(net.fc2, affine(net.fc1, x).relu()), 1e-12, 1e-12);
  check_close(net.fc1(x), affine(net.fc1, x), 1e-12, 1e-12);
  // Gradients reach the children held by value.
  net(x).sum().backward();
  for (const Tensor& p : net.parameters()) CHECK(p.grad().defined());

  // Extra arguments go to forward; an override is what the call runs.
  check_close(net.fc1(x, Activation::relu), affine(net.fc1, x).relu(), 1e-12, 1e-12);
  DoubledLinear doubled(3, 2, kF64);
  check_close(doubled(x), affine(doubled, x) * 2.0, 1e-12, 1e-12);

  static_assert(std::is_invocable_r_v<Tensor, const nn::ReLU&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::GELU&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::SiLU&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Tanh&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Sigmoid&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Flatten&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Dropout&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Conv2d&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Linear&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Embedding&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::LayerNorm&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::GroupNorm&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::MLP&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::SelfAttention&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::TransformerBlock&, const Tensor&>);
  static_assert(std::is_invocable_r_v<Tensor, const nn::Sequential&, const Tensor&>);
  const nn::TransformerBlock block({.dim = 8, .heads = 2});
  const Tensor tokens = randn({1, 3, 8});
  CHECK(block(tokens).to_vector<float>() == block.forward(tokens).to_vector<float>());
}

TEST_CASE("ModuleHolder and DLF_MODULE: shared handles with call syntax, as libtorch's") {
  manual_seed(6);
  const Tensor x = randn({2, 3}, {.dtype = DType::f64});
  TwoLayer net(3, 2);
  CHECK(names(net->named_parameters()) == std::vector<std::string>{"fc.weight", "fc.bias"});
  check_close(net(x), affine(*net->fc, x).tanh(), 1e-12, 1e-12);
  const TwoLayer copy = net;  // the same module
  CHECK(copy->fc->weight.is_same(net->fc->weight));
  CHECK(copy.ptr() == net.ptr());

  // Into a Sequential, and out of make_module's shared pointer.
  nn::Sequential seq;
  seq.push_back(nn::ModuleHolder<nn::Linear>(3, 4, kF64)).add<nn::ReLU>();
  const auto& first = static_cast<const nn::Linear&>(*seq.children()[0].second);
  check_close(seq(x), affine(first, x).relu(), 1e-12, 1e-12);
  const nn::ModuleHolder<nn::Linear> held(std::make_shared<nn::Linear>(3, 1, kF64));
  check_close(held(x), affine(*held, x), 1e-12, 1e-12);

  const nn::ModuleHolder<nn::ReLU> relu;  // M's default constructor
  CHECK(relu(x - 0.5).to_vector<double>() == (x - 0.5).relu().to_vector<double>());

  nn::ModuleHolder<nn::Linear> empty{nullptr};
  CHECK(empty.is_empty());
  check_error([&] { empty(x); }, {"empty module holder", "assign it a module"});
  empty = held;
  CHECK(empty->weight.is_same(held->weight));
}
