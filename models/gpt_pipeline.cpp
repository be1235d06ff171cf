#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/models/gpt_pipeline.h>

#include <map>

namespace dlf::models {
namespace {

// A named group of parameters or modules ("transformer", "h", "ln_f"), for nanoGPT's names.
struct Scope : nn::Module {
  Tensor add(const std::string& name, const Shape& shape, DType dtype) {
    return register_parameter(name, Tensor::empty(shape, dtype));
  }
  template <typename M>
  std::shared_ptr<M> child(const std::string& name, std::shared_ptr<M> m) {
    return register_module(name, std::move(m));
  }
};

}  // namespace

GPTStage::GPTStage(const GPTConfig& c, int stage, int stages)
    : first(stage == 0), last(stage == stages - 1), config_(c) {
  DLF_CHECK(stages > 0 && stage >= 0 && stage < stages && c.layers % stages == 0, "GPT '", c.name,
            "': ", c.layers, " layers do not split into ", stages, " equal stages");
  const int64_t per = c.layers / stages;
  auto trunk = register_module("transformer", std::make_shared<Scope>());
  if (first) {
    wte = trunk->child("wte", std::make_shared<Scope>())->add("weight", {c.vocab, c.dim}, c.dtype);
    wpe =
        trunk->child("wpe", std::make_shared<Scope>())->add("weight", {c.context, c.dim}, c.dtype);
  }
  auto h = trunk->child("h", std::make_shared<Scope>());
  for (int64_t i = 0; i < per; ++i) {
    blocks.push_back(h->child(std::to_string(stage * per + i),
                              std::make_shared<nn::TransformerBlock>(gpt_block_options(c))));
  }
  if (last) {
    auto ln_f = trunk->child("ln_f", std::make_shared<Scope>());
    ln_f_weight = ln_f->add("weight", {c.dim}, c.dtype);
    ln_f_bias = ln_f->add("bias", {c.dim}, c.dtype);
    // With one stage the head is wte itself; otherwise the last stage's own copy.
    head = first ? wte
                 : register_module("lm_head", std::make_shared<Scope>())
                       ->add("weight", {c.vocab, c.dim}, c.dtype);
  }
}

Tensor GPTStage::forward(const Tensor& x, const Tensor& idx, const Tensor& targets) const {
  Tensor h = x;
  if (first) {
    const Tensor pos = arange(double(idx.size(1)), {.dtype = DType::i64, .device = idx.device()});
    h = embedding(wte, idx) + embedding(wpe, pos);
  }
  for (const auto& block : blocks) h = block->forward(h);
  if (!last) return h;
  const Tensor logits = linear(layer_norm(h, {config_.dim}, ln_f_weight, ln_f_bias), head);
  return cross_entropy(logits.reshape({-1, config_.vocab}), targets.reshape({-1}));
}

void GPTStage::load_from(const nn::NamedTensors& whole) {
  const std::map<std::string, Tensor> given(whole.begin(), whole.end());
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    auto it = given.find(name);
    DLF_CHECK(it != given.end(), "GPTStage::load_from: no '", name, "' in the state");
    DLF_CHECK(it->second.shape() == p.shape(), "GPTStage::load_from: '", name, "' has shape ",
              shape_str(it->second.shape()), ", the stage expects ", shape_str(p.shape()));
    p.copy_(it->second.to(p.device()));
  }
}

void GPTStage::tie_gradients(parallel::Communicator& pp) {
  if (pp.size() == 1) return;
  const bool ends = first || last;
  if (!ends_) ends_ = pp.split(ends ? 0 : 1 + pp.rank(), pp.rank(), "embedding");
  if (!ends) return;
  const Tensor& copy = first ? wte : head;
  Tensor g = copy.grad().defined() ? copy.grad().contiguous().clone() : zeros_like(copy);
  ends_->allreduce(g);
  copy.set_grad(g);
}

}  // namespace dlf::models
