#include "test_util.h"

#include <dlf/autograd/checkpoint.h>
#include <dlf/core/op_profile.h>
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

Grads grads_of(const Net& net, const Tensor& x, bool recompute, int blocks = 2,
               autograd::Recompute what = autograd::Recompute::full) {
  net.w1.set_grad(Tensor());
  net.w2.set_grad(Tensor());
  Tensor in = x.detach().requires_grad_();
  Tensor y = in;
  for (int b = 0; b < blocks; ++b) {
    y = recompute ? autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, y, what)
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

TEST_CASE("checkpoint, selective: costly ops' outputs kept, only the cheap ops run again") {
  using autograd::Recompute;
  manual_seed(6);
  Net net;
  net.p = 0.3;
  const Tensor x = randn({256, 16}, {.dtype = DType::f64});
  manual_seed(12);
  const Grads plain = grads_of(net, x, false);
  manual_seed(12);
  CHECK(grads_of(net, x, true, 2, Recompute::selective) == plain);

  // What backward runs: the plain backward's matmuls and, again, tanh; not the forward's
  // matmuls (16-wide: 32 FLOPs an output element), which full recompute runs again.
  auto backward_calls = [&](std::optional<Recompute> what, const char* op) {
    Tensor in = x.detach().requires_grad_();
    const Tensor y =
        what ? autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, in, *what)
             : net.block(in);
    OpProfile profile;
    y.sum().backward();
    return profile.rows().contains(op) ? profile.rows().at(op).calls : 0;
  };
  const long matmuls = backward_calls(std::nullopt, "matmul");
  CHECK(backward_calls(Recompute::selective, "matmul") == matmuls);
  CHECK(backward_calls(Recompute::full, "matmul") == matmuls + 2);
  CHECK(backward_calls(std::nullopt, "tanh") == 0);
  CHECK(backward_calls(Recompute::selective, "tanh") == 1);

  // Held between forward and backward: the output and both matmuls' outputs (the plain
  // forward keeps tanh's output instead of x w1).
  Allocator& memory = allocator_for(kCPU);
  const Tensor in = x.detach().requires_grad_();
  const int64_t before = memory.stats().live_bytes;
  const Tensor y =
      autograd::checkpoint([&](const Tensor& t) { return net.block(t); }, in, Recompute::selective);
  CHECK(memory.stats().live_bytes - before == 3 * 256 * 16 * 8);
}

TEST_CASE("checkpoint, selective: a kept output changed in place since is computed again") {
  manual_seed(7);
  const Tensor w = randn({16, 16}, {.dtype = DType::f64}).requires_grad_();
  const Tensor x = randn({4, 16}, {.dtype = DType::f64});
  auto fn = [&](const std::vector<Tensor>& in) {
    const Tensor m = matmul(in[0], w);
    return std::vector<Tensor>{m, m.sin()};  // sin keeps m for backward
  };
  fn({x})[1].sum().backward();
  const std::vector<double> plain = w.grad().to_vector<double>();
  w.set_grad(Tensor());

  std::vector<Tensor> out = autograd::checkpoint(fn, {x}, autograd::Recompute::selective);
  {
    autograd::NoGradGuard no_grad;
    out[0].copy_(out[0] * 0.0);  // the kept bytes of matmul's output are no longer its result
  }
  out[1].sum().backward();
  CHECK(w.grad().to_vector<double>() == plain);
  CHECK(autograd::parse_recompute("selective") == autograd::Recompute::selective);
  check_error([] { autograd::parse_recompute("some"); }, {"unknown recompute 'some'", "selective"});
}

TEST_CASE("checkpoint, selective: a recompute that runs other costly ops is an error") {
  manual_seed(8);
  const Tensor w = randn({16, 16}, {.dtype = DType::f64}).requires_grad_();
  const Tensor x = randn({4, 16}, {.dtype = DType::f64}).requires_grad_();
  int calls = 0;
  // The first run multiplies by w (costly, kept), the second squares x element-wise: both
  // save three tensors, so only the costly ops tell them apart.
  auto fn = [&](const std::vector<Tensor>& in) {
    const Tensor m = calls++ == 0 ? matmul(in[0], w) : in[0] * in[0];
    return std::vector<Tensor>{m.sin()};
  };
  const Tensor y = autograd::checkpoint(fn, {x}, autograd::Recompute::selective)[0];
  check_error([&] { y.sum().backward(); }, {"ran 0 costly ops, the first 1", "the same ops"});
}
