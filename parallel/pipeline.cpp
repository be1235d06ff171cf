#include <dlf/autograd/grad_mode.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/parallel/pipeline.h>

#include <algorithm>
#include <vector>

namespace dlf::parallel {

std::vector<int> partition_by_cost(std::span<const double> costs, int parts) {
  const int n = static_cast<int>(costs.size());
  DLF_CHECK(parts > 0 && parts <= n, "pipeline: ", n, " layers cannot make ", parts,
            " non-empty stages");
  // Whether runs of at most `cap` each, filled greedily from the back, cover the stack with
  // `parts` runs; the cuts they make. A run stops early when the layers left are only enough to
  // give every earlier run one.
  auto fill = [&](double cap, std::vector<int>& cuts) {
    cuts.assign(parts + 1, 0);
    cuts[parts] = n;
    int end = n;
    for (int p = parts - 1; p >= 0; --p) {
      int begin = end;
      double run = 0;
      while (begin > p && (begin == end || run + costs[begin - 1] <= cap)) run += costs[--begin];
      if (p == 0 && begin > 0) return false;
      if (run > cap) return false;
      cuts[p] = begin;
      end = begin;
    }
    return true;
  };
  // The best cap is the cost of some contiguous run: search the sorted candidates.
  std::vector<double> caps;
  for (int i = 0; i < n; ++i) {
    double run = 0;
    for (int j = i; j < n; ++j) caps.push_back(run += costs[j]);
  }
  std::sort(caps.begin(), caps.end());
  std::vector<int> cuts;
  size_t lo = 0, hi = caps.size() - 1;  // fill(caps[hi]) always succeeds: one run may take all
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (fill(caps[mid], cuts)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  fill(caps[lo], cuts);
  return cuts;
}

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
      if (!step.forward_only) input.requires_grad_();
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

  if (step.forward_only) {
    autograd::NoGradGuard no_grad;
    for (int i = 0; i < m; ++i) {
      forward(i);
      inputs[i] = outputs[i] = Tensor();
    }
  } else if (step.schedule == PipelineSchedule::gpipe) {
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
