#include <dlf/autograd/checkpoint.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/random.h>

#include <utility>

#include "autograd/recompute_region.h"

namespace dlf::autograd {
namespace {

thread_local std::shared_ptr<RecomputeRegion> recording_region;
thread_local RecomputeRegion* capturing_region = nullptr;

}  // namespace

RecomputeRegion::RecomputeRegion(CheckpointFn fn, const std::vector<Tensor>& inputs)
    : fn_(std::move(fn)),
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
  fn_(inputs);
  DLF_CHECK(captured_ == slots_.size(), "checkpoint: the recomputed forward saved ", captured_,
            " tensors, the first ", slots_.size(), ": it must run the same ops each time");
}

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs) {
  if (!grad_enabled() || RecomputeRegion::active()) return fn(inputs);
  return std::make_shared<RecomputeRegion>(fn, inputs)->record(inputs);
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
  return checkpoint([fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0])}; },
                    {input})[0];
}

}  // namespace dlf::autograd
