// Autocast (mixed precision): the table's policies, the once-per-region cast of a parameter,
// gradients in f32 close to f64's, and recompute in the forward's precision.
#include <dlf/autograd/checkpoint.h>

#include <cmath>

#include "tests/test_util.h"

using namespace dlf;
using test::check_error;
using test::relative_error;

namespace {

constexpr std::optional<DType> kBF16 = DType::bf16;

long copies(const OpProfile& p) {
  auto it = p.rows().find("copy");
  return it == p.rows().end() ? 0 : it->second.calls;
}

}  // namespace

TEST_CASE("autocast: each op computes in the precision its table entry says") {
  manual_seed(1);
  const Tensor a = randn({4, 8}), w = randn({6, 8}), b = randn({6});
  AutocastGuard autocast(kBF16);
  CHECK(autocast_dtype() == kBF16);
  // lower: matmuls, convolutions, attention, embedding
  CHECK(matmul(a, w.transpose(0, 1)).dtype() == DType::bf16);
  const Tensor y = linear(a, w, b);
  CHECK(y.dtype() == DType::bf16);
  CHECK(conv2d(randn({2, 3, 5, 5}), randn({4, 3, 3, 3})).dtype() == DType::bf16);
  CHECK(embedding(randn({10, 4}), from_vector<int64_t>({1, 2}, {2})).dtype() == DType::bf16);
  // f64 is left alone
  CHECK(matmul(a.to(DType::f64), w.to(DType::f64).transpose(0, 1)).dtype() == DType::f64);
  // f32: softmax and losses
  CHECK(softmax(y, -1).dtype() == DType::f32);
  CHECK(cross_entropy(y, from_vector<int64_t>({0, 1, 2, 3}, {4})).dtype() == DType::f32);
  // match: the normalisation's parameters follow a bf16 input
  CHECK(layer_norm(y, {6}, ones({6}), zeros({6})).dtype() == DType::bf16);
  CHECK(layer_norm(a, {8}, ones({8}), zeros({8})).dtype() == DType::f32);
  CHECK(rms_norm(y, ones({6})).dtype() == DType::bf16);
  // widest: element-wise ops mixing the two compute in f32
  CHECK((y + randn({4, 6})).dtype() == DType::f32);
  //   ... but a parameter joins a bf16 activation in bf16, through its cast
  const Tensor position = randn({4, 6}).requires_grad_();
  CHECK((y + position).dtype() == DType::bf16);
  CHECK(cat({position, y}, 0).dtype() == DType::bf16);
  CHECK((y * y).dtype() == DType::bf16);
  CHECK(swiglu(y, randn({4, 6})).dtype() == DType::f32);
  // ops outside the table take their inputs' dtype
  CHECK(gelu(y).dtype() == DType::bf16);
  // the bf16 result is f32's rounded: within bf16's 2^-8 of the f32 product
  AutocastGuard off(std::nullopt);
  test::check_close(y, linear(a, w, b), 0.05, 1.0 / 128);
}

TEST_CASE("autocast: mixed dtypes outside autocast are still an error") {
  const Tensor a = ones({2}), b = ones({2}).to(DType::bf16);
  check_error([&] { (void)(a + b); }, {"add", "different dtypes", "f32", "bf16"});
  check_error([] { AutocastGuard g(DType::f64); }, {"autocast", "bf16", "f64"});
}

TEST_CASE("autocast: a channels-last activation stays channels last in bf16") {
  const Tensor x = randn({2, 4, 3, 3}).contiguous(MemoryFormat::channels_last);
  AutocastGuard autocast(kBF16);
  const Tensor y = conv2d(x, randn({4, 4, 1, 1}));
  CHECK(y.dtype() == DType::bf16);
  CHECK(y.is_channels_last());
  // One channel (a UNet's image) too: [N, 1, H, W] is contiguous in both layouts.
  const Tensor image = randn({2, 1, 3, 3}).contiguous(MemoryFormat::channels_last);
  CHECK(conv2d(image, randn({4, 1, 1, 1})).is_channels_last());
}

TEST_CASE("autocast: a parameter is cast once per region, again after an in-place change") {
  manual_seed(2);
  Tensor w = randn({8, 8});
  w.requires_grad_();
  const Tensor x = randn({4, 8}).to(DType::bf16);
  auto casts_in = [](auto&& fn) {  // the copies `fn` dispatches
    OpProfile p;
    fn();
    return copies(p);
  };
  {
    AutocastGuard autocast(kBF16);
    Tensor b;
    CHECK(casts_in([&] { b = linear(linear(x, w), w); }) == 1);  // both uses share one copy
    b.sum().backward();  // ... and its gradient, both uses' sum, arrives in f32
    CHECK(w.grad().dtype() == DType::f32);
    {
      autograd::NoGradGuard no_grad;
      w.copy_(w * 2.0);
    }
    CHECK(casts_in([&] { (void)linear(x, w); }) == 1);  // changed in place: cast again
    autograd::NoGradGuard no_grad;
    CHECK(casts_in([&] { (void)linear(x, w), (void)linear(x, w); }) == 0);  // no-grad uses too
  }
  {
    AutocastGuard autocast(kBF16);
    CHECK(casts_in([&] { (void)linear(x, w); }) == 1);  // a new region casts anew
  }
  {  // a cast made under no-grad is not kept: a later use with grad would get no gradient
    AutocastGuard autocast(kBF16);
    {
      autograd::NoGradGuard no_grad;
      CHECK(casts_in([&] { (void)linear(x, w); }) == 1);
    }
    w.set_grad(Tensor());
    Tensor y;
    CHECK(casts_in([&] { y = linear(x, w); }) == 1);
    y.sum().backward();
    CHECK(w.grad().defined());
  }
}

