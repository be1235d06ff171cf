// Channels-last tensors: the layout itself, and every op a UNet runs on it keeping it while
// giving the row-major result, forward and backward.
#include <dlf/autograd/gradcheck.h>

#include "tests/test_util.h"

using namespace dlf;
using test::check_close;

namespace {

constexpr MemoryFormat kLast = MemoryFormat::channels_last;

// A UNet's chain in miniature: conv (bias), time-embedding add, GroupNorm, SiLU, a 1x1 conv
// shortcut and residual add, channel concatenation, nearest upsampling, a strided conv and
// a transposed one. Every intermediate of a channels-last input is checked to stay so.
Tensor unet_chain(const Tensor& x, const std::vector<Tensor>& p, bool expect_last) {
  auto keeps = [&](const Tensor& t) {
    CHECK(t.is_channels_last() == expect_last);
    return t;
  };
  const Tensor& conv_w = p[0];
  const Tensor& conv_b = p[1];
  const Tensor& temb = p[2];
  const Tensor& gn_w = p[3];
  const Tensor& gn_b = p[4];
  const Tensor& shortcut = p[5];
  const Tensor& down = p[6];
  const Tensor& up = p[7];
  Tensor h = keeps(conv2d(x, conv_w, conv_b, {.padding = {1, 1}}));
  h = keeps(h + temb.view({temb.size(0), temb.size(1), 1, 1}));
  h = keeps(silu(keeps(group_norm(h, 2, gn_w, gn_b))));
  h = keeps(h + keeps(conv2d(x, shortcut)));
  h = keeps(cat({h, x}, 1));
  h = keeps(upsample_nearest2d(h, {2 * h.size(2), 2 * h.size(3)}));
  h = keeps(conv2d(h, down, {}, {.stride = {2, 2}, .padding = {1, 1}}));
  return keeps(
      conv_transpose2d(h, up, {}, {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}}));
}

// The chain's parameters (and time embedding) for a batch of `batch`, requiring grad.
std::vector<Tensor> chain_params(DType dtype, int64_t batch) {
  auto leaf = [dtype](const Shape& shape) {
    return randn(shape, {.dtype = dtype}).requires_grad_();
  };
  return {leaf({4, 3, 3, 3}), leaf({4}),          leaf({batch, 4}),   leaf({4}),
          leaf({4}),          leaf({4, 3, 1, 1}), leaf({5, 7, 3, 3}), leaf({5, 2, 3, 3})};
}

}  // namespace

TEST_CASE("channels-last layout: strides, the ambiguous shapes, and conversions") {
  const Tensor t = Tensor::empty({2, 3, 4, 5}, DType::f32, default_device(), kLast);
  CHECK(shape_str(t.strides()) == "[60, 1, 15, 3]");
  CHECK(t.is_channels_last());
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.memory_format() == kLast);

  // [N, 1, H, W] is dense both ways: the strides it was made with say which.
  const Tensor one = randn({2, 1, 4, 4});
  CHECK(one.memory_format() == MemoryFormat::contiguous);
  const Tensor one_last = one.contiguous(kLast);
  CHECK(one_last.is_channels_last());
  CHECK(one_last.memory_format() == kLast);
  check_close(one_last, one, 0, 0);

  const Tensor x = randn({2, 6, 3, 4});
  const Tensor last = x.contiguous(kLast);
  CHECK(last.is_channels_last());
  check_close(last, x, 0, 0);
  CHECK(last.contiguous(kLast).storage() == last.storage());  // already so: no copy
  check_close(last.contiguous(), x, 0, 0);
  CHECK(last.contiguous().is_contiguous());
  // Some of the channels of a channels-last tensor: not dense, laid out the same way.
  const Tensor part = last.narrow(1, 2, 3);
  CHECK_FALSE(part.is_channels_last());
  CHECK(part.memory_format() == kLast);
  CHECK(x.narrow(1, 2, 3).memory_format() == MemoryFormat::contiguous);

  test::check_error([] { randn({2, 3}).contiguous(kLast); }, {"4-D", "[2, 3]"});
}

TEST_CASE("a UNet's ops keep channels last and give the row-major results and gradients") {
  for (DType dtype : {DType::f32, DType::f64}) {  // f32 runs oneDNN's convolutions, f64 the loops
    CAPTURE(dtype_name(dtype));
    manual_seed(4);
    const double tol = dtype == DType::f32 ? 1e-4 : 1e-12;
    const Tensor x = randn({2, 3, 6, 6}, {.dtype = dtype});
    std::vector<Tensor> plain = chain_params(dtype, 2), last;
    for (const Tensor& p : plain) last.push_back(p.detach().requires_grad_());
    const Tensor xp = x.detach().requires_grad_();
    const Tensor xl = x.detach().requires_grad_();
    const Tensor yp = unet_chain(xp, plain, false);
    const Tensor yl = unet_chain(xl.contiguous(kLast), last, true);
    check_close(yl, yp, tol, tol);
    const Tensor g = randn(yp.shape(), {.dtype = dtype});
    yp.backward(g);
    yl.backward(g.contiguous(kLast));
    check_close(xl.grad(), xp.grad(), tol, tol);
    for (size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);
      check_close(last[i].grad(), plain[i].grad(), tol, tol);
    }
  }
}

TEST_CASE("gradcheck through the channels-last chain (f64)") {
  manual_seed(5);
  std::vector<Tensor> inputs{randn({1, 3, 4, 4}, {.dtype = DType::f64}).requires_grad_()};
  for (const Tensor& p : chain_params(DType::f64, 1)) inputs.push_back(p);
  const auto result = autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return unet_chain(in[0].contiguous(kLast), {in.begin() + 1, in.end()}, true);
      },
      inputs);
  INFO(result.str());
  CHECK(result.ok);
}
