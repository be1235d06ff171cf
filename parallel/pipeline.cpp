#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/parallel/pipeline.h>

#include <algorithm>
#include <string>
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

const char* schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return "gpipe";
    case PipelineSchedule::one_f_one_b:
      return "1f1b";
    case PipelineSchedule::interleaved:
      return "interleaved";
  }
  return "1f1b";
}

PipelineSchedule parse_schedule(std::string_view name) {
  for (PipelineSchedule s :
       {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved})
    if (name == schedule_name(s)) return s;
  throw Error("unknown pipeline schedule '" + std::string(name) +
              "': expected 1f1b, gpipe or interleaved");
}

std::string schedule_label(PipelineSchedule schedule, int virtual_stages) {
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return "GPipe";
    case PipelineSchedule::one_f_one_b:
      return "1F1B";
    case PipelineSchedule::interleaved:
      return "interleaved 1F1B, " + std::to_string(virtual_stages) + " virtual stages";
  }
  return "1F1B";
}

void check_schedule(PipelineSchedule schedule, int virtual_stages, int stages,
                    int64_t micro_batches) {
  if (schedule != PipelineSchedule::interleaved) {
    DLF_CHECK(virtual_stages == 1, "pipeline: ", virtual_stages,
              " virtual stages need the interleaved schedule");
    return;
  }
  DLF_CHECK(virtual_stages >= 2 && stages >= 2 && micro_batches % stages == 0,
            "the interleaved schedule needs at least 2 virtual stages (got ", virtual_stages,
            "), 2 pipeline stages (got ", stages, ") and micro-batches a multiple of them (got ",
            micro_batches, ")");
}

int64_t warmup_forwards(PipelineSchedule schedule, int stages, int stage, int virtual_stages,
                        int64_t micro_batches) {
  const int64_t total = micro_batches * virtual_stages;
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return total;
    case PipelineSchedule::one_f_one_b:
      return std::min<int64_t>(stages - stage - 1, micro_batches);
    case PipelineSchedule::interleaved:
      // m == pp runs every forward first (Megatron-LM's choice).
      return micro_batches == stages
                 ? total
                 : std::min<int64_t>(2 * (stages - stage - 1) + (virtual_stages - 1) * stages,
                                     total);
  }
  return total;
}

PipelinePass pipeline_pass(PipelineSchedule schedule, int k, int stages, int virtual_stages,
                           bool forward) {
  if (schedule != PipelineSchedule::interleaved) return {k, 0};
  const int in_group = k % (stages * virtual_stages);
  const int chunk = in_group / stages;
  return {(k / (stages * virtual_stages)) * stages + in_group % stages,
          forward ? chunk : virtual_stages - 1 - chunk};
}

Tensor run_pipeline(Communicator& pp, const PipelineStep& step, const StageFn& stage) {
  const int stages = pp.size(), s = pp.rank(), m = step.micro_batches;
  const bool interleaved = step.schedule == PipelineSchedule::interleaved;
  const int chunks = interleaved ? step.virtual_stages : 1;
  DLF_CHECK(m > 0, "pipeline: micro_batches must be positive");
  check_schedule(step.schedule, step.virtual_stages, stages, m);
  const int virtual_stages = stages * chunks;
  const Device device = pp.device();
  const int64_t numel = dlf::numel(step.activation_shape);
  Communicator* slices =
      step.slices != nullptr && step.slices->size() > 1 && numel % step.slices->size() == 0
          ? step.slices
          : nullptr;
  // A boundary tensor to `dst`: whole, or this tp rank's slice of it.
  auto send = [&](const Tensor& t, int dst) {
    if (slices == nullptr) return pp.send(t.contiguous(), dst);
    const int64_t part = numel / slices->size();
    pp.send(t.contiguous().view({numel}).narrow(0, slices->rank() * part, part).contiguous(), dst);
  };
  auto recv = [&](int src) {
    if (slices == nullptr) return pp.recv(step.activation_shape, step.activation_dtype, src);
    const Tensor part = pp.recv({numel / slices->size()}, step.activation_dtype, src);
    return slices->allgather(part).view(step.activation_shape).detach();
  };
  // Per (chunk, micro-batch): the input received and the output made.
  std::vector<Tensor> inputs(size_t(m * chunks)), outputs(size_t(m * chunks));
  Tensor loss_sum;  // the last stage's losses, added in f64 in micro-batch order

  auto slot = [m](PipelinePass p) { return size_t(p.chunk * m + p.micro_batch); };
  auto forward = [&](PipelinePass p) {
    const int v = p.chunk * stages + s;  // the virtual stage
    const size_t at = slot(p);
    Tensor input;
    if (v > 0) {
      input = recv((s + stages - 1) % stages);
      if (!step.forward_only) input.requires_grad_();
    }
    Tensor out = stage(input, p.micro_batch, p.chunk);
    if (v == virtual_stages - 1) {
      const Tensor loss = out.detach().to(DType::f64);
      loss_sum = loss_sum.defined() ? loss_sum + loss : loss;
      out = out * (1.0 / m);
    } else {
      send(out.detach(), (s + 1) % stages);
    }
    inputs[at] = input;
    outputs[at] = out;
  };
  auto drop = [&](PipelinePass p) {  // the micro-batch's activations go now
    inputs[slot(p)] = Tensor();
    outputs[slot(p)] = Tensor();
  };
  auto backward = [&](PipelinePass p) {
    const int v = p.chunk * stages + s;
    const size_t at = slot(p);
    if (v == virtual_stages - 1) {
      outputs[at].backward();
    } else {
      outputs[at].backward(recv((s + 1) % stages));
    }
    if (v > 0) send(inputs[at].grad(), (s + stages - 1) % stages);
    drop(p);
  };

  auto mean_loss = [&] {
    return s == stages - 1 ? loss_sum / double(m)
                           : zeros({}, {.dtype = DType::f64, .device = device});
  };

  // This rank's passes in order, and how many forwards run before the first backward.
  const int total = m * chunks;
  const auto pass = [&](int k, bool fwd) {
    return pipeline_pass(step.schedule, k, stages, chunks, fwd);
  };
  if (step.forward_only) {
    autograd::NoGradGuard no_grad;
    for (int k = 0; k < total; ++k) {
      const PipelinePass p = pass(k, true);
      forward(p);
      drop(p);
    }
    return mean_loss();
  }
  const int warmup = int(warmup_forwards(step.schedule, stages, s, chunks, m));
  int f = 0, b = 0;
  for (; f < warmup; ++f) forward(pass(f, true));
  for (; f < total; ++f, ++b) {
    forward(pass(f, true));
    backward(pass(b, false));
  }
  for (; b < total; ++b) backward(pass(b, false));
  return mean_loss();
}

}  // namespace dlf::parallel
