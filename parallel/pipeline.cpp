#include <dlf/core/ops/elementwise.h>
#include <dlf/parallel/pipeline.h>

#include <algorithm>
#include <vector>

namespace dlf::parallel {

double run_pipeline(Communicator& pp, const PipelineStep& step,
                    const std::function<Tensor(const Tensor& input, int m)>& stage) {
  const int stages = pp.size(), s = pp.rank(), m = step.micro_batches;
  const bool first = s == 0, last = s == stages - 1;
  DLF_CHECK(m > 0, "pipeline: micro_batches must be positive");
  const Device device = pp.device();
  std::vector<Tensor> inputs(m), outputs(m);
  double loss_sum = 0;

  auto forward = [&](int i) {
    Tensor input;
    if (!first) {
      input = Tensor::empty(step.activation_shape, step.activation_dtype, device);
      pp.recv(input, s - 1);
      input.requires_grad_();
    }
    Tensor out = stage(input, i);
    if (last) {
      loss_sum += out.item<double>();
      out = out * (1.0 / m);
    } else {
      pp.send(out.detach().contiguous(), s + 1);
    }
    inputs[i] = input;
    outputs[i] = out;
  };
  auto backward = [&](int i) {
    if (last) {
      outputs[i].backward();
    } else {
      Tensor grad = Tensor::empty(step.activation_shape, step.activation_dtype, device);
      pp.recv(grad, s + 1);
      outputs[i].backward(grad);
    }
    if (!first) pp.send(inputs[i].grad().contiguous(), s - 1);
    inputs[i] = Tensor();  // the micro-batch's activations go now
    outputs[i] = Tensor();
  };

  if (step.schedule == PipelineSchedule::gpipe) {
    for (int i = 0; i < m; ++i) forward(i);
    for (int i = 0; i < m; ++i) backward(i);
  } else {
    const int warmup = std::min(stages - s - 1, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) forward(f);
    for (; f < m; ++f, ++b) {
      forward(f);
      backward(b);
    }
    for (; b < m; ++b) backward(b);
  }
  return last ? loss_sum / m : 0;
}

}  // namespace dlf::parallel
