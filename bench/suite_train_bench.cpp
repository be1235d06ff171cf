// The training-step cases of `dlf bench run` for every family (perf/suite.cpp lists them; their
// names say what they run, bench/train_case.h): one step = zero_grad, the loss on one fixed
// random batch (models::example_step), backward, AdamW (lr 3e-4, betas 0.9/0.95, weight decay
// 0.1, as the peer's), eager in fp32 or bf16 (autocast), with every block recomputed, or
// compiled (the whole step but zero_grad as one captured graph, as dlf train --compile runs it).
// Besides tok/s or img/s, the line carries the FLOPs one step dispatches (forward and backward,
// counted without the recompute's extra forward), so the suite reports the step's share of the
// run's matmul peak.
//
// Unlike suite_bench it uses today's API (example_step, graph mode): at a past revision it may
// not build, and `dlf bench run` then leaves its cases out.
#include <memory>
#include <optional>

#include "bench/suite_harness.h"
#include "bench/train_case.h"

using namespace dlf;

namespace {

bench::suite::Case train_case(const std::string& name) {
  const bench::TrainCase t = bench::parse_train_case(name);
  Generator data(1234);
  auto w =
      std::make_shared<models::ExampleStep>(models::example_step(t.model, t.batch, t.seq, data));
  const DType precision = t.precision == "bf16" ? DType::bf16 : DType::f32;
  auto opt = std::make_shared<nn::optim::AdamW>(
      std::vector<nn::optim::ParamGroup>{{.params = w->model->parameters(), .weight_decay = 0.1}},
      nn::optim::AdamWOptions{.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  bench::suite::Case c{.bench = "train",
                       .flops = bench::suite::step_flops([w, precision] {
                         AutocastGuard autocast(autocast_for(precision, kCPU));
                         return w->loss(w->batch);
                       }),
                       .items = double(w->items),
                       .item_unit = w->unit};
  opt->zero_grad();
  if (t.mode == "compiled") {
    opt->init_state();
    auto compiled =
        std::make_shared<graph::Compiled>(graph::backward_step(w->loss, [opt] { opt->update(); }));
    c.call = [w, opt, compiled, precision] {
      opt->zero_grad();
      opt->begin_step();
      AutocastGuard autocast(autocast_for(precision, kCPU));
      (*compiled)(w->batch);
    };
    return c;
  }
  if (t.mode == "recompute") w->model->recompute(autograd::Recompute::full);
  c.call = [w, opt, precision] {
    opt->zero_grad();
    Tensor loss;
    {
      AutocastGuard autocast(autocast_for(precision, kCPU));
      loss = w->loss(w->batch);
    }
    loss.backward();
    opt->step();
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite::main_of(
      argc, argv, "suite_train_bench",
      "dlf bench run's training steps: train MODEL fp32|bf16 [compiled|recompute] batch B[xT]",
      [] {
        return std::vector<std::string>{"train MODEL fp32|bf16 [compiled|recompute] batch B[xT]"};
      },
      [](const bench::suite::Options& o) {
        const bench::suite::Case c = train_case(o.name);
        bench::suite::print_line(c, o, bench::suite::measure(c, o));
      });
}
