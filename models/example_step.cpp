// The zoo's example steps, one builder per family.
#include <dlf/core/factory.h>
#include <dlf/models/ddpm.h>
#include <dlf/models/example_step.h>
#include <dlf/models/registry.h>
#include <dlf/nn/data/masking.h>

#include <algorithm>

namespace dlf::models {
namespace {

// The model on `device`; batches are drawn on the host (masking reads tokens there).
template <typename Model, typename Config>
std::shared_ptr<Model> build_on(Device device, const Config& config) {
  DefaultDeviceGuard on(device);
  return std::make_shared<Model>(config);
}

ExampleStep gpt_step(const GPTConfig& config, int64_t batch, int64_t seq, Generator& data,
                     Device device) {
  const bool small_batch = config.vocab > 256;  // the peer's gpt-small runs 4 x 256
  const int64_t B = batch ? batch : (small_batch ? 4 : 8);
  const int64_t T = seq ? seq : std::min<int64_t>(config.context, 256);
  auto model = build_on<GPT>(device, config);
  const Tensor x = randint(0, config.vocab, {B, T}, {.dtype = DType::i64}, &data);
  const Tensor y = randint(0, config.vocab, {B, T}, {.dtype = DType::i64}, &data);
  return {model,  {x, y}, [model](const std::vector<Tensor>& b) { return model->loss(b[0], b[1]); },
          B,      T,      B * T,
          "tok/s"};
}

ExampleStep bert_step(const std::string& name, int64_t batch, int64_t seq, Generator& data,
                      const nn::LinearMaker& linears, Device device) {
  BertConfig config = bert_config(name);
  config.linears = linears;
  const int64_t B = batch ? batch : 16, T = seq ? seq : 128;
  auto model = build_on<BertForMaskedLM>(device, config);
  const Tensor tokens = randint(1, config.vocab, {B, T}, {.dtype = DType::i64}, &data);
  const nn::data::MaskedBatch masked =
      nn::data::mask_tokens(tokens, data, kMaskToken, config.vocab);
  return {model,
          {masked.inputs, masked.labels},
          [model](const std::vector<Tensor>& b) { return model->loss(b[0], b[1]); },
          B,
          T,
          B * T,
          "tok/s"};
}

ExampleStep vit_step(const std::string& name, int64_t batch, Generator& data,
                     const nn::LinearMaker& linears, Device device) {
  ViTConfig config = vit_config(name);
  config.linears = linears;
  const int64_t B = batch ? batch : 64, side = config.image / config.patch;
  auto model = build_on<VisionTransformer>(device, config);
  const Tensor x = randn({B, config.channels, config.image, config.image}, {}, &data);
  const Tensor y = randint(0, config.classes, {B}, {.dtype = DType::i64}, &data);
  return {model,
          {x, y},
          [model](const std::vector<Tensor>& b) { return model->loss(b[0], b[1]); },
          B,
          side * side + 1,
          B,
          "img/s"};
}

ExampleStep unet_step(const std::string& name, int64_t batch, Generator& data, Device device) {
  const UNetConfig config = unet_config(name);
  const int64_t B = batch ? batch : 32, S = config.image;
  auto model = build_on<UNet>(device, config);
  auto ddpm = std::make_shared<DDPM>();
  const Tensor x0 = rand({B, config.channels, S, S}, {}, &data) * 2.0 - 1.0;
  const Tensor noise = randn({B, config.channels, S, S}, {}, &data);
  const Tensor t = randint(0, ddpm->steps(), {B}, {.dtype = DType::i64}, &data);
  return {
      model,
      {x0, noise, t},
      [model, ddpm](const std::vector<Tensor>& b) { return ddpm->loss(*model, b[0], b[1], b[2]); },
      B,
      S * S,
      B,
      "img/s"};
}

// The step `build` makes for the default device: the model built there, the batch drawn on the
// host and moved there.
template <typename Build>
ExampleStep on_default_device(Build build) {
  const Device device = default_device();
  ExampleStep step = [&] {
    DefaultDeviceGuard host(kCPU);
    return build(device);
  }();
  for (Tensor& t : step.batch) t = t.to(device);
  return step;
}

}  // namespace

ExampleStep example_step(const std::string& name, int64_t batch, int64_t seq, Generator& data,
                         const nn::LinearMaker& linears) {
  const ModelFamily family = model_family(name);
  DLF_CHECK(!linears || family == ModelFamily::bert || family == ModelFamily::vit,
            "example_step: ", name,
            "'s Linear layers are its own (a GPT is sharded by "
            "DistributedGPT; a UNet is not)");
  return on_default_device([&](Device device) {
    switch (family) {
      case ModelFamily::gpt:
        return gpt_step(gpt_config(name), batch, seq, data, device);
      case ModelFamily::bert:
        return bert_step(name, batch, seq, data, linears, device);
      case ModelFamily::vit:
        return vit_step(name, batch, data, linears, device);
      case ModelFamily::unet:
        return unet_step(name, batch, data, device);
    }
    throw Error("example_step: no step for " + name);
  });
}

ExampleStep gpt_example_step(const GPTConfig& config, int64_t batch, int64_t seq, Generator& data) {
  return on_default_device(
      [&](Device device) { return gpt_step(config, batch, seq, data, device); });
}

}  // namespace dlf::models
