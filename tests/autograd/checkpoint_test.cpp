#include "test_util.h"

#include <dlf/autograd/checkpoint.h>
#include <dlf/device/allocator.h>

using namespace dlf;
using dlf::test::check_error;

namespace {

// Two layers with a nonlinearity and dropout: the saved tensors are x, h, its tanh and masks.
struct Net {
  Tensor w1 = randn({16, 16}, {.dtype = DType::f64}).requires_grad_();
  Tensor w2 = randn({16, 16}, {.dtype = DType::f64}).requires_grad_();
  double p = 0;
  Tensor block(const Tensor& x) const {
    const Tensor h = tanh(matmul(x, w1));
    return dropout(h * h, p, true) + matmul(h, w2).sin();
  }
};

struct Grads {
  std::vector<double> x, w1, w2;
  bool operator==(const Grads&) const = default;
};

Grads grads_of(const Net& net, const Tensor& x, bool recompute, int blocks = 2) {
  net.w1.set_grad(Tensor());
  net.w2.set_grad(Tensor());
  Tensor in = x.detach().requires_grad_();
  Tensor y = in;
  for (int b = 0; b < blocks; ++b) {
    y = recompute ? autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, y)
                  : net.block(y);
  }
  y.sum().backward();
  return {in.grad().to_vector<double>(), net.w1.grad().to_vector<double>(),
          net.w2.grad().to_vector<double>()};
}

}  // namespace

TEST_CASE("checkpoint: the gradients of the plain forward, bit for bit, dropout included") {
  manual_seed(3);
  Net net;
  net.p = 0.3;
  const Tensor x = randn({8, 16}, {.dtype = DType::f64});
  manual_seed(11);
  const Grads plain = grads_of(net, x, false);
  const uint64_t offset_plain = default_generator().offset();
  manual_seed(11);
  const Grads recomputed = grads_of(net, x, true);
  CHECK(recomputed == plain);
  // The recompute put the generator back: the stream goes on as after the plain run.
  CHECK(default_generator().offset() == offset_plain);
}

TEST_CASE("checkpoint: a checkpointed forward keeps its inputs and output, not its activations") {
  manual_seed(4);
  Net net;
  const Tensor x = randn({256, 16}, {.dtype = DType::f64}).requires_grad_();
  Allocator& memory = allocator_for(kCPU);
  auto forward_bytes = [&](bool recompute) {
    const int64_t before = memory.stats().live_bytes;
    const Tensor y = recompute
                         ? autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, x)
                         : net.block(x);
    return memory.stats().live_bytes - before;
  };
  const int64_t plain = forward_bytes(false), recomputed = forward_bytes(true);
  const int64_t one = 256 * 16 * 8;  // one [256, 16] f64 activation
  CHECK(recomputed == one);          // the output alone
  CHECK(plain == 3 * one);           // and tanh(x w1), x w1 w2 kept for backward
}

TEST_CASE("checkpoint: nested, twice with retain_graph, under no_grad, an input changed") {
  manual_seed(5);
  Net net;
  const Tensor x = randn({4, 16}, {.dtype = DType::f64});
  const Grads plain = grads_of(net, x, false, 2);

  // Nested: the inner checkpoint is a plain call inside the outer one.
  Tensor in = x.detach().requires_grad_();
  const Tensor y = autograd::checkpoint(
      [&](const Tensor& t) {
        return autograd::checkpoint([&](const Tensor& u) { return net.block(u); }, net.block(t));
      },
      in);
  net.w1.set_grad(Tensor());
  net.w2.set_grad(Tensor());
  // Backward twice over a retained graph: the second recomputes again; gradients add up.
  y.sum().backward({}, /*retain_graph=*/true);
  y.sum().backward();
  const std::vector<double> twice = net.w1.grad().to_vector<double>();
  for (size_t i = 0; i < twice.size(); ++i) CHECK(twice[i] == 2 * plain.w1[i]);

  {
    autograd::NoGradGuard no_grad;
    CHECK_FALSE(
        autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, in).requires_grad());
  }

  Tensor changed = x.clone().requires_grad_();
  Tensor source = changed * 1.0;  // a non-leaf that may be changed in place
  const Tensor z = autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, source);
  {
    autograd::NoGradGuard no_grad;
    source.copy_(source * 2.0);
  }
  check_error([&] { z.sum().backward(); }, {"checkpoint: input 0", "changed in place"});
}
