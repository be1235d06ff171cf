#include <dlf/autograd/checkpoint.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/op.h>
#include <dlf/core/random.h>

#include <utility>

#include "autograd/recompute_region.h"

namespace dlf::autograd {
namespace {

thread_local std::shared_ptr<RecomputeRegion> recording_region;
thread_local RecomputeRegion* capturing_region = nullptr;

[[maybe_unused]] const bool installed = (set_recompute_hook(RecomputeRegion::reuse), true);

std::vector<Tensor> metas_on_meta(const std::vector<TensorMeta>& metas) {
  std::vector<Tensor> out;
  for (const TensorMeta& m : metas) out.push_back(Tensor::empty(m.shape, m.dtype, kMeta));
  return out;
}

}  // namespace

bool recomputing() { return capturing_region != nullptr; }

const char* recompute_name(Recompute what) {
  switch (what) {
    case Recompute::none:
      return "none";
    case Recompute::full:
      return "full";
    case Recompute::selective:
      return "selective";
  }
  return "none";
}

Recompute parse_recompute(std::string_view name) {
  for (Recompute r : {Recompute::none, Recompute::full, Recompute::selective})
    if (name == recompute_name(r)) return r;
  throw Error("unknown recompute '" + std::string(name) + "': expected none, full or selective");
}

RecomputeRegion::RecomputeRegion(CheckpointFn fn, const std::vector<Tensor>& inputs, Recompute what)
    : fn_(std::move(fn)),
      selective_(what == Recompute::selective),
      seed_(default_generator().seed()),
      offset_(default_generator().offset()),
      autocast_(autocast_dtype()) {
  for (const Tensor& t : inputs) {
    inputs_.push_back(t.defined() ? t.detach() : t);
    requires_grad_.push_back(t.defined() && t.requires_grad());
    versions_.push_back(t.defined() ? t.storage()->version() : 0);
  }
}

std::shared_ptr<RecomputeRegion> RecomputeRegion::recording() { return recording_region; }

bool RecomputeRegion::active() { return recording_region || capturing_region; }

bool RecomputeRegion::capture(const Tensor& t) {
  RecomputeRegion* r = capturing_region;
  if (r == nullptr) return false;
  DLF_CHECK(r->captured_ < r->slots_.size(),
            "checkpoint: the recomputed forward saved more "
            "tensors than the first (",
            r->slots_.size(), "): it must run the same ops each time");
  r->slots_[r->captured_++] = t;
  return true;
}

void RecomputeRegion::keep(const OpDef& op, Inputs inputs, const Attrs& attrs,
                           const std::vector<Tensor>& outputs) {
  RecomputeRegion* r = recording_region.get();
  if (r == nullptr || !r->selective_ || op.view || op.inplace >= 0 || detail::running_kernel() ||
      !costly_to_recompute(op, inputs, attrs, outputs))
    return;
  Kept k{.op = &op, .outputs = {}, .versions = {}};
  for (const Tensor& t : outputs) {
    k.outputs.push_back(t.detach());
    k.versions.push_back(t.storage()->version());
  }
  r->kept_.push_back(std::move(k));
}

bool RecomputeRegion::reuse(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                            const std::vector<TensorMeta>& metas, std::vector<Tensor>& outputs) {
  RecomputeRegion* r = capturing_region;
  // Only an op of the next kept one's kind can be it (another costly op shows in recompute()'s
  // count): most ops are turned away before their cost is worked out.
  if (r == nullptr || r->reused_ >= r->kept_.size() || r->kept_[r->reused_].op != &op ||
      !costly_to_recompute(op, inputs, attrs, metas_on_meta(metas)))
    return false;
  Kept& k = r->kept_[r->reused_++];
  bool same = k.outputs.size() == metas.size();
  for (size_t i = 0; same && i < metas.size(); ++i)
    same = k.outputs[i].shape() == metas[i].shape && k.outputs[i].dtype() == metas[i].dtype;
  DLF_CHECK(same, "checkpoint: the recomputed forward ran '", op.name,
            "' on other shapes than the first: it must run the same ops each time");
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    if (k.outputs[i].storage()->version() != k.versions[i]) {
      k.outputs.clear();  // changed in place after the forward: run the op again
      return false;
    }
  }
  outputs = std::move(k.outputs);
  return true;
}

std::vector<Tensor> RecomputeRegion::record(const std::vector<Tensor>& inputs) {
  struct Recording {
    explicit Recording(std::shared_ptr<RecomputeRegion> r) { recording_region = std::move(r); }
    ~Recording() { recording_region.reset(); }
  } scope(shared_from_this());
  return fn_(inputs);
}

int RecomputeRegion::add_slot() {
  slots_.emplace_back();
  return static_cast<int>(slots_.size() - 1);
}

Tensor RecomputeRegion::take(int slot) {
  const size_t i = static_cast<size_t>(slot);
  if (!slots_[i].defined()) recompute();
  return std::exchange(slots_[i], Tensor());
}

void RecomputeRegion::recompute() {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Tensor& t = inputs_[i];
    DLF_CHECK(!t.defined() || t.storage()->version() == versions_[i], "checkpoint: input ", i,
              " (shape ", shape_str(t.shape()),
              ") was changed in place after the forward pass; backward cannot recompute from it");
    inputs.push_back(t.defined() ? t.detach() : t);
    if (requires_grad_[i]) inputs.back().requires_grad_();
  }
  // The default generator as it was when the forward began, and as it is again after.
  struct GeneratorAt {
    GeneratorAt(uint64_t seed, uint64_t offset)
        : gen(default_generator()), seed_now(gen.seed()), offset_now(gen.offset()) {
      gen.manual_seed(seed);
      gen.set_offset(offset);
    }
    ~GeneratorAt() {
      gen.manual_seed(seed_now);
      gen.set_offset(offset_now);
    }
    Generator& gen;
    uint64_t seed_now, offset_now;
  } generator(seed_, offset_);
  struct Capturing {
    explicit Capturing(RecomputeRegion* r) { capturing_region = r; }
    ~Capturing() { capturing_region = nullptr; }
  } capturing(this);
  GradModeGuard grad(true);  // the same graph is built, so the same tensors are saved
  AutocastGuard autocast(autocast_);
  captured_ = 0;
  reused_ = 0;
  fn_(inputs);
  DLF_CHECK(captured_ == slots_.size(), "checkpoint: the recomputed forward saved ", captured_,
            " tensors, the first ", slots_.size(), ": it must run the same ops each time");
  DLF_CHECK(reused_ == kept_.size(), "checkpoint: the recomputed forward ran ", reused_,
            " costly ops, the first ", kept_.size(), ": it must run the same ops each time");
  kept_.clear();  // handed over to the slots; a retained graph's next recompute runs them all
}

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               Recompute what) {
  if (what == Recompute::none || !grad_enabled() || RecomputeRegion::active()) return fn(inputs);
  return std::make_shared<RecomputeRegion>(fn, inputs, what)->record(inputs);
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  Recompute what) {
  return checkpoint([fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0])}; },
                    {input}, what)[0];
}

}  // namespace dlf::autograd
