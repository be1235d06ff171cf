// A DDPM noise-prediction UNet as diffusers' UNet2DModel builds it: conv_in, a sinusoidal
// timestep embedding through time_embedding.linear_{1,2}, down blocks of residual blocks
// (GroupNorm, SiLU, 3x3 convs, a projection of the time embedding) each ending in a stride-2
// conv but the last, a mid block (residual, single-head self-attention, residual) at the lowest
// resolution, up blocks that eat the down path's outputs as skips (concatenated) and end in a
// nearest x2 upsampling and a 3x3 conv but the last, and GroupNorm, SiLU, conv_out. Parameter
// names and shapes are diffusers' (down_blocks.1.resnets.0.conv_shortcut.weight, ...,
// mid_block.attentions.0.to_out.0.weight), so its checkpoints map one to one.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/conv.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>

namespace dlf::models {

/// A UNet's sizes (diffusers' UNet2DModel arguments).
struct UNetConfig {
  std::string name;              ///< the registry's name ("unet-small")
  int64_t image = 32;            ///< height and width of the images it is trained on
  int64_t channels = 1;          ///< of the images
  int64_t base = 64;             ///< channels of conv_in, and of the sinusoidal timestep embedding
  int64_t layers_per_block = 2;  ///< resnet blocks per level
  int64_t groups = 32;           ///< GroupNorm groups
  int64_t time_dim = 256;        ///< width of the timestep embedding after its MLP
  std::vector<int64_t> mults = {1, 2, 2};  ///< channels of each level, times base
  DType dtype = DType::f32;                ///< of the parameters
};

/// The named configs: unet-small is the peer's (6,138,369 parameters), unet-tiny a quick one.
const std::vector<UNetConfig>& unet_configs();
/// The config named `name`; a dlf::Error lists the known names otherwise.
UNetConfig unet_config(const std::string& name);

/// GroupNorm, SiLU, conv1, + time_emb_proj(SiLU(temb)), GroupNorm, SiLU, conv2; plus the input
/// (through a 1x1 conv_shortcut when the channel count changes).
class ResnetBlock : public nn::Module {
 public:
  /// In -> out channels, the time embedding projected onto out.
  ResnetBlock(int64_t in, int64_t out, const UNetConfig& config);
  /// x [B, in, H, W], temb_silu = SiLU(time embedding) [B, time_dim] -> [B, out, H, W].
  Tensor forward(const Tensor& x, const Tensor& temb_silu) const;
  bool is_block() const override { return true; }

  /// GroupNorms before each conv
  ///@{
  std::shared_ptr<nn::GroupNorm> norm1, norm2;
  ///@}
  /// the convs; conv_shortcut (1x1) only when the channels change, else null
  ///@{
  std::shared_ptr<nn::Conv2d> conv1, conv2, conv_shortcut;
  ///@}
  std::shared_ptr<nn::Linear> time_emb_proj;  ///< time_dim -> out, added per channel
};

/// x + to_out.0(softmax(q kᵀ / sqrt(C)) v) over the H·W positions, q, k, v = to_{q,k,v} of
/// group_norm(x): one head.
class SpatialAttention : public nn::Module {
 public:
  /// Single-head self-attention over the pixels of `channels`.
  SpatialAttention(int64_t channels, const UNetConfig& config);
  Tensor forward(const Tensor& x) const;  ///< x [B, C, H, W] -> x + attention, same shape