TEST_CASE(
    "autocast: cross_entropy reads bf16 logits: an f32 loss, f32's on the same values, and bf16 "
    "gradients") {
  Generator gen(3);
  const Tensor logits16 = (randn({6, 50}, {}, &gen) * 4.0).to(DType::bf16);
  const Tensor exact = logits16.to(DType::f32);  // the same values in f32
  const Tensor target = randint(0, 50, {6}, {.dtype = DType::i64}, &gen);
  Tensor x16 = logits16.detach().requires_grad_(), x32 = exact.detach().requires_grad_();
  const Tensor loss16 = cross_entropy(x16, target, {.label_smoothing = 0.1});
  const Tensor loss32 = cross_entropy(x32, target, {.label_smoothing = 0.1});
  CHECK(loss16.dtype() == DType::f32);
  CHECK(loss16.item<double>() == loss32.item<double>());
  loss16.backward();
  loss32.backward();
  CHECK(x16.grad().dtype() == DType::bf16);
  CHECK(test::bitwise_equal(x16.grad(), x32.grad().to(DType::bf16)));
}

TEST_CASE("autocast: gradients of an MLP reach the f32 parameters within bf16's error of f64") {
  manual_seed(3);
  const Tensor x = randn({32, 24}), labels = randint(0, 5, {32}, {.dtype = DType::i64});
  std::vector<Tensor> params = {randn({48, 24}) * 0.2, zeros({48}), randn({5, 48}) * 0.2,
                                zeros({5})};
  auto loss_of = [&](const std::vector<Tensor>& p, const Tensor& in) {
    return cross_entropy(linear(gelu(linear(in, p[0], p[1])), p[2], p[3]), labels);
  };
  std::vector<Tensor> ref;
  for (const Tensor& p : params) ref.push_back(p.to(DType::f64).requires_grad_());
  const Tensor ref_loss = loss_of(ref, x.to(DType::f64));
  ref_loss.backward();
  for (Tensor& p : params) p.requires_grad_();
  Tensor loss;
  {
    AutocastGuard autocast(kBF16);
    loss = loss_of(params, x);
  }
  CHECK(loss.dtype() == DType::f32);
  loss.backward();
  CHECK(std::fabs(loss.item<double>() - ref_loss.item<double>()) < 1e-2 * ref_loss.item<double>());
  for (size_t i = 0; i < params.size(); ++i) {
    INFO("parameter ", i);
    CHECK(params[i].grad().dtype() == DType::f32);
    CHECK(relative_error(params[i].grad(), ref[i].grad()) < 2e-2);
  }
}

TEST_CASE("autocast: a recomputed region runs again in its forward's precision") {
  manual_seed(4);
  const Tensor w1 = randn({16, 16}).requires_grad_(), w2 = randn({16, 16}).requires_grad_();
  const Tensor x = randn({8, 16});
  auto block = [&](const Tensor& t) { return linear(gelu(linear(t, w1)), w2); };
  auto grads = [&](bool recompute) {
    w1.set_grad(Tensor());
    w2.set_grad(Tensor());
    Tensor y;
    {
      AutocastGuard autocast(kBF16);
      y = recompute ? autograd::checkpoint(block, x) : block(x);
    }
    y.to(DType::f32).sum().backward();  // outside the region, as torch.autocast advises
    return std::vector<Tensor>{w1.grad(), w2.grad()};
  };
  const std::vector<Tensor> plain = grads(false), recomputed = grads(true);
  for (size_t i = 0; i < plain.size(); ++i) CHECK(test::bitwise_equal(plain[i], recomputed[i]));
}

TEST_CASE("autocast_for: bf16 on a CPU without fast bf16 computes in f32, on sim devices in bf16") {
  const Device sim{DeviceType::sim, 0};
  CHECK(autocast_for(DType::f32, kCPU) == std::nullopt);
  CHECK(autocast_for(DType::f32, sim) == std::nullopt);
  CHECK(autocast_for(DType::bf16, sim) == kBF16);
  CHECK(autocast_for(DType::bf16, kMeta) == kBF16);
  CHECK_FALSE(bf16_computes_in_f32(DType::bf16, sim));
  CHECK_FALSE(bf16_computes_in_f32(DType::f32, kCPU));
  // the CPU by oneDNN's instruction set (the suite runs again under ONEDNN_MAX_CPU_ISA=AVX2)
  CHECK(bf16_computes_in_f32(DType::bf16, kCPU) == !cpu_has_fast_bf16());
  CHECK(autocast_for(DType::bf16, kCPU) == (cpu_has_fast_bf16() ? kBF16 : std::nullopt));
}
