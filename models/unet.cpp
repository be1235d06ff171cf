#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/models/unet.h>
#include <dlf/nn/functional.h>
#include <dlf/nn/init.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "named_config.h"

namespace dlf::models {
namespace {

std::shared_ptr<nn::Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride, DType dtype) {
  return std::make_shared<nn::Conv2d>(in, out, Pair{3, 3},
                                      Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}},
                                      true, dtype);
}

std::shared_ptr<nn::GroupNorm> group_norm(int64_t channels, const UNetConfig& c) {
  return std::make_shared<nn::GroupNorm>(c.groups, channels, 1e-5, c.dtype);
}

std::shared_ptr<nn::Linear> linear(int64_t in, int64_t out, DType dtype) {
  return std::make_shared<nn::Linear>(in, out, nn::LinearOptions{.dtype = dtype});
}

}  // namespace

const std::vector<UNetConfig>& unet_configs() {
  static const std::vector<UNetConfig> configs = {
      {.name = "unet-tiny", .base = 16, .layers_per_block = 1, .groups = 8, .time_dim = 64},
      {.name = "unet-small"},
  };
  return configs;
}

UNetConfig unet_config(const std::string& name) {
  return detail::config_named(unet_configs(), name, "UNet");
}

Tensor timestep_embedding(const Tensor& t, int64_t dim, DType dtype) {
  DLF_CHECK(t.dim() == 1 && (t.dtype() == DType::i64 || t.dtype() == DType::i32),
            "timestep_embedding: expected integer timesteps [B], got ", shape_str(t.shape()), " ",
            dtype_name(t.dtype()));
  DLF_CHECK(dim > 0 && dim % 2 == 0, "timestep_embedding: dim must be even, got ", dim);
  const int64_t half = dim / 2;
  // In f64 and in tensor ops (no timestep read on the host): t · 10000^(-k/half), k < half.
  const TensorOptions f64{.dtype = DType::f64, .device = t.device()};
  const Tensor freqs = exp(arange(double(half), f64) * (-std::log(10000.0) / double(half)));
  const Tensor args = t.to(DType::f64).unsqueeze(1) * freqs.unsqueeze(0);
  return cat({cos(args), sin(args)}, 1).to(dtype);
}

ResnetBlock::ResnetBlock(int64_t in, int64_t out, const UNetConfig& c) {
  norm1 = register_module("norm1", group_norm(in, c));
  conv1 = register_module("conv1", conv3x3(in, out, 1, c.dtype));
  time_emb_proj = register_module("time_emb_proj", linear(c.time_dim, out, c.dtype));
  norm2 = register_module("norm2", group_norm(out, c));
  conv2 = register_module("conv2", conv3x3(out, out, 1, c.dtype));
  if (in != out)
    conv_shortcut = register_module(
        "conv_shortcut",
        std::make_shared<nn::Conv2d>(in, out, Pair{1, 1}, Conv2dOptions{}, true, c.dtype));
}

Tensor ResnetBlock::forward(const Tensor& x, const Tensor& temb_silu) const {
  return run_block(
      [this](const std::vector<Tensor>& in) {
        const Tensor &x = in[0], &temb = in[1];
        Tensor h = conv1->forward(norm1->forward_silu(x));
        const Tensor proj = time_emb_proj->forward(temb);
        h = h + proj.view({proj.size(0), proj.size(1), 1, 1});
        h = conv2->forward(norm2->forward_silu(h));
        return (conv_shortcut ? conv_shortcut->forward(x) : x) + h;
      },
      {x, temb_silu});
}

SpatialAttention::SpatialAttention(int64_t channels, const UNetConfig& c)
    : group_norm(register_module("group_norm", models::group_norm(channels, c))),
      to_q(register_module("to_q", linear(channels, channels, c.dtype))),
      to_k(register_module("to_k", linear(channels, channels, c.dtype))),
      to_v(register_module("to_v", linear(channels, channels, c.dtype))),
      to_out(register_module("to_out", std::make_shared<nn::ModuleList<nn::Linear>>())) {
  to_out->push_back(linear(channels, channels, c.dtype));
}

