// The zoo's example steps, from each family's record.
#include <dlf/models/example_step.h>
#include <dlf/models/family.h>

#include "families.h"

namespace dlf::models {
namespace {

// The step of `model` with `loss` on `b`, the batch moved to the default device.
ExampleStep step_of(std::shared_ptr<nn::Module> model,
                    std::function<Tensor(const nn::Module&, const std::vector<Tensor>&)> loss,
                    ExampleBatch b, const std::string& unit) {
  const Device device = default_device();
  for (Tensor& t : b.batch) t = t.to(device);
  const int64_t rows = b.batch[0].size(0);
  auto step_loss = [model, loss = std::move(loss)](const std::vector<Tensor>& batch) {
    return loss(*model, batch);
  };
  return {std::move(model),
          std::move(b.batch),
          std::move(step_loss),
          rows,
          b.seq,
          unit == "tok" ? rows * b.seq : rows,
          unit + "/s"};
}

// The batch drawn on the host (masking reads tokens there).
template <typename Draw>
ExampleBatch on_host(Draw draw) {
  DefaultDeviceGuard host(kCPU);
  return draw();
}

}  // namespace

ExampleStep example_step(const std::string& name, int64_t batch, int64_t seq, Generator& data,
                         const nn::LinearMaker& linears) {
  const Family& family = family_of(name);
  std::shared_ptr<nn::Module> model = family.build(name, {.linears = linears});
  ExampleBatch b = on_host([&] { return family.example_batch(name, batch, seq, data); });
  return step_of(std::move(model), family.loss, std::move(b), family.unit);
}

ExampleStep gpt_example_step(const GPTConfig& config, int64_t batch, int64_t seq, Generator& data) {
  std::shared_ptr<nn::Module> model = std::make_shared<GPT>(config);
  ExampleBatch b = on_host([&] { return gpt_batch(config, batch, seq, data); });
  return step_of(std::move(model), gpt_family().loss, std::move(b), "tok");
}

}  // namespace dlf::models
