#include "test_util.h"

#include <dlf/device/sim_device.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>

#include <unistd.h>

#include <filesystem>

using namespace dlf;
using namespace dlf::nn::optim;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

Tensor param(std::vector<double> values) {
  Tensor p = from_vector(values);
  p.requires_grad_();
  return p;
}

// Gives p the gradient g (as backward would) and runs one step.
void step_with(Optimizer& opt, Tensor& p, std::vector<double> g) {
  p.set_grad(from_vector(g));
  opt.step();
}

}  // namespace

TEST_CASE("SGD, with momentum and Nesterov, against hand-computed steps") {
  Tensor p = param({1.0});
  SGD plain({p}, {.lr = 0.1});
  step_with(plain, p, {0.5});
  check_close(p, {0.95}, {1}, 1e-12);

  // Constant gradient 1 from 0, lr 0.1, momentum 0.9: buf 1 then 1.9.
  Tensor q = param({0.0});
  SGD momentum({q}, {.lr = 0.1, .momentum = 0.9});
  step_with(momentum, q, {1});
  check_close(q, {-0.1}, {1}, 1e-12);
  step_with(momentum, q, {1});
  check_close(q, {-0.29}, {1}, 1e-12);

  // Nesterov steps along g + momentum·buf: 1.9, then 1 + 0.9·1.9 = 2.71.
  Tensor r = param({0.0});
  SGD nesterov({r}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  step_with(nesterov, r, {1});
  check_close(r, {-0.19}, {1}, 1e-12);
  step_with(nesterov, r, {1});
  check_close(r, {-0.461}, {1}, 1e-12);

  // L2 weight decay adds wd·p to the gradient: 0.5 + 0.1·2 = 0.7.
  Tensor s = param({2.0});
  SGD decay({s}, {.lr = 0.1, .weight_decay = 0.1});
  step_with(decay, s, {0.5});
  check_close(s, {1.93}, {1}, 1e-12);
  check_error([&] { SGD({s}, {.nesterov = true}); }, {"Nesterov", "momentum"});
}

TEST_CASE("Adam and AdamW against hand-computed steps") {
  // A constant gradient 0.5: bias-corrected m = 0.5 and v = 0.25, so each step moves by lr.
  Tensor p = param({1.0});
  Adam adam({p}, {.lr = 0.1});
  step_with(adam, p, {0.5});
  check_close(p, {0.9}, {1}, 1e-7);
  step_with(adam, p, {0.5});
  check_close(p, {0.8}, {1}, 1e-7);
  nn::NamedTensors state = adam.state_dict();
  REQUIRE(state.size() == 3);
  check_close(state[1].second, {0.095}, {1}, 1e-12);                       // exp_avg after 2 steps
  check_close(state[2].second, {0.25 * (1 - 0.999 * 0.999)}, {1}, 1e-12);  // exp_avg_sq

  // AdamW decays the weight first: 1·(1 - 0.1·0.1) = 0.99, then the Adam step of 0.1.
  Tensor w = param({1.0});
  AdamW adamw({w}, {.lr = 0.1, .weight_decay = 0.1});
  step_with(adamw, w, {0.5});
  check_close(w, {0.89}, {1}, 1e-7);

  // Plain Adam folds the decay into the gradient: 0.5 + 0.1·1 = 0.6, so v = 0.001·0.36.
  Tensor l2 = param({1.0});
  Adam coupled({l2}, {.lr = 0.1, .weight_decay = 0.1});
  step_with(coupled, l2, {0.5});
  check_close(coupled.state_dict()[2].second, {0.00036}, {1}, 1e-12);
}

TEST_CASE("decay groups leave biases and norm gains undecayed") {
  nn::NamedTensors named = {{"fc.weight", param({1, 2}).view({1, 2})},
                            {"fc.bias", param({0})},
                            {"ln.weight", param({1})}};
  std::vector<ParamGroup> groups = decay_groups(named, 0.1);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].params.size() == 1);
  CHECK(groups[0].weight_decay == 0.1);
  CHECK(groups[1].params.size() == 2);
  CHECK(groups[1].weight_decay == 0);
}

