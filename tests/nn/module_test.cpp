#include "test_util.h"

#include <dlf/nn/activation.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/conv.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/module.h>

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

// A two-level module with a tied weight, a buffer and a child, as a model would be built.
struct Block : nn::Module {
  Tensor weight = register_parameter("weight", ones({2, 3}));
  Tensor bias = register_parameter("bias", zeros({2}));
  Tensor steps = register_buffer("steps", zeros({1}, {.dtype = DType::i64}));
};

struct Net : nn::Module {
  std::shared_ptr<Block> first = register_module("h.0", std::make_shared<Block>());
  std::shared_ptr<Block> second = register_module("h.1", std::make_shared<Block>());
  Tensor head = register_parameter("head", first->weight);  // tied
};

std::vector<std::string> names(const nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [name, t] : list) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("parameters and state_dict use dotted names; tied tensors count once") {
  Net net;
  CHECK(names(net.named_parameters()) ==
        std::vector<std::string>{"head", "h.0.bias", "h.1.weight",
                                 "h.1.bias"});  // own first, as PyTorch
  CHECK(names(net.state_dict()) == std::vector<std::string>{"head", "h.0.weight", "h.0.bias",
                                                            "h.0.steps", "h.1.weight", "h.1.bias",
                                                            "h.1.steps"});
  CHECK(names(net.named_buffers()) == std::vector<std::string>{"h.0.steps", "h.1.steps"});
  CHECK(net.num_parameters() == 16);
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
}

TEST_CASE("load_state_dict copies values and refuses mismatches without changing anything") {
  Net a, b;
  nn::NamedTensors state = a.state_dict();
  for (auto& [name, t] : state) t = full(t.shape(), 3.0, {.dtype = t.dtype()});
  b.load_state_dict(state);
  check_close(b.second->bias, {3, 3}, {2});
  check_close(b.head, std::vector<double>(6, 3.0), {2, 3});

  Net c;
  nn::NamedTensors missing = state;
  missing.erase(missing.begin() + 5);  // h.1.bias
  check_error([&] { c.load_state_dict(missing); }, {"missing", "h.1.bias"});
  nn::NamedTensors wrong = state;
  wrong[2].second = zeros({5});
  check_error([&] { c.load_state_dict(wrong); }, {"h.0.bias", "[5]", "[2]"});
  nn::NamedTensors extra = state;
  extra.emplace_back("h.2.weight", zeros({1}));
  check_error([&] { c.load_state_dict(extra); }, {"unexpected", "h.2.weight"});
  check_close(c.first->weight, std::vector<double>(6, 1.0), {2, 3});  // untouched
}

TEST_CASE("to(dtype) converts in place, train/eval recurse, zero_grad drops gradients") {
  Net net;
  Tensor w = net.first->weight;
  net.to(DType::f64);
  CHECK(w.dtype() == DType::f64);  // the handle held elsewhere sees the change
  CHECK(net.head.dtype() == DType::f64);
  CHECK(net.first->steps.dtype() == DType::i64);  // integer buffers keep their dtype
  CHECK(w.requires_grad());
  net.eval();
  CHECK(!net.second->is_training());
  net.train();
  CHECK(net.second->is_training());
  sum(net.first->weight * 2.0).backward();
  CHECK(w.grad().defined());
  net.zero_grad();
  CHECK(!w.grad().defined());
}

TEST_CASE("load_state_dict: a tied tensor loads from either name; non-strict reports the rest") {
  Net a;
  nn::NamedTensors params = a.named_parameters();  // lists the tied weight once, as "head"
  for (auto& [name, t] : params) t = full(t.shape(), 2.0, {.dtype = t.dtype()});
  nn::NamedTensors without_head = a.state_dict();
  without_head.erase(without_head.begin());  // "head"; its tensor is also "h.0.weight"
  Net b;
  b.load_state_dict(without_head);  // strict, yet nothing is missing: head is h.0.weight
  Net c;
  const nn::Module::LoadResult r = c.load_state_dict(
      {{"h.1.bias", full({2}, 5.0)}, {"decoder.weight", zeros({3})}}, /*strict=*/false);
  check_close(c.second->bias, {5, 5}, {2});
  CHECK(r.unexpected == std::vector<std::string>{"decoder.weight"});
  CHECK(r.missing == std::vector<std::string>{"head", "h.0.weight", "h.0.bias", "h.0.steps",
                                              "h.1.weight", "h.1.steps"});
  check_error([&] { c.load_state_dict({{"h.1.bias", zeros({7})}}, false); }, {"h.1.bias", "[7]"});
}

namespace {
struct MLP : nn::Module {
  std::shared_ptr<nn::Sequential> net = make_module<nn::Sequential>("net");
  MLP() { net->add<nn::Flatten>().add<nn::Linear>(4, 8).add<nn::ReLU>().add<nn::Linear>(8, 2); }
  Tensor forward(const Tensor& x) const { return net->forward(x); }
};
}  // namespace

TEST_CASE("Sequential applies its modules in order; a module prints as PyTorch's repr") {
  manual_seed(3);
  MLP mlp;
  const Tensor x = randn({5, 2, 2});
  nn::Sequential& net = *mlp.net;
  const auto& fc1 = static_cast<const nn::Linear&>(*net.children()[1].second);
  const auto& fc2 = static_cast<const nn::Linear&>(*net.children()[3].second);
  check_close(mlp.forward(x), fc2.forward(relu(fc1.forward(x.view({5, 4})))));
  CHECK(names(mlp.state_dict()) ==
        std::vector<std::string>{"net.1.weight", "net.1.bias", "net.3.weight", "net.3.bias"});
  CHECK(mlp.str() ==
        "MLP(\n"
        "  (net): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Linear(in_features=4, out_features=8, bias=true)\n"
        "    (2): ReLU()\n"
        "    (3): Linear(in_features=8, out_features=2, bias=true)\n"
        "  )\n"
        ")");
  // A module without settings of its own shows its tensors' shapes.
  CHECK(Block().str() ==
        "Block(\n"
        "  (weight): Parameter f32[2, 3]\n"
        "  (bias): Parameter f32[2]\n"
        "  (steps): Buffer i64[1]\n"
        ")");
  nn::Sequential pair(std::make_shared<nn::Conv2d>(1, 8, 3), std::make_shared<nn::SiLU>());
  INFO(pair.str());
  CHECK(pair.str().find("(0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1))") !=
        std::string::npos);
  CHECK(pair.forward(randn({2, 1, 5, 5})).shape() == Shape{2, 8, 3, 3});
}
