#include "autograd/grad_cases.h"

using namespace dlf;
using test::check_close;
using test::check_error;

TEST_CASE("requires_grad propagates through ops and stops at detach and no_grad") {
  Tensor x = ones({2, 3}, {.dtype = DType::f64}).requires_grad_();
  CHECK(x.is_leaf());
  Tensor y = x.transpose(0, 1);
  CHECK(y.requires_grad());
  CHECK(!y.is_leaf());
  CHECK(!x.detach().requires_grad());
  CHECK(x.detach().storage() == x.storage());
  {
    autograd::NoGradGuard no_grad;
    CHECK(!x.view({6}).requires_grad());
    autograd::EnableGradGuard enable;
    CHECK(x.view({6}).requires_grad());
  }
  CHECK(!ones({2}).view({1, 2}).requires_grad());
  check_error([&] { y.requires_grad_(false); }, {"leaves", "permute"});
  check_error([] { ones({2}, {.dtype = DType::i64}).requires_grad_(); }, {"floating", "i64"});
}

TEST_CASE("backward through views reaches the leaf with the right layout") {
  Tensor x = zeros({2, 3}, {.dtype = DType::f64}).requires_grad_();
  Tensor y = x.transpose(0, 1).slice(0, 1, 3);  // [2, 2]: x[:, 1:3] transposed
  y.backward(from_vector<double>({1, 2, 3, 4}, {2, 2}));
  check_close(x.grad(), {0, 1, 3, 0, 2, 4}, {2, 3}, 0);
}

TEST_CASE("grad returns an input's gradient at every place it is asked for, as PyTorch does") {
  Tensor x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  Tensor w = from_vector<double>({4, 5, 6}, {3}).requires_grad_();
  const std::vector<Tensor> g = autograd::grad({sum(x * x * w)}, {x, w, x});
  REQUIRE(g.size() == 3);
  check_close(g[0], {8, 20, 36}, {3}, 0);  // 2 x w
  check_close(g[1], {1, 4, 9}, {3}, 0);
  check_close(g[2], {8, 20, 36}, {3}, 0);
}

TEST_CASE("gradients accumulate over backward calls, and a freed graph refuses a second run") {
  Tensor x = zeros({3}, {.dtype = DType::f64}).requires_grad_();
  Tensor y = x.view({1, 3}).expand({2, 3}) * 3.0;
  Tensor g = ones({2, 3}, {.dtype = DType::f64});
  y.backward(g, /*retain_graph=*/true);
  check_close(x.grad(), {6, 6, 6}, {3}, 0);
  y.backward(g);
  check_close(x.grad(), {12, 12, 12}, {3}, 0);
  // Views and scalings save no tensor: as in PyTorch, their nodes may run again.
  y.backward(g);
  check_close(x.grad(), {18, 18, 18}, {3}, 0);
  // A product saves its operands, which the first backward without retain_graph frees.
  Tensor z = x * x;
  z.sum().backward();
  check_error([&] { z.sum().backward(); }, {"retain_graph"});
}

TEST_CASE("backward refuses what it cannot do") {
  Tensor x = zeros({2}, {.dtype = DType::f64}).requires_grad_();
  check_error([&] { x.view({2}).backward(); }, {"one-element", "[2]"});
  check_error([&] { zeros({1}).backward(); }, {"does not require grad"});
  check_error([&] { x.view({2}).backward(ones({3}, {.dtype = DType::f64})); }, {"[3]", "[2]"});
  check_error([&] { x.copy_(ones({2}, {.dtype = DType::f64})); }, {"in-place", "copy_"});
}

TEST_CASE("tensor hooks rewrite gradients; grad-ready hooks see the final sum once") {
  Tensor x = zeros({2}, {.dtype = DType::f64}).requires_grad_();
  int ready_calls = 0;
  Tensor seen;
  x.register_grad_ready_hook([&](const Tensor& g) {
    ++ready_calls;
    seen = g;
  });
  Tensor a = x.view({1, 2});
  a.register_hook([](const Tensor& g) { return full(g.shape(), 5.0, {.dtype = DType::f64}); });
  // x reaches the output along two paths: the hooked view and a plain expand.
  Tensor y = autograd::grad({x.view({1, 2}).expand({3, 2})}, {x},
                            {ones({3, 2}, {.dtype = DType::f64})}, true)[0];
  check_close(y, {3, 3}, {2}, 0);
  CHECK(ready_calls == 0);  // grad() does not accumulate into leaves
  a.backward(ones({1, 2}, {.dtype = DType::f64}));
  CHECK(ready_calls == 1);
  check_close(seen, {5, 5}, {2}, 0);
  check_close(x.grad(), {5, 5}, {2}, 0);
}

TEST_CASE("saved tensors go when their node has run") {
  Allocator& cpu = allocator_for(kCPU);
  Tensor x = randn({1}, {.dtype = DType::f64}).requires_grad_();
  Tensor y = mul(x, randn({256, 256}, {.dtype = DType::f64}));  // the [256, 256] factor lives
  const int64_t saved = 256 * 256 * 8;                          // only as mul's saved input
  const int64_t before = cpu.stats().live_bytes;
  y.backward(ones_like(y));
  CHECK(cpu.stats().live_bytes <= before - saved + 64);
  CHECK(x.grad().shape() == Shape{1});
}

TEST_CASE("changing a saved tensor in place is caught at backward") {
  Tensor x = randn({3}, {.dtype = DType::f64}).requires_grad_();
  Tensor w = randn({3}, {.dtype = DType::f64});
  Tensor y = mul(x, w);
  w.copy_(zeros({3}, {.dtype = DType::f64}));
  check_error([&] { y.backward(ones_like(y)); }, {"mul", "modified in place", "[3]"});
}

TEST_CASE("apply_function: a custom forward and backward join the graph") {
  Tensor x = dlf::from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  auto twice = [](const dlf::Tensor& t) {
    return dlf::autograd::apply_function(
        "twice_and_square", {t},
        [](const dlf::autograd::Tensors& in) -> dlf::autograd::Tensors {
          return {in[0] * 2.0, in[0] * in[0]};
        },
        [&t](const dlf::autograd::Tensors& g) -> dlf::autograd::Tensors {
          return {g[0] * 2.0 + g[1] * t.detach() * 2.0};
        });
  };
  auto outs = twice(x);
  CHECK_FALSE(outs[0].is_leaf());
  // Only the first output is used: the second's gradient arrives as zeros.
  dlf::sum(outs[0] * 3.0).backward();
  dlf::test::check_close(x.grad(), {6, 6, 6}, {3});
  x.set_grad(Tensor());
  outs = twice(x);
  dlf::sum(outs[0] + outs[1]).backward();
  dlf::test::check_close(x.grad(), {4, 6, 8}, {3});  // 2 + 2x
  {
    dlf::autograd::NoGradGuard no_grad;
    CHECK_FALSE(twice(x)[0].requires_grad());
  }
}