Tensor SpatialAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const Tensor h = group_norm->forward(x).view({B, C, H * W}).transpose(1, 2);  // [B, HW, C]
  const Tensor y =
      scaled_dot_product_attention(to_q->forward(h), to_k->forward(h), to_v->forward(h));
  return x + (*to_out)[0].forward(y).transpose(1, 2).reshape({B, C, H, W});
}

ResampleConv::ResampleConv(int64_t channels, int64_t stride, DType dtype)
    : conv(register_module("conv", conv3x3(channels, channels, stride, dtype))) {}

UNetLevel::UNetLevel(const std::vector<int64_t>& inputs, int64_t out, Resample resample,
                     const UNetConfig& c)
    : resnets(register_module("resnets", std::make_shared<nn::ModuleList<ResnetBlock>>())) {
  for (int64_t in : inputs) resnets->push_back(std::make_shared<ResnetBlock>(in, out, c));
  if (resample == Resample::none) return;
  auto list = register_module(resample == Resample::down ? "downsamplers" : "upsamplers",
                              std::make_shared<nn::ModuleList<ResampleConv>>());
  resampler = std::make_shared<ResampleConv>(out, resample == Resample::down ? 2 : 1, c.dtype);
  list->push_back(resampler);
}

TimestepEmbedding::TimestepEmbedding(const UNetConfig& c)
    : linear_1(register_module("linear_1", linear(c.base, c.time_dim, c.dtype))),
      linear_2(register_module("linear_2", linear(c.time_dim, c.time_dim, c.dtype))) {}

Tensor TimestepEmbedding::forward(const Tensor& t) const {
  const Tensor e = timestep_embedding(t.to(linear_1->weight.device()), linear_1->weight.size(1),
                                      linear_1->weight.dtype());
  return linear_2->forward(silu(linear_1->forward(e)));
}

MidBlock::MidBlock(int64_t channels, const UNetConfig& c)
    : attentions(
          register_module("attentions", std::make_shared<nn::ModuleList<SpatialAttention>>())),
      resnets(register_module("resnets", std::make_shared<nn::ModuleList<ResnetBlock>>())) {
  attentions->push_back(std::make_shared<SpatialAttention>(channels, c));
  for (int i = 0; i < 2; ++i)
    resnets->push_back(std::make_shared<ResnetBlock>(channels, channels, c));
}

Tensor MidBlock::forward(const Tensor& x, const Tensor& temb_silu) const {
  const Tensor h = (*attentions)[0].forward((*resnets)[0].forward(x, temb_silu));
  return (*resnets)[1].forward(h, temb_silu);
}