TEST_CASE("optimizer state round-trips: a resumed run matches an unbroken one bit for bit") {
  // Runs steps [first, last) with gradients that depend on the global step.
  auto run = [](int first, int last, const nn::NamedTensors* resume_from, nn::NamedTensors* save) {
    Tensor p = param({1.0, -2.0});
    AdamW opt({p}, {.lr = 0.05, .weight_decay = 0.01});
    if (resume_from) {
      nn::NamedTensors state(resume_from->begin(), resume_from->end() - 1);
      opt.load_state_dict(state);
      autograd::NoGradGuard no_grad;
      p.copy_(resume_from->back().second);  // the parameter, saved last
    }
    for (int k = first; k < last; ++k) step_with(opt, p, {0.3 * (k + 1), -0.2 * k});
    if (save) {
      *save = opt.state_dict();
      save->emplace_back("param", p.clone());
    }
    return p;
  };
  nn::NamedTensors saved;
  run(0, 2, nullptr, &saved);
  CHECK(saved.front().second.item<int64_t>() == 2);
  check_close(run(2, 4, &saved, nullptr), run(0, 4, nullptr, nullptr), 0, 0);

  Tensor p = param({0, 0});
  Adam fresh({p});
  nn::NamedTensors bad(saved.begin(), saved.end() - 1);
  bad[1].second = zeros({3});
  check_error([&] { fresh.load_state_dict(bad); }, {"0.0.exp_avg", "[3]", "[2]"});
  nn::NamedTensors extra = {{"step", from_vector<int64_t>({1}, {})}, {"5.0.exp_avg", zeros({2})}};
  check_error([&] { fresh.load_state_dict(extra); }, {"unexpected", "5.0.exp_avg"});
  check_error([&] { fresh.load_state_dict({}); }, {"missing", "step"});
}