  std::shared_ptr<nn::GroupNorm> group_norm;  ///< before q, k, v
  /// channels -> channels each
  ///@{
  std::shared_ptr<nn::Linear> to_q, to_k, to_v;
  ///@}
  std::shared_ptr<nn::ModuleList<nn::Linear>> to_out;  ///< to_out.0: channels -> channels
};

/// A 3x3 conv under the name `conv`: a stride-2 downsampler, or the conv after an upsampling.
class ResampleConv : public nn::Module {
 public:
  /// A 3x3 conv of `stride` 2 (down) or after 2x upsampling (stride 1)
  ResampleConv(int64_t channels, int64_t stride, DType dtype);
  std::shared_ptr<nn::Conv2d> conv;  ///< channels -> channels
};

/// A level's resampling.
enum class Resample { none, down, up };

/// One level of the down or up path: `resnets` (the i-th takes inputs[i] channels), then
/// `downsamplers` or `upsamplers` (one ResampleConv) unless `resample` is none.
class UNetLevel : public nn::Module {
 public:
  /// Resnet blocks taking inputs[i] channels to `out`, then the resampler.
  UNetLevel(const std::vector<int64_t>& inputs, int64_t out, Resample resample,
            const UNetConfig& config);

  /// Layers_per_block (up: + 1) resnet blocks.
  std::shared_ptr<nn::ModuleList<ResnetBlock>> resnets;
  std::shared_ptr<ResampleConv> resampler;  ///< null when the level does not resample
};

/// time_embedding: linear_2(SiLU(linear_1(the sinusoidal embedding))).
class TimestepEmbedding : public nn::Module {
 public:
  explicit TimestepEmbedding(const UNetConfig& config);  ///< base -> time_dim -> time_dim
  /// Integer timesteps t [B] -> [B, time_dim].
  Tensor forward(const Tensor& t) const;

  /// the MLP after the sinusoidal embedding
  ///@{
  std::shared_ptr<nn::Linear> linear_1, linear_2;
  ///@}
};

/// mid_block: resnets.0, attentions.0, resnets.1 at the lowest resolution.
class MidBlock : public nn::Module {
 public:
  MidBlock(int64_t channels,
           const UNetConfig& config);  ///< resnet, attention, resnet of `channels`
  /// X [B, C, h, w], SiLU(time embedding) -> [B, C, h, w].
  Tensor forward(const Tensor& x, const Tensor& temb_silu) const;

  std::shared_ptr<nn::ModuleList<SpatialAttention>> attentions;  ///< one per resnet after the first
  std::shared_ptr<nn::ModuleList<ResnetBlock>> resnets;          ///< two, around the attention
};

/// The diffusion UNet of Hugging Face's UNet2DModel (DDPM), its names diffusers'.
class UNet : public nn::Module {
 public:
  /// PyTorch's default init (convs and linears uniform in ±1/sqrt(fan_in), GroupNorm 1 and 0),
  /// drawing from `gen` (the default generator if null).
  explicit UNet(UNetConfig config, Generator* gen = nullptr);

  /// Noisy images x [B, channels, H, W] (H and W divisible by 2^(levels-1)) and integer
  /// timesteps t [B] -> the predicted noise [B, channels, H, W].
  Tensor forward(const Tensor& x, const Tensor& t) const;

  /// The sizes it was built with.
  const UNetConfig& config() const { return config_; }

  /// Image channels -> base, and base -> image channels.
  ///@{
  std::shared_ptr<nn::Conv2d> conv_in, conv_out;
  ///@}
  std::shared_ptr<TimestepEmbedding> time_embedding;  ///< the sinusoidal timestep's two Linears
  /// One level per mult, down then up.
  ///@{
  std::shared_ptr<nn::ModuleList<UNetLevel>> down_blocks, up_blocks;
  ///@}
  std::shared_ptr<MidBlock> mid_block;  ///< resnet, attention, resnet at the lowest resolution
  std::shared_ptr<nn::GroupNorm> conv_norm_out;  ///< before conv_out, with a SiLU

 private:
  UNetConfig config_;
};

/// diffusers' get_timestep_embedding as UNet2DModel calls it (flip_sin_to_cos, shift 0):
/// [cos(t·f_k), sin(t·f_k)] with f_k = exp(-ln(10000)·k / (dim/2)), k < dim/2; t [B] integer
/// -> [B, dim] of `dtype`.
Tensor timestep_embedding(const Tensor& t, int64_t dim, DType dtype);

}  // namespace dlf::models
