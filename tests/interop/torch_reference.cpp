// dlf's side of the cross-check against PyTorch (torch_crosscheck.py): one model of the zoo in
// one dtype, its weights and a batch written as safetensors, then what dlf computes from them —
// logits, loss, every gradient, and five AdamW steps — for the Python side to recompute.
//
//   torch_reference MODEL f32|f64 DIR [WEIGHTS]
//
// WEIGHTS (any file dlf train --init-from reads: Hugging Face's shards of a PyTorch model, say)
// replaces the model's random initial weights.
//
// DIR/weights.safetensors  the model's state (tied tensors once), its sizes as metadata
// DIR/batch.safetensors    the inputs and targets
// DIR/dlf.safetensors      logits, loss, grad.NAME per parameter, adamw_losses [5],
//                          adamw.NAME: every parameter after the five steps; AdamW's
//                          hyperparameters as metadata
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include <dlf/dlf.h>
#include <dlf/train/weights_file.h>

using namespace dlf;

namespace {

// AdamW of the cross-check: decay on every parameter, as the Python side sets it. eps 1e-6
// (BERT's), not 1e-8: a step is lr · m / (sqrt(v) + eps), so with eps 1e-8 an element whose
// gradient is f32 rounding noise (|g| ~ 1e-8: vit-tiny has a few) steps by ±lr on the sign of
// that noise, and the next steps carry the jolt into every weight. The f32 weights after five
// steps then measured which elements flipped, not the arithmetic: 2.3e-6 to 1.4e-5 from the f64
// result for PyTorch's own f32 run, by the BLAS kernel it ran on. With eps 1e-6 such a step is
// at most lr · 1e-2.
constexpr nn::optim::AdamWOptions kAdamW{
    .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1};
constexpr int kAdamWSteps = 5;
constexpr int64_t kBatch = 2;

struct Case {
  std::shared_ptr<nn::Module> model;
  std::map<std::string, std::string> sizes;  // what the Python side builds it from
  nn::NamedTensors batch;
  std::function<Tensor()> logits;
  std::function<Tensor()> loss;
};

std::string str(int64_t v) { return std::to_string(v); }
std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

Case gpt_case(const std::string& name, DType dtype, Generator& gen) {
  models::GPTConfig c = models::gpt_config(name);
  c.dtype = dtype;
  auto gpt = std::make_shared<models::GPT>(c, &gen);
  const int64_t T = 16;
  const Tensor idx = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  const Tensor targets = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  return {gpt,
          {{"family", "gpt"},
           {"vocab", str(c.vocab)},
           {"context", str(c.context)},
           {"layers", str(c.layers)},
           {"heads", str(c.heads)},
           {"dim", str(c.dim)}},
          {{"idx", idx}, {"targets", targets}},
          [=] { return gpt->forward(idx); },
          [=] { return gpt->loss(idx, targets); }};
}

Case bert_case(const std::string& name, DType dtype, Generator& gen) {
  models::BertConfig c = models::bert_config(name);
  c.dtype = dtype;
  auto bert = std::make_shared<models::BertForMaskedLM>(c, &gen);
  const int64_t T = 16;
  const Tensor ids = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  // About a third of the positions carry a label; the rest are -100 (no loss).
  Tensor labels = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  const Tensor keep = randint(0, 3, {kBatch, T}, {.dtype = DType::i64}, &gen);
  int64_t* l = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (keep.data<int64_t>()[i] != 0) l[i] = -100;
  return {bert,
          {{"family", "bert"},
           {"vocab", str(c.vocab)},
           {"max_positions", str(c.max_positions)},
           {"type_vocab", str(c.type_vocab)},
           {"layers", str(c.layers)},
           {"heads", str(c.heads)},
           {"dim", str(c.dim)},
           {"ffn", str(c.ffn)}},
          {{"ids", ids}, {"labels", labels}},
          [=] { return bert->forward(ids); },
          [=] { return bert->loss(ids, labels); }};
}

Case vit_case(const std::string& name, DType dtype, Generator& gen) {
  models::ViTConfig c = models::vit_config(name);
  c.dtype = dtype;
  auto vit = std::make_shared<models::VisionTransformer>(c, &gen);
  const Tensor images = randn({kBatch, c.channels, c.image, c.image}, {.dtype = dtype}, &gen);
  const Tensor labels = randint(0, c.classes, {kBatch}, {.dtype = DType::i64}, &gen);
  return {vit,
          {{"family", "vit"},
           {"image", str(c.image)},
           {"channels", str(c.channels)},
           {"patch", str(c.patch)},
           {"dim", str(c.dim)},
           {"depth", str(c.depth)},
           {"heads", str(c.heads)},
           {"classes", str(c.classes)},
           {"mlp_ratio", str(c.mlp_ratio)}},
          {{"images", images}, {"labels", labels}},
          [=] { return vit->forward(images); },
          [=] { return vit->loss(images, labels); }};
}

Case llama_case(const std::string& name, DType dtype, Generator& gen) {
  models::LlamaConfig c = models::llama_config(name);
  c.dtype = dtype;
  auto llama = std::make_shared<models::Llama>(c, &gen);
  const int64_t T = 16;
  const Tensor idx = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  const Tensor targets = randint(0, c.vocab, {kBatch, T}, {.dtype = DType::i64}, &gen);
  return {llama,
          {{"family", "llama"},
           {"vocab", str(c.vocab)},
           {"layers", str(c.layers)},
           {"heads", str(c.heads)},
           {"kv_heads", str(c.kv_heads)},
           {"dim", str(c.dim)},
           {"ffn", str(c.ffn)},
           {"theta", num(c.theta)},
           {"norm_eps", num(c.norm_eps)}},
          {{"idx", idx}, {"targets", targets}},
          [=] { return llama->forward(idx); },
          [=] { return llama->loss(idx, targets); }};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: torch_reference MODEL f32|f64 DIR [WEIGHTS]\n");
    return 2;
  }
  try {
    const std::string model = argv[1], dtype_name = argv[2], dir = std::string(argv[3]) + "/";
    DLF_CHECK(dtype_name == "f32" || dtype_name == "f64", "dtype: f32 or f64, not ", dtype_name);
    const DType dtype = dtype_name == "f64" ? DType::f64 : DType::f32;
    Generator gen(1234);
    const std::string family = models::family_of(model).name;
    Case c = family == "gpt"    ? gpt_case(model, dtype, gen)
             : family == "bert" ? bert_case(model, dtype, gen)
             : family == "vit"  ? vit_case(model, dtype, gen)
             : family == "llama"
                 ? llama_case(model, dtype, gen)
                 : throw Error("the cross-check covers GPT, BERT, ViT and Llama, not " + model);
    c.sizes["dtype"] = dtype_name;
    if (argc == 5) {
      autograd::NoGradGuard no_grad;
      c.model->load_state_dict(train::read_weights(argv[4]).tensors);
    }
    save_safetensors(dir + "weights.safetensors", c.model->state_dict(), c.sizes);
    save_safetensors(dir + "batch.safetensors", c.batch);

    nn::NamedTensors out;
    {
      autograd::NoGradGuard no_grad;
      out.emplace_back("logits", c.logits());
    }
    const Tensor loss = c.loss();
    loss.backward();
    out.emplace_back("loss", loss.detach());
    for (const auto& [name, p] : c.model->named_parameters())
      out.emplace_back("grad." + name, p.grad());

    nn::optim::AdamW opt({{.params = c.model->parameters()}}, kAdamW);
    std::vector<double> losses;
    for (int step = 0; step < kAdamWSteps; ++step) {
      opt.zero_grad();
      const Tensor l = c.loss();
      l.backward();
      losses.push_back(l.item<double>());
      opt.step();
    }
    out.emplace_back("adamw_losses", from_vector(losses));
    for (const auto& [name, p] : c.model->named_parameters())
      out.emplace_back("adamw." + name, p.detach().clone());
    save_safetensors(dir + "dlf.safetensors", out,
                     {{"lr", num(kAdamW.lr)},
                      {"beta1", num(kAdamW.beta1)},
                      {"beta2", num(kAdamW.beta2)},
                      {"eps", num(kAdamW.eps)},
                      {"weight_decay", num(kAdamW.weight_decay)},
                      {"steps", std::to_string(kAdamWSteps)}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}