namespace {

struct TwoLayers : nn::Module {
  nn::Linear fc1{3, 4}, fc2{4, 1};
  TwoLayers() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
};

// `steps` AdamW steps of `net` on a fixed regression batch.
void train_steps(TwoLayers& net, Optimizer& opt, int steps) {
  const Tensor x = from_vector<float>({1, 0, -1, 0.5f, 2, 1, -1, 1, 0, 0, 1, -2}, {4, 3});
  const Tensor y = from_vector<float>({1, -1, 0.5f, 2}, {4, 1});
  for (int i = 0; i < steps; ++i) {
    const Tensor loss = (net.fc2(net.fc1(x).tanh()) - y).square().mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

}  // namespace

TEST_CASE("an optimizer resumes from a checkpoint's state as saved, named by parameter") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlf_optim_resume_" + std::to_string(::getpid()));
  const AdamWOptions options{.lr = 0.05, .weight_decay = 0.1};
  manual_seed(4);
  TwoLayers whole;
  AdamW whole_opt(whole.parameters(), options);
  train_steps(whole, whole_opt, 6);

  manual_seed(4);
  TwoLayers first;
  AdamW first_opt(first.parameters(), options);
  train_steps(first, first_opt, 3);
  nn::save_checkpoint(dir.string(),
                      {.model = first.state_dict(), .optimizer = first_opt.state_dict(first)});

  // A fresh model and an optimizer that groups and orders the parameters otherwise.
  manual_seed(9);
  TwoLayers resumed;
  std::vector<Tensor> reordered = resumed.parameters();
  std::reverse(reordered.begin(), reordered.end());
  AdamW resumed_opt(
      {{.params = {reordered[0], reordered[1]}}, {.params = {reordered[2], reordered[3]}}},
      options);
  const nn::Checkpoint ckpt = nn::load_checkpoint(dir.string());
  resumed.load_state_dict(ckpt.model);
  check_error([&] { resumed_opt.load_state_dict(ckpt.optimizer); },
              {"named by parameter", "load_state_dict(state, model)"});
  resumed_opt.load_state_dict(ckpt.optimizer, resumed);
  CHECK(resumed_opt.steps() == 3);
  train_steps(resumed, resumed_opt, 3);
  for (const auto& [name, t] : whole.state_dict()) {
    INFO(name);
    for (const auto& [other, u] : resumed.state_dict())
      if (other == name) CHECK(test::bitwise_equal(t, u));
  }
  std::filesystem::remove_all(dir);

  // A mismatch names the slot, its parameter and what to pass.
  TwoLayers other;
  AdamW other_opt(other.parameters(), options);
  check_error([&] { other_opt.load_state_dict(ckpt.optimizer, first); },
              {"'fc1.weight.exp_avg'", "no parameter 'fc1.weight'", "pass the model"});
  nn::Linear lone(3, 4);
  AdamW lone_opt(lone.parameters(), options);
  check_error([&] { lone_opt.load_state_dict(ckpt.optimizer, lone.named_parameters()); },
              {"'fc1.weight.exp_avg'", "no parameter 'fc1.weight'"});
  SGD sgd(other.parameters(), {.momentum = 0.9});
  check_error([&] { sgd.load_state_dict(ckpt.optimizer, other); },
              {"'fc1.weight.exp_avg'", "keeps momentum_buffer", "not 'exp_avg'"});
  check_error(
      [&] {
        other_opt.load_state_dict({{"exp_avg_of_nothing", zeros({1})}}, other);
      },
      {"'exp_avg_of_nothing'", "keeps exp_avg, exp_avg_sq"});
  nn::NamedTensors wrong = ckpt.optimizer;
  for (auto& [name, t] : wrong)
    if (name == "fc2.bias.exp_avg") t = zeros({3});
  check_error([&] { other_opt.load_state_dict(wrong, other); },
              {"'fc2.bias.exp_avg'", "[3]", "parameter 'fc2.bias' has [1]"});
}

TEST_CASE("clip_grad_norm scales gradients to the bound and reports the norm before") {
  Tensor a = param({0, 0}), b = param({0});
  a.set_grad(from_vector<double>({3, 0}));
  b.set_grad(from_vector<double>({4}));
  CHECK(clip_grad_norm({a, b}, 1.0) == doctest::Approx(5.0));
  check_close(a.grad(), {0.6, 0}, {2}, 1e-6);
  check_close(b.grad(), {0.8}, {1}, 1e-6);
  CHECK(clip_grad_norm({a, b}, 10.0) == doctest::Approx(1.0).epsilon(1e-5));  // left alone
  check_close(b.grad(), {0.8}, {1}, 1e-6);
}

TEST_CASE("clip_grad_norm_on_device: clip_grad_norm's gradients bit for bit, no host read") {
  // Clipping; not; and a norm a hair under the bound, where max/(norm + 1e-6) is below 1 but
  // eager leaves the gradients alone.
  const auto gradients = [] {
    Generator gen(3);
    std::vector<Tensor> g;
    for (const Shape& shape : {Shape{70001}, Shape{3, 5}, Shape{1}})
      g.push_back(randn(shape, {}, &gen));
    return g;
  };
  const std::vector<Tensor> g0 = gradients();
  const double hair = std::sqrt(sum_squares({g0[0], g0[2]}).item<double>()) + 3e-7;
  for (const double max_norm : {0.3, 500.0, hair}) {
    std::vector<Tensor> host, device;
    for (const Tensor& g : gradients()) {
      for (auto* params : {&host, &device}) {
        Tensor p = zeros(g.shape());
        p.requires_grad_();
        p.set_grad(g.clone());
        params->push_back(p);
      }
    }
    device[1].set_grad(Tensor());  // a parameter without a gradient is left out of both
    host[1].set_grad(Tensor());
    const double norm = clip_grad_norm(host, max_norm);
    if (max_norm == hair) REQUIRE(norm < hair);
    if (max_norm == hair) REQUIRE(max_norm / (norm + 1e-6) < 1);
    const Tensor on_device = clip_grad_norm_on_device(device, max_norm);
    CHECK(on_device.dtype() == DType::f64);
    CHECK(on_device.item<double>() == norm);
    for (const size_t i : {size_t(0), size_t(2)})
      CHECK(device[i].grad().to_vector<float>() == host[i].grad().to_vector<float>());
  }
  CHECK_FALSE(clip_grad_norm_on_device({param({1.0})}, 1.0).defined());  // no gradient at all
}

TEST_CASE("sum_squares of many tensors: each one's sum, added in order") {
  const Tensor a = randn({40000}), b = randn({3, 7}).to(DType::bf16);
  CHECK(sum_squares({a, b}).item<double>() ==
        0.0 + sum_squares(a).item<double>() + sum_squares(b).item<double>());
  check_error([] { sum_squares(std::vector<Tensor>{}); }, {"no tensors"});
}

TEST_CASE("Adam reads its learning rate and step from begin_step's tensor: a split step") {
  // begin_step() then update() is step(), under a changing learning rate.
  Tensor a = param({1.0}), b = param({1.0});
  AdamW whole({a}, {.lr = 0.1, .weight_decay = 0.1});
  AdamW split({b}, {.lr = 0.1, .weight_decay = 0.1});
  CHECK(split.capturable());
  CHECK_FALSE(SGD({param({1.0})}).capturable());
  split.init_state();
  REQUIRE(split.state_dict().size() == 3);  // the step and two zero moments, before any update
  check_close(split.state_dict()[1].second, {0.0}, {1}, 0);
  check_error([&] { split.update(); }, {"update() before begin_step()"});
  for (int i = 0; i < 3; ++i) {
    whole.set_lr(0.1 / (i + 1));
    split.set_lr(0.1 / (i + 1));
    step_with(whole, a, {0.5 - i});
    b.set_grad(from_vector<double>({0.5 - i}));
    split.begin_step();
    split.update();
    CHECK(a.to_vector<double>() == b.to_vector<double>());
  }
  CHECK(whole.steps() == split.steps());
}

TEST_CASE("a captured update needs its state first; a loaded state goes into the same tensors") {
  Tensor p = param({1.0, 2.0});
  AdamW opt({p}, {.lr = 0.1});
  p.set_grad(from_vector<double>({0.5, 0.5}));
  opt.begin_step();
  check_error([&] { clip_and_update(opt, {p}, 1.0); }, {"init_state()"});
  check_error(
      [&] {
        SGD sgd({p});
        clip_and_update(sgd, {p}, 1.0);
      },
      {"not capturable"});
  opt.init_state();
  const Storage* moment = opt.state(0, 0)[0].storage().get();
  clip_and_update(opt, {p}, 1.0);
  const nn::NamedTensors saved = opt.state_dict();
  opt.load_state_dict(saved);
  CHECK(opt.state(0, 0)[0].storage().get() == moment);  // what a graph holds is still updated
}

TEST_CASE("a parameter group may span devices: each device reads its own lr and step") {
  const Device sim{DeviceType::sim, 13};
  sim::configure(sim, sim_preset("a100-40gb"));
  Tensor a = param({1.0}), b = param({1.0}).to(sim).detach().requires_grad_();
  Tensor c = param({1.0});
  Adam mixed({a, b}, {.lr = 0.1});
  Adam one({c}, {.lr = 0.1});
  for (int i = 0; i < 2; ++i) {
    a.set_grad(from_vector<double>({0.5}));
    b.set_grad(from_vector<double>({0.5}).to(sim));
    step_with(one, c, {0.5});
    mixed.step();
  }
  CHECK(a.to_vector<double>() == c.to_vector<double>());
  CHECK(b.to_vector<double>() == c.to_vector<double>());
}

TEST_CASE("learning-rate schedules") {
  CHECK(warmup_cosine_lr(0, 1.0, 10, 110, 0.1) == doctest::Approx(0.1));
  CHECK(warmup_cosine_lr(9, 1.0, 10, 110, 0.1) == doctest::Approx(1.0));
  CHECK(warmup_cosine_lr(10, 1.0, 10, 110, 0.1) == doctest::Approx(1.0));
  CHECK(warmup_cosine_lr(60, 1.0, 10, 110, 0.1) == doctest::Approx(0.55));  // half way: mean
  CHECK(warmup_cosine_lr(500, 1.0, 10, 110, 0.1) == doctest::Approx(0.1));
  CHECK(step_lr(25, 1.0, 10, 0.5) == doctest::Approx(0.25));
  check_error([] { warmup_cosine_lr(0, 1, 10, 5, 0); }, {"warmup", "total"});
}

TEST_CASE("sum_squares: f64 accumulation in a fixed order, any thread count") {
  // 0² + 1² + ... + (n-1)² = (n-1)n(2n-1)/6, exact in f64 for this n.
  const int64_t n = 100000;
  const Tensor x = arange(double(n));
  const double expected = double(n - 1) * double(n) * double(2 * n - 1) / 6;
  CHECK(sum_squares(x).item<double>() == expected);
  CHECK(sum_squares(x.to(DType::bf16).narrow(0, 0, 3)).item<double>() == 5.0);
  const Tensor r = randn({70001});
  const int threads = num_threads();
  set_num_threads(1);
  const double one = sum_squares(r).item<double>();
  set_num_threads(2);
  CHECK(sum_squares(r).item<double>() == one);
  set_num_threads(threads);
  test::check_error([] { sum_squares(arange(3.0, {.dtype = DType::i64})); },
                    {"sum_squares: needs a floating tensor"});
}

TEST_CASE("optimizers read as PyTorch's: defaults, parameters() directly, per-group rates") {
  struct Net : nn::Module {
    Tensor w = register_parameter("w", from_vector<double>({1.0, -1.0}));
  } net;
  AdamW defaults(net.parameters(), {.lr = 1e-3});  // torch.optim.AdamW(model.parameters(), lr=1e-3)
  CHECK(*defaults.param_groups()[0].weight_decay == 0.01);  // torch's AdamW default
  Adam adam(net.parameters());
  CHECK(*adam.param_groups()[0].weight_decay == 0);
  CHECK(adam.lr() == 1e-3);

  // A group without an lr takes the optimizer's; one with its own keeps it.
  Tensor a = param({0.0}), b = param({0.0});
  SGD sgd({{.params = {a}}, {.params = {b}, .lr = 0.01}}, {.lr = 0.1});
  a.set_grad(from_vector<double>({1}));
  b.set_grad(from_vector<double>({1}));
  sgd.step();
  check_close(a, {-0.1}, {1}, 1e-12);
  check_close(b, {-0.01}, {1}, 1e-12);
  check_error([&] { SGD({a}, {.lr = -1}); }, {"lr -1", "not negative"});
}

TEST_CASE("LR schedulers set each group's rate from its initial rate, as torch's do") {
  Tensor a = param({0.0}), b = param({0.0});
  SGD sgd({{.params = {a}}, {.params = {b}, .lr = 0.2}}, {.lr = 0.1});
  StepLR step(sgd, 2, 0.5);
  std::vector<double> seen;
  for (int k = 0; k < 5; ++k) {
    seen.push_back(sgd.param_groups()[0].lr.value());
    CHECK(*sgd.param_groups()[1].lr == doctest::Approx(2 * seen.back()));
    step.step();
  }
  CHECK(seen == std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.025});

