#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

// A UNet small enough for finite differences and a few optimizer steps: two levels on 4x4
// images, so the attention sees 2x2 positions.
models::UNetConfig micro(DType dtype) {
  return {.name = "micro",
          .image = 4,
          .channels = 1,
          .base = 4,
          .layers_per_block = 1,
          .groups = 2,
          .time_dim = 8,
          .mults = {1, 2},
          .dtype = dtype};
}

}  // namespace

TEST_CASE("UNet: unet-small has the peer's diffusers names, shapes and count") {
  const models::UNet unet(models::unet_config("unet-small"));
  std::vector<std::string> got;
  for (const auto& [name, t] : unet.state_dict()) got.push_back(name + " " + shape_str(t.shape()));
  REQUIRE(got.size() == 218);  // the peer's names_unet-small.txt, in its order
  CHECK(got[0] == "conv_in.weight [64, 1, 3, 3]");
  CHECK(got[2] == "time_embedding.linear_1.weight [256, 64]");
  CHECK(got[5] == "time_embedding.linear_2.bias [256]");
  CHECK(got[10] == "down_blocks.0.resnets.0.time_emb_proj.weight [64, 256]");
  CHECK(got[26] == "down_blocks.0.downsamplers.0.conv.weight [64, 64, 3, 3]");
  CHECK(got[38] == "down_blocks.1.resnets.0.conv_shortcut.weight [128, 64, 1, 1]");
  CHECK(got[72] == "up_blocks.0.resnets.0.norm1.weight [256]");
  CHECK(got[74] == "up_blocks.0.resnets.0.conv1.weight [128, 256, 3, 3]");
  CHECK(got[108] == "up_blocks.0.upsamplers.0.conv.weight [128, 128, 3, 3]");
  CHECK(got[148] == "up_blocks.2.resnets.0.norm1.weight [192]");
  CHECK(got[184] == "mid_block.attentions.0.group_norm.weight [128]");
  CHECK(got[192] == "mid_block.attentions.0.to_out.0.weight [128, 128]");
  CHECK(got[212] == "mid_block.resnets.1.conv2.weight [128, 128, 3, 3]");
  CHECK(got[214] == "conv_norm_out.weight [64]");
  CHECK(got[217] == "conv_out.bias [1]");
  CHECK(unet.num_parameters() == 6138369);

  check_error([] { models::unet_config("unet-huge"); },
              {"unknown UNet model 'unet-huge'", "unet-small", "unet-tiny"});
  check_error([] { models::UNet({.name = "odd", .base = 48, .groups = 32}); },
              {"UNet 'odd'", "groups 32"});
}

TEST_CASE("UNet: PyTorch's default init from a generator") {
  Generator a(3), b(3), c(4);
  const models::UNet one(models::unet_config("unet-tiny"), &a),
      same(models::unet_config("unet-tiny"), &b), other(models::unet_config("unet-tiny"), &c);
  check_close(one.conv_in->weight, same.conv_in->weight, 0, 0);
  check_close(one.conv_out->bias, same.conv_out->bias, 0, 0);
  CHECK(max(abs(one.conv_in->weight - other.conv_in->weight)).item<double>() > 0);
  // conv1 of the first resnet: fan_in 16·9, so uniform in ±1/sqrt(144).
  const Tensor w = (*(*one.down_blocks)[0].resnets)[0].conv1->weight;
  const double bound = 1 / std::sqrt(144.0);
  CHECK(max(abs(w)).item<double>() <= bound);
  CHECK(std::sqrt(mean(w * w).item<double>()) ==
        doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.03));
  CHECK(one.conv_norm_out->weight.to_vector<double>() == std::vector<double>(16, 1.0));
}

TEST_CASE("UNet: timestep embedding, forward shapes and bad inputs") {
  const Tensor e = models::timestep_embedding(from_vector<int64_t>({0, 1}), 4, DType::f64);
  const double f = std::exp(-std::log(10000.0) / 2);  // k = 1 of dim 4
  check_close(e, {1, 1, 0, 0, std::cos(1.0), std::cos(f), std::sin(1.0), std::sin(f)}, {2, 4},
              1e-12, 0);

  manual_seed(1);
  const models::UNet unet(micro(DType::f32));
  const Tensor x = randn({3, 1, 8, 12});
  const Tensor out = unet.forward(x, from_vector<int64_t>({0, 500, 999}));
  CHECK(out.shape() == Shape{3, 1, 8, 12});
  check_error(
      [&] {
        unet.forward(randn({3, 1, 5, 8}), from_vector<int64_t>({0, 1, 2}));
      },
      {"UNet 'micro'", "multiples of 2", "[3, 1, 5, 8]"});
  check_error([&] { unet.forward(x, from_vector<int64_t>({0, 1})); }, {"one timestep per image"});
  check_error([&] { unet.forward(x, from_vector<double>({0, 1, 2})); }, {"integer timesteps"});
}

