#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

// A ViT small enough to check gradients element by element and to train in milliseconds.
models::ViTConfig tiny_config(DType dtype) {
  return {.name = "tiny",
          .image = 4,
          .channels = 2,
          .patch = 2,
          .dim = 4,
          .depth = 1,
          .heads = 2,
          .classes = 3,
          .mlp_ratio = 2,
          .dtype = dtype};
}

double std_of(const Tensor& t) { return std::sqrt(mean(t * t).item<double>()); }

}  // namespace

TEST_CASE("ViT: timm's parameter names, shapes and counts; its init") {
  models::VisionTransformer vit(models::vit_config("vit-tiny"));
  std::vector<std::string> expected = {"cls_token [1, 1, 192]", "pos_embed [1, 50, 192]",
                                       "patch_embed.proj.weight [192, 1, 4, 4]",
                                       "patch_embed.proj.bias [192]"};
  for (int i = 0; i < 6; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* name :
         {"norm1.weight [192]", "norm1.bias [192]", "attn.qkv.weight [576, 192]",
          "attn.qkv.bias [576]", "attn.proj.weight [192, 192]", "attn.proj.bias [192]",
          "norm2.weight [192]", "norm2.bias [192]", "mlp.fc1.weight [768, 192]",
          "mlp.fc1.bias [768]", "mlp.fc2.weight [192, 768]", "mlp.fc2.bias [192]"})
      expected.push_back(b + name);
  }
  for (const char* name :
       {"norm.weight [192]", "norm.bias [192]", "head.weight [10, 192]", "head.bias [10]"})
    expected.push_back(name);
  std::vector<std::string> got;
  for (const auto& [name, t] : vit.state_dict()) got.push_back(name + " " + shape_str(t.shape()));
  CHECK(got == expected);
  CHECK(vit.num_parameters() == 2684554);  // the peer's count (its param_names/names_vit-tiny)
  const models::ViTConfig small = models::vit_config("vit-small");  // timm's vit_small
  CHECK((small.dim == 384 && small.depth == 12 && small.heads == 6 && small.patch == 4));

  CHECK(std_of(vit.pos_embed) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(std_of(vit.cls_token) < 1e-5);
  // Linear layers: PyTorch's default, weights and biases uniform in ±1/sqrt(in) (std that over
  // sqrt(3)).
  const double in192 = 1 / std::sqrt(192.0), in768 = 1 / std::sqrt(768.0);
  CHECK(std_of((*vit.blocks)[0].mlp->c_fc->weight) ==
        doctest::Approx(in192 / std::sqrt(3)).epsilon(0.02));
  CHECK(std_of((*vit.blocks)[5].mlp->c_proj->weight) ==
        doctest::Approx(in768 / std::sqrt(3)).epsilon(0.02));
  CHECK(max(abs((*vit.blocks)[3].attn->c_attn->bias)).item<double>() <= in192);
  CHECK(std_of((*vit.blocks)[3].attn->c_attn->bias) ==
        doctest::Approx(in192 / std::sqrt(3)).epsilon(0.15));
  CHECK(std_of(vit.head->weight) == doctest::Approx(in192 / std::sqrt(3)).epsilon(0.1));
  CHECK(max(abs(vit.head->bias)).item<double>() <= in192);
  CHECK((*vit.blocks)[0].ln_1->eps == 1e-6);
  CHECK(vit.norm->weight.to_vector<double>() == std::vector<double>(192, 1.0));
  // The patch conv keeps PyTorch's default: uniform in ±1/sqrt(16).
  CHECK(max(abs(vit.patch_embed->proj->weight)).item<double>() <= 0.25);
  CHECK(std_of(vit.patch_embed->proj->weight) == doctest::Approx(0.25 / std::sqrt(3)).epsilon(0.1));

  Generator a(7), b(7);  // the same seed draws the same model
  const models::VisionTransformer one(tiny_config(DType::f32), &a),
      two(tiny_config(DType::f32), &b);
  for (size_t i = 0; i < one.parameters().size(); ++i)
    check_close(one.parameters()[i], two.parameters()[i], 0, 0);
}