  SGD cosine_sgd({a}, {.lr = 1.0});
  CosineAnnealingLR cosine(cosine_sgd, 4, 0.2);
  cosine.set_step(2);  // halfway: (1 + 0.2) / 2
  CHECK(cosine_sgd.lr() == doctest::Approx(0.6));
  cosine.set_step(9);
  CHECK(cosine_sgd.lr() == 0.2);

  SGD lambda_sgd({a}, {.lr = 0.5});
  LambdaLR lambda(lambda_sgd, [](int64_t k) { return 1.0 / double(k + 1); });
  lambda.step();
  CHECK(lambda_sgd.lr() == 0.25);

  // dlf train's schedule: warmup, then a cosine to a tenth.
  SGD warm_sgd({a}, {.lr = 2.0});
  WarmupCosineLR warm(warm_sgd, 4, 20, 0.1);
  CHECK(warm_sgd.lr() == warmup_cosine_lr(0, 2.0, 4, 20, 0.2));
  warm.set_step(12);
  CHECK(warm_sgd.lr() == warmup_cosine_lr(12, 2.0, 4, 20, 0.2));
  check_error([&] { WarmupCosineLR(warm_sgd, 5, 5); }, {"warmup", "total"});
}

TEST_CASE("offload: the state and the update in host memory, the same steps, copies charged") {
  const Device dev{DeviceType::sim, 11};
  sim::reset(dev);
  // offload_before: the step before which offload() moves the state (-1: never)
  auto run = [&](int offload_before, int64_t* device_state, double* host_seconds) {
    Tensor a = from_vector<float>({1, -2, 3, 0.5}).to(dev), b = from_vector<float>({0.25}).to(dev);
    a.requires_grad_();
    b.requires_grad_();
    AdamW opt({a, b}, {.lr = 0.1, .weight_decay = 0.01});
    for (int k = 0; k < 3; ++k) {
      if (k == offload_before) opt.offload();
      a.set_grad(from_vector<float>({0.1f * k, -0.3f, 0.2f, 1.0f}).to(dev));
      b.set_grad(from_vector<float>({-0.5f * k}).to(dev));
      const sim::Timeline& clock = sim::timeline(dev);
      const double host_before = clock.now(sim::Stream::host);
      opt.step();
      *host_seconds = clock.now(sim::Stream::host) - host_before;
      CHECK(clock.now(sim::Stream::compute) >= clock.now(sim::Stream::host));  // waited for it
    }
    *device_state = allocator_for(dev).stats().live_by[int(MemoryCategory::optimizer_state)];
    if (offload_before >= 0) {
      CHECK(opt.offloaded_to() == kCPU);
      for (const Tensor& slot : opt.state(0, 0)) CHECK(slot.device() == kCPU);
    }
    return std::vector<Tensor>{a.to(kCPU), b.to(kCPU)};
  };
  int64_t kept = 0, offloaded_state = 0, later_state = 0;
  double plain_host = 0, offload_host = 0, later_host = 0;
  const auto plain = run(-1, &kept, &plain_host);
  const auto offloaded = run(0, &offloaded_state, &offload_host);
  const auto later = run(1, &later_state, &later_host);  // the state of one step moves too
  for (size_t i = 0; i < plain.size(); ++i) {
    check_close(offloaded[i], plain[i], 0, 0);
    check_close(later[i], plain[i], 0, 0);
  }
  CHECK(kept == 2 * 4 * (4 + 1));  // Adam's two moments, f32, on the device
  CHECK(offloaded_state == 0);
  CHECK(later_state == 0);
  CHECK(later_host == doctest::Approx(offload_host));
  // Each step: each gradient down and each parameter up over the host link, one after the
  // other, and the host's update between (AdamW's bytes at the host's memory bandwidth:
  // nanoseconds); between a's upload and b's download the compute stream copies a in place.
  const SimSpec& spec = sim::spec_of(dev);
  const double copies = 4 * spec.host_link.latency + 2 * (4 + 1) * 4 / spec.host_link.bandwidth;
  CHECK(plain_host == 0);
  CHECK(offload_host > copies * (1 + 1e-12));  // the host's update is on its stream too
  CHECK(offload_host <= copies + spec.launch_overhead + 1e-7);
}