TEST_CASE("UNet: gradients match finite differences (micro f64 model)") {
  manual_seed(2);
  const models::UNet unet(micro(DType::f64));
  const Tensor x = randn({2, 1, 4, 4}, {.dtype = DType::f64}).requires_grad_();
  const Tensor t = from_vector<int64_t>({7, 640});
  // The input and one parameter of every kind of layer on the way: conv_in, the time MLP,
  // GroupNorm, a resnet's time projection and 1x1 shortcut, the downsampler, the attention,
  // the upsampler and conv_out.
  const auto& up = (*unet.up_blocks)[0];
  const auto& attention = (*unet.mid_block->attentions)[0];
  std::vector<Tensor> inputs = {x,
                                unet.conv_in->weight,
                                unet.time_embedding->linear_1->weight,
                                (*(*unet.down_blocks)[0].resnets)[0].norm1->weight,
                                (*(*unet.down_blocks)[0].resnets)[0].time_emb_proj->weight,
                                (*unet.down_blocks)[0].resampler->conv->bias,
                                (*(*unet.down_blocks)[1].resnets)[0].conv_shortcut->weight,
                                attention.to_q->weight,
                                attention.to_v->bias,
                                (*attention.to_out)[0].weight,
                                (*up.resnets)[1].norm2->bias,
                                up.resampler->conv->weight,
                                unet.conv_norm_out->weight,
                                unet.conv_out->weight};
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>& in) { return unet.forward(in[0], t); }, inputs);
  INFO(result.str());
  CHECK(result.ok);
}

TEST_CASE("UNet: the DDPM loss falls over a few AdamW steps on a fixed noisy batch") {
  manual_seed(3);
  models::UNet unet(micro(DType::f32));
  const models::DDPM ddpm;
  const Tensor x0 = rand({8, 1, 4, 4}) * 2 - 1;
  nn::optim::AdamW opt(nn::optim::decay_groups(unet.named_parameters(), 0.0), {.lr = 1e-2});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    Generator batch(7);  // the same timesteps and noise every step
    opt.zero_grad();
    const Tensor loss = ddpm.loss(unet, x0, batch);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss ", first, " -> ", last);
  CHECK(last < 0.5 * first);
}

TEST_CASE("DDPM: the linear schedule, add_noise and sampling") {
  const models::DDPM ddpm;
  REQUIRE(ddpm.steps() == 1000);
  CHECK(ddpm.betas()[0] == doctest::Approx(1e-4).epsilon(1e-12));
  CHECK(ddpm.betas()[999] == doctest::Approx(0.02).epsilon(1e-12));
  const auto& ab = ddpm.alphas_cumprod();
  CHECK(ab[0] == doctest::Approx(0.9999).epsilon(1e-12));
  CHECK(ab[1] == doctest::Approx(0.9999 * (1 - (1e-4 + 0.0199 / 999))).epsilon(1e-12));
  CHECK(ab[99] == doctest::Approx(0.89701814567496).epsilon(1e-9));
  CHECK(ab[999] == doctest::Approx(4.0358297653756754e-05).epsilon(1e-6));

  const Tensor t = from_vector<int64_t>({0, 99, 999});
  const Tensor ones = full({3, 1, 2, 2}, 1.0, {.dtype = DType::f64});
  const Tensor signal = ddpm.add_noise(ones, zeros_like(ones), t);
  const Tensor noise = ddpm.add_noise(zeros_like(ones), ones, t);
  auto per_image = [](std::vector<double> v) {
    std::vector<double> out;
    for (double x : v) out.insert(out.end(), 4, x);
    return out;
  };
  check_close(signal, per_image({std::sqrt(0.9999), 0.9471104189454153, 0.006352818087570016}),
              {3, 1, 2, 2}, 1e-12, 1e-9);
  check_close(noise, per_image({0.01, 0.3209078595563531, 0.99997982064757}), {3, 1, 2, 2}, 1e-12,
              1e-9);
  check_error(
      [&] {
        ddpm.add_noise(ones, ones, from_vector<int64_t>({0, 1, 1000}));
      },
      {"index 1000", "table of 1000 rows"});  // the schedule's 1000 steps: 0..999
  check_error([&] { ddpm.add_noise(ones, zeros({3, 1, 2}), t); }, {"noise [3, 1, 2]"});

  manual_seed(4);
  const models::UNet unet(micro(DType::f32));
  Generator a(9), b(9);
  const Tensor images = ddpm.sample(unet, 3, a, 10);
  CHECK(images.shape() == Shape{3, 1, 4, 4});
  CHECK(max(abs(images)).item<double>() <= 1);
  check_close(ddpm.sample(unet, 3, b, 10), images, 0, 0);  // a function of the generator
  check_error([&] { ddpm.sample(unet, 3, a, 1001); }, {"at most 1000"});
}