UNet::UNet(UNetConfig config, Generator* gen) : config_(std::move(config)) {
  const UNetConfig& c = config_;
  const int64_t levels = int64_t(c.mults.size());
  DLF_CHECK(levels > 0 && c.channels > 0 && c.base > 0 && c.layers_per_block > 0 && c.groups > 0 &&
                c.base % c.groups == 0 && c.base % 2 == 0 && c.time_dim > 0,
            "UNet '", c.name, "': bad config (channels ", c.channels, ", base ", c.base,
            ", layers_per_block ", c.layers_per_block, ", groups ", c.groups, ", time_dim ",
            c.time_dim, ", ", levels, " levels)");
  std::vector<int64_t> width;
  for (int64_t m : c.mults) {
    DLF_CHECK(m > 0 && c.base * m % c.groups == 0, "UNet '", c.name, "': ", c.base * m,
              " channels do not split into ", c.groups, " groups");
    width.push_back(c.base * m);
  }
  conv_in = register_module("conv_in", conv3x3(c.channels, c.base, 1, c.dtype));
  time_embedding = register_module("time_embedding", std::make_shared<TimestepEmbedding>(c));

  // The down path pushes every resnet's and downsampler's output as a skip; skips records
  // their channels, which the up path consumes in reverse.
  std::vector<int64_t> skips{c.base};
  int64_t cur = c.base;
  down_blocks = register_module("down_blocks", std::make_shared<nn::ModuleList<UNetLevel>>());
  for (int64_t i = 0; i < levels; ++i) {
    std::vector<int64_t> inputs{cur};
    inputs.resize(size_t(c.layers_per_block), width[size_t(i)]);
    cur = width[size_t(i)];
    skips.insert(skips.end(), size_t(c.layers_per_block), cur);
    const bool last = i + 1 == levels;
    if (!last) skips.push_back(cur);
    down_blocks->push_back(
        std::make_shared<UNetLevel>(inputs, cur, last ? Resample::none : Resample::down, c));
  }
  up_blocks = register_module("up_blocks", std::make_shared<nn::ModuleList<UNetLevel>>());
  for (int64_t i = levels - 1; i >= 0; --i) {
    std::vector<int64_t> inputs;
    for (int64_t j = 0; j <= c.layers_per_block; ++j) {
      inputs.push_back(cur + skips.back());
      skips.pop_back();
      cur = width[size_t(i)];
    }
    up_blocks->push_back(
        std::make_shared<UNetLevel>(inputs, cur, i > 0 ? Resample::up : Resample::none, c));
  }
  mid_block = register_module("mid_block", std::make_shared<MidBlock>(width.back(), c));
  conv_norm_out = register_module("conv_norm_out", group_norm(c.base, c));
  conv_out = register_module("conv_out", conv3x3(c.base, c.channels, 1, c.dtype));

  // Every conv and linear again, from gen: weight.dim() >= 2, its bias beside it.
  const nn::NamedTensors params = named_parameters();
  const std::map<std::string, Tensor> by_name(params.begin(), params.end());
  for (const auto& [name, p] : params) {
    if (p.dim() < 2) continue;
    const std::string prefix = name.substr(0, name.size() - std::string("weight").size());
    nn::init::linear_default_(p, by_name.at(prefix + "bias"), gen);
  }
}

Tensor UNet::forward(const Tensor& x, const Tensor& t) const {
  const int64_t factor = int64_t(1) << (config_.mults.size() - 1);
  DLF_CHECK(x.dim() == 4 && x.size(1) == config_.channels && x.size(2) % factor == 0 &&
                x.size(3) % factor == 0,
            "UNet '", config_.name, "': expected images [B, ", config_.channels,
            ", H, W] with H and W multiples of ", factor, ", got ", shape_str(x.shape()));
  DLF_CHECK(t.dim() == 1 && t.size(0) == x.size(0), "UNet '", config_.name,
            "': expected one timestep per image, [", x.size(0), "], got ", shape_str(t.shape()));
  const Tensor temb_silu = silu(time_embedding->forward(t));
  // Channels last from here on: oneDNN's convolutions then never reorder the activations.
  Tensor h = conv_in->forward(x.contiguous(MemoryFormat::channels_last));
  std::vector<Tensor> skips{h};
  for (const auto& level : *down_blocks) {
    for (const auto& resnet : *level->resnets) skips.push_back(h = resnet->forward(h, temb_silu));
    if (level->resampler) skips.push_back(h = level->resampler->conv->forward(h));
  }
  h = mid_block->forward(h, temb_silu);
  for (const auto& level : *up_blocks) {
    for (const auto& resnet : *level->resnets) {
      h = resnet->forward(cat({h, skips.back()}, 1), temb_silu);
      skips.pop_back();
    }
    if (level->resampler)
      h = level->resampler->conv->forward(upsample_nearest2d(h, {2 * h.size(2), 2 * h.size(3)}));
  }
  return conv_out->forward(conv_norm_out->forward_silu(h));
}

}  // namespace dlf::models
