// `dlf train` on Fashion-MNIST (Debian's dataset-fashion-mnist), data-parallel: `vit-*`
// classifies the images (the score: test accuracy over the whole test set), `unet-*` learns
// DDPM's noise prediction on them padded to 32 x 32 in [-1, 1].
#pragma once
#include <memory>

#include <dlf/nn/data/idx.h>

#include "task.h"

namespace dlf::app {

/// The training or test images as the model family takes them: ViT's normalised with the
/// dataset's mean and std, UNet's padded to 32 x 32 and scaled to [-1, 1].
nn::data::ImageDataset prepared_images(bool vit, bool train, const RunConfig& run);

std::unique_ptr<RankTask> make_vit_task(const TaskSetup& setup, const nn::data::ImageDataset& train,
                                        const nn::data::ImageDataset& test);
std::unique_ptr<RankTask> make_unet_task(const TaskSetup& setup,
                                         const nn::data::ImageDataset& train,
                                         const nn::data::ImageDataset& test);

}  // namespace dlf::app
