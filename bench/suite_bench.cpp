// The cases of `dlf bench run` that every revision since 2026-11-25 can build (perf/suite.cpp
// lists them and their tiers; bench/suite_harness.h times them and prints their lines): matmul
// against bare oneDNN, the host's peaks, dispatch, op kernels and two models' training steps.
//
// This file is the suite's harness, as asv's benchmarks are: `dlf bench compare` and a backfill
// build it against the library of the revision under test, so it uses only the public API that
// dlf has kept since 2026-11-25 (factories, ops, nn::functional, the models' UNet and GPT, AdamW).
#include <cstring>
#include <map>
#include <memory>

#include "bench/bare_matmul.h"
#include "bench/suite_harness.h"

using namespace dlf;
using bench::suite::Case;

namespace {

Tensor randn_f32(const Shape& shape, Generator& gen) { return randn(shape, {}, &gen); }

Case matmul_case(DType dtype, int64_t m, int64_t k, int64_t n, Generator& gen) {
  const Tensor a = randn({m, k}, {.dtype = dtype}, &gen), b = randn({k, n}, {.dtype = dtype}, &gen);
  auto bare = std::make_shared<bench::BareMatmul>(a, b, false, Tensor(), false);
  return {.bench = "matmul",
          .call = [a, b] { matmul(a, b); },
          .flops = 2.0 * double(m * k * n),
          .bytes = double((m * k + k * n + m * n) * dtype_size(dtype)),
          .baseline = [bare] { (*bare)(); }};
}

// One training step of `model`: zero_grad, `loss` (forward on a fixed batch), backward, AdamW
// (lr 3e-4, betas 0.9/0.95, weight decay 0.1, as the peer's).
Case training_step(const std::shared_ptr<nn::Module>& model, std::function<Tensor()> loss,
                   double items, const std::string& item_unit) {
  auto opt = std::make_shared<nn::optim::AdamW>(
      std::vector<nn::optim::ParamGroup>{{.params = model->parameters(), .weight_decay = 0.1}},
      nn::optim::AdamWOptions{.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  return {.bench = "train",
          .call =
              [model, opt, loss] {
                opt->zero_grad();
                loss().backward();
                opt->step();
              },
          .flops = bench::suite::step_flops(loss),
          .items = items,
          .item_unit = item_unit};
}

Case unet_step(const std::string& name, int64_t batch, Generator& gen) {
  const models::UNetConfig config = models::unet_config(name);
  auto unet = std::make_shared<models::UNet>(config);
  auto ddpm = std::make_shared<models::DDPM>();
  const int64_t s = config.image;
  const Tensor x0 = rand({batch, config.channels, s, s}, {}, &gen) * 2.0 - 1.0;
  const Tensor noise = randn({batch, config.channels, s, s}, {}, &gen);
  const Tensor t = randint(0, ddpm->steps(), {batch}, {.dtype = DType::i64}, &gen);
  return training_step(
      unet, [unet, ddpm, x0, noise, t] { return ddpm->loss(*unet, x0, noise, t); }, double(batch),
      "img/s");
}

Case gpt_step(const std::string& name, int64_t batch, int64_t seq, bool recompute, Generator& gen) {
  const models::GPTConfig config = models::gpt_config(name);
  auto gpt = std::make_shared<models::GPT>(config);
  const Tensor x = randint(0, config.vocab, {batch, seq}, {.dtype = DType::i64}, &gen);
  const Tensor y = randint(0, config.vocab, {batch, seq}, {.dtype = DType::i64}, &gen);
  const Case c = training_step(
      gpt, [gpt, x, y] { return gpt->loss(x, y); }, double(batch * seq), "tok/s");
  // After the FLOPs are counted: the model's, without the recompute's second forward. Full:
  // every block (the default since this case began).
  if (recompute) gpt->recompute();
  return c;
}

// The host's matmul peak in `dtype`: bare oneDNN at 1024^3.
Case peak_matmul(DType dtype, Generator& gen) {
  const Tensor a = randn({1024, 1024}, {.dtype = dtype}, &gen);
  const Tensor b = randn({1024, 1024}, {.dtype = dtype}, &gen);
  auto bare = std::make_shared<bench::BareMatmul>(a, b, false, Tensor(), false);
  return Case{.bench = "peak", .call = [bare] { (*bare)(); }, .flops = 2.0 * (1 << 30)};
}

// Every case by name. Element-wise and normalisation cases count the bytes they must move at
// least (inputs read once, outputs written once), so GB/s is comparable with the bandwidth peak.
std::map<std::string, std::function<Case(Generator&)>> cases() {
  const Shape image{8, 64, 32, 32};
  const double image_bytes = 8.0 * 64 * 32 * 32 * 4;
  return {
      {"peak matmul f32 M1024 K1024 N1024",
       [](Generator& gen) { return peak_matmul(DType::f32, gen); }},
      {"peak matmul bf16 M1024 K1024 N1024",
       [](Generator& gen) { return peak_matmul(DType::bf16, gen); }},
      {"peak bandwidth copy 64 MiB",
       [](Generator&) {
         const size_t bytes = size_t(64) << 20;
         auto from = std::make_shared<std::vector<char>>(bytes, 1);
         auto to = std::make_shared<std::vector<char>>(bytes, 0);
         return Case{.bench = "peak",
                     .call = [from, to] { std::memcpy(to->data(), from->data(), from->size()); },
                     .bytes = 2.0 * double(bytes)};
       }},
      {"matmul f32 M512 K512 N512",
       [](Generator& gen) { return matmul_case(DType::f32, 512, 512, 512, gen); }},
      {"matmul bf16 M512 K512 N512",
       [](Generator& gen) { return matmul_case(DType::bf16, 512, 512, 512, gen); }},
      {"dispatch add f32 [16]",
       [](Generator& gen) {
         const Tensor a = randn_f32({16}, gen), b = randn_f32({16}, gen);
         return Case{.bench = "dispatch", .call = [a, b] { (void)(a + b); }};
       }},
      {"add f32 [8,64,32,32]",
       [=](Generator& gen) {
         const Tensor a = randn_f32(image, gen), b = randn_f32(image, gen);
         return Case{.bench = "op", .call = [a, b] { (void)(a + b); }, .bytes = 3 * image_bytes};
       }},
      {"group_norm forward f32 [8,64,32,32] g32",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), w = randn_f32({64}, gen), b = randn_f32({64}, gen);
         return Case{.bench = "op",
                     .call = [x, w, b] { group_norm(x, 32, w, b); },
                     .bytes = 2 * image_bytes};
       }},
      {"silu forward+backward f32 [8,64,32,32]",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), g = randn_f32(image, gen);
         x.requires_grad_();
         return Case{.bench = "op",
                     .call = [x, g] { autograd::grad({nn::functional::silu(x)}, {x}, {g}); },
                     .bytes = 5 * image_bytes};
       }},
      {"conv2d forward f32 [8,64,32,32] 64->64 3x3",
       [=](Generator& gen) {
         const Tensor x = randn_f32(image, gen), w = randn_f32({64, 64, 3, 3}, gen);
         return Case{.bench = "op",
                     .call =
                         [x, w] {
                           conv2d(x, w, Tensor(), {.padding = {1, 1}});
                         },
                     .flops = 2.0 * 8 * 64 * 32 * 32 * 64 * 9};
       }},
      {"layer_norm forward f32 [2048,768]",
       [](Generator& gen) {
         const Tensor x = randn_f32({2048, 768}, gen), w = randn_f32({768}, gen);
         return Case{.bench = "op",
                     .call = [x, w] { layer_norm(x, {768}, w, w); },
                     .bytes = 2.0 * 2048 * 768 * 4};
       }},
      {"softmax f32 [512,1024]",
       [](Generator& gen) {
         const Tensor x = randn_f32({512, 1024}, gen);
         return Case{.bench = "op", .call = [x] { softmax(x, 1); }, .bytes = 2.0 * 512 * 1024 * 4};
       }},
      {"train unet-tiny fp32 batch 8",
       [](Generator& gen) { return unet_step("unet-tiny", 8, gen); }},
      {"train gpt-nano fp32 batch 8x64",
       [](Generator& gen) { return gpt_step("gpt-nano", 8, 64, false, gen); }},
      {"train gpt-mini fp32 batch 4x128",
       [](Generator& gen) { return gpt_step("gpt-mini", 4, 128, false, gen); }},
      {"train gpt-mini fp32 recompute batch 4x128",
       [](Generator& gen) { return gpt_step("gpt-mini", 4, 128, true, gen); }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite::main_of(
      argc, argv, "suite_bench", "The cases of dlf bench run, one a process",
      [] {
        std::vector<std::string> names;
        for (const auto& [name, make] : cases()) names.push_back(name);
        return names;
      },
      [](const bench::suite::Options& o) {
        const auto all = cases();
        const auto found = all.find(o.name);
        DLF_CHECK(found != all.end(), "no case '", o.name, "' (see suite_bench --list)");
        Generator gen(1234);
        const Case c = found->second(gen);
        bench::suite::print_line(c, o, bench::suite::measure(c, o));
      });
}