TEST_CASE("ViT: config errors, forward shapes, loss at init, patch embedding") {
  check_error([] { models::vit_config("vit-huge"); }, {"'vit-huge'", "vit-tiny", "vit-small"});
  check_error(
      [] {
        models::VisionTransformer({.name = "odd", .patch = 5, .dim = 8, .depth = 1, .heads = 2});
      },
      {"odd", "patch 5"});
  manual_seed(5);
  models::VisionTransformer vit(models::vit_config("vit-tiny"));
  const Tensor images = randn({8, 1, 28, 28});
  CHECK(vit.forward(images).shape() == Shape{8, 10});
  // Small init: the logits are near zero, so the loss is near ln(10).
  CHECK(vit.loss(images, randint(0, 10, {8})).item<double>() ==
        doctest::Approx(std::log(10.0)).epsilon(0.1));
  check_error([&] { vit.forward(randn({3, 1, 32, 32})); }, {"[B, 1, 28, 28]", "[3, 1, 32, 32]"});
  check_error([&] { vit.loss(images, from_vector<int64_t>({1, 7})); }, {"labels", "[2]"});

  // Patch (row 0, col 1) of a 4x4 image in 2x2 patches: pixels (0..1, 2..3) of each channel.
  models::VisionTransformer small(tiny_config(DType::f64));
  const Tensor x = randn({1, 2, 4, 4}, {.dtype = DType::f64});
  const Tensor patches = small.patch_embed->forward(x);
  CHECK(patches.shape() == Shape{1, 4, 4});
  const Tensor pixels = x.select(0, 0).slice(1, 0, 2).slice(2, 2, 4).reshape({8});
  const Tensor& w = small.patch_embed->proj->weight;
  check_close(patches.select(0, 0).select(0, 1),
              linear(pixels, w.reshape({4, 8}), small.patch_embed->proj->bias), 1e-12, 1e-12);
  // It is the conv itself, flattened.
  check_close(patches, small.patch_embed->proj->forward(x).flatten(2).transpose(1, 2), 1e-12,
              1e-12);
}

TEST_CASE("ViT: gradients of the images and every parameter match finite differences") {
  manual_seed(6);
  models::VisionTransformer vit(tiny_config(DType::f64));
  // Larger than init so every path (cls token, attention, MLP) moves the loss noticeably.
  for (Tensor p : vit.parameters()) {
    autograd::NoGradGuard no_grad;
    p.copy_(randn(p.shape(), {.dtype = DType::f64}) * 0.5);
  }
  const Tensor images = randn({2, 2, 4, 4}, {.dtype = DType::f64}).requires_grad_();
  const Tensor labels = from_vector<int64_t>({2, 0});
  std::vector<Tensor> inputs = {images};
  for (const Tensor& p : vit.parameters()) inputs.push_back(p);
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>& in) { return vit.loss(in[0], labels); }, inputs);
  INFO(result.str());
  CHECK(result.ok);
}

TEST_CASE("ViT: a few AdamW steps on a fixed batch lower the loss") {
  manual_seed(8);
  models::VisionTransformer vit(
      {.name = "small", .patch = 7, .dim = 32, .depth = 2, .heads = 2, .classes = 10});
  const Tensor images = randn({16, 1, 28, 28});
  const Tensor labels = randint(0, 10, {16});
  nn::optim::AdamW opt(nn::optim::decay_groups(vit.named_parameters(), 0.05), {.lr = 3e-3});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss = vit.loss(images, labels);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss ", first, " -> ", last);
  CHECK(first == doctest::Approx(std::log(10.0)).epsilon(0.1));
  CHECK(last < 0.3 * first);
  CHECK(nn::accuracy(vit.forward(images), labels) == 1.0);
}
