// The Vision Transformer (Dosovitskiy et al. 2021) as timm builds it: a patch embedding (a conv
// whose kernel and stride are the patch), a class token and learned position embeddings,
// pre-LayerNorm blocks (eps 1e-6, bidirectional attention, GELU (erf) MLP), a final LayerNorm
// and a linear head on the class token. Parameter names and shapes are timm's (cls_token,
// pos_embed, patch_embed.proj.weight, blocks.0.norm1.weight, blocks.0.attn.qkv.weight, ...,
// norm.weight, head.weight), so its state_dicts map one to one. No dropout.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/conv.h>
#include <dlf/nn/transformer.h>
#include <dlf/parallel/tp_sharding.h>

namespace dlf::models {

/// A ViT's sizes (timm's VisionTransformer arguments).
struct ViTConfig {
  std::string name;  ///< the registry's name ("vit-tiny")
  /// image side and channels, patch side, width, blocks, heads, classes and the MLP's width over
  /// dim
  ///@{
  int64_t image = 28, channels = 1, patch = 4, dim = 0, depth = 0, heads = 0, classes = 10,
          mlp_ratio = 4;
  ///@}
  DType dtype = DType::f32;  ///< of the parameters
  /// Makes the blocks' Linear layers; empty: whole ones. parallel::megatron_linears(group)
  /// splits their heads and MLP over a tensor-parallel group (the rest stays whole).
  nn::LinearMaker linears = {};
};

/// vit-tiny (dim 192, depth 6, 3 heads) and vit-small (timm's small: dim 384, depth 12,
/// 6 heads), both for 28x28x1 images (Fashion-MNIST) in 4x4 patches and 10 classes.
const std::vector<ViTConfig>& vit_configs();
/// The config named `name`; a dlf::Error lists the known names otherwise.
ViTConfig vit_config(const std::string& name);
/// How tensor parallelism splits the ViT parameter `name`: each block's qkv by heads and fc1 by
/// output rows, proj and fc2 by input columns.
parallel::Split vit_tensor_parallel_split(const std::string& name);

/// A block of this config: pre-LayerNorm (eps 1e-6), bidirectional, GELU (erf), timm's names.
nn::TransformerOptions vit_block_options(const ViTConfig& config);

/// Images [B, C, H, W] -> patch embeddings [B, (H/patch)·(W/patch), dim], row-major patches:
/// proj (a conv whose kernel and stride are the patch) flattened, as timm's PatchEmbed.
class PatchEmbed : public nn::Module {
 public:
  /// Patch x patch convolution of stride patch, channels -> dim.
  explicit PatchEmbed(const ViTConfig& config);
  Tensor forward(const Tensor& images) const;  ///< images [B, C, H, W] -> [B, patches, dim]

  std::shared_ptr<nn::Conv2d> proj;  ///< the patchifying convolution
  int64_t patch;                     ///< its side
};

/// A Vision Transformer classifier, timm's layout and names.
class VisionTransformer : public nn::Module {
 public:
  /// Initialised as timm does for pos_embed N(0, 0.02), cls_token N(0, 1e-6) and the
  /// LayerNorms (1 and 0); the Linear layers and the patch conv as PyTorch's defaults
  /// (U(±1/sqrt(in)) for weights and biases), as the peer's ViT: timm's N(0, 0.02) Linear
  /// weights learn more slowly in a short run. Draws from `gen` (the default generator if null).
  explicit VisionTransformer(ViTConfig config, Generator* gen = nullptr);

  /// Images [B, channels, image, image] -> logits [B, classes] (from the class token).
  Tensor forward(const Tensor& images) const;
  /// Mean cross-entropy of forward(images) against labels i64 [B].
  Tensor loss(const Tensor& images, const Tensor& labels) const;

  /// The sizes it was built with.
  const ViTConfig& config() const { return config_; }
  int64_t num_patches() const;  ///< (image / patch)^2

  /// [1, 1, dim] and [1, num_patches + 1, dim]
  ///@{
  Tensor cls_token, pos_embed;
  ///@}
  std::shared_ptr<PatchEmbed> patch_embed;                       ///< images -> patch tokens
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> blocks;  ///< the blocks, blocks.{i}
  std::shared_ptr<nn::LayerNorm> norm;                           ///< the final LayerNorm
  std::shared_ptr<nn::Linear> head;  ///< dim -> classes, on the class token

 private:
  ViTConfig config_;
};

}  // namespace dlf::models
