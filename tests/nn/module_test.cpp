#include "test_util.h"

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
  nn::NamedTensors missing(state.begin() + 1, state.end());
  check_error([&] { c.load_state_dict(missing); }, {"missing", "head"});
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
