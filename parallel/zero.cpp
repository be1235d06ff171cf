#include <dlf/autograd/grad_mode.h>
#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/core/op_profile.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/optim.h>
#include <dlf/device/sim_device.h>
#include <dlf/parallel/zero.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace dlf::parallel {
namespace {

// The name the unsharded optimizer's state_dict() gives a parameter's slot:
// "<group>.<index>.<slot>".
std::string slot_key(size_t group, size_t index, const std::string& slot) {
  return std::to_string(group) + "." + std::to_string(index) + "." + slot;
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(nn::optim::Optimizer& optimizer, Communicator& comm,
                             ShardedParameters& shards)
    : opt_(optimizer), comm_(comm), shards_(shards) {
  DLF_CHECK(shards.num_buckets() > 0, "ZeroOptimizer: no buckets to shard (one rank?)");
  const auto& groups = opt_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor& p = groups[g].params[i];
      DLF_CHECK(p.is_contiguous(), "ZeroOptimizer: parameters must be contiguous");
      place_[p.storage().get()] = {g, i};
    }
  }
  std::vector<nn::optim::ParamGroup> shard_groups(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    shard_groups[g].lr = groups[g].lr;
    shard_groups[g].weight_decay = groups[g].weight_decay;
  }
  autograd::NoGradGuard no_grad;
  for (const OwnedPiece& o : shards.owned_pieces()) {
    auto it = place_.find(o.param.storage().get());
    DLF_CHECK(it != place_.end(),
              "ZeroOptimizer: the model has a parameter the optimizer does not (of shape ",
              shape_str(o.param.shape()), ")");
    const auto [g, i] = it->second;
    Piece piece{.owned = o, .group = g, .index = i};
    piece.owned.value.requires_grad_();  // a leaf of its own, for the optimizer (never records)
    shard_groups[g].params.push_back(piece.owned.value);
    pieces_.push_back(std::move(piece));
  }
  shard_ = opt_.same_kind(std::move(shard_groups));
  if (const std::optional<Device> host = opt_.offloaded_to()) {
    shard_->offload(*host);
    shards.offload_gradients(*host);
  }
}

void ZeroOptimizer::attach_gradients() {
  if (gradients_attached_) return;
  MemoryScope scope(MemoryCategory::gradients);
  for (Piece& piece : pieces_) {
    Tensor g = shards_.piece_gradient(piece.owned);
    // A tied weight's part stays on the device to be summed over the pipeline's ends (FSDP's
    // own units are not offloaded): down now to its shard's host memory, as the others went.
    const Device to = piece.owned.value.device();
    if (g.defined() && g.device() != to) g = g.to(to);
    piece.owned.value.set_grad(g);
  }
  gradients_attached_ = true;
}

double ZeroOptimizer::clip_grad_norm(const std::vector<Tensor>& params, double max_norm,
                                     const NormScope& scope) {
  // With every gradient whole, the unsharded norm, bit for bit.
  if (shards_.whole_gradients()) return parallel::clip_grad_norm(params, max_norm, scope);
  autograd::NoGradGuard no_grad;
  attach_gradients();
  std::vector<Tensor> counted, mine;
  for (const Piece& piece : pieces_) {
    const Tensor g = piece.owned.value.grad();
    if (g.defined() && (!scope.counts || scope.counts(piece.owned.param))) counted.push_back(g);
    mine.push_back(piece.owned.value);
  }
  const double squares = counted.empty() ? 0 : squares_on_host(sum_squares(counted));
  Tensor total = full({1}, squares, {.dtype = DType::f64, .device = comm_.device()});
  comm_.allreduce(total);
  const double norm = std::sqrt(add_over_groups(squares_on_host(total), scope));
  nn::optim::scale_gradients(mine, norm, max_norm);
  return norm;
}

std::vector<Tensor> ZeroOptimizer::piece_values() const {
  std::vector<Tensor> values;
  for (const Piece& piece : pieces_) values.push_back(piece.owned.value);
  return values;
}

void ZeroOptimizer::step() {
  begin_step();
  update();
}

void ZeroOptimizer::begin_step() {
  auto& shard_groups = shard_->param_groups();
  for (size_t g = 0; g < shard_groups.size(); ++g) shard_groups[g].lr = opt_.param_groups()[g].lr;
  shard_->begin_step();
}

bool ZeroOptimizer::capturable() const { return shard_->capturable() && !opt_.offloaded_to(); }

void ZeroOptimizer::init_state() { shard_->init_state(); }

Tensor ZeroOptimizer::clip_and_update(const std::vector<Tensor>& params, double max_norm,
                                      const NormScope& scope) {
  DLF_CHECK(capturable(), "ZeroOptimizer::clip_and_update: the update reads values on the host ",
            "(an optimizer that is not capturable, or offloaded): step it after the captured step");
  autograd::NoGradGuard no_grad;
  AutocastGuard full_precision(std::nullopt);
  // With their gradients attached, the pieces that will be updated are the ones checked.
  attach_gradients();
  DLF_CHECK(shard_->state_ready(), "ZeroOptimizer::clip_and_update: a piece has no optimizer ",
            "state yet; call init_state() before the step is captured");
  Tensor norm;
  if (shards_.whole_gradients()) {
    // The whole gradients are scaled into new tensors: the pieces view those.
    norm = nn::optim::clip_grad_norm_on_device(
        params, max_norm, [&](const auto& ps) { return global_norm_on_device(ps, scope); });
    gradients_attached_ = false;
    attach_gradients();
  } else {
    // The pieces' squares over this rank, then over the data-parallel group and scope's groups:
    // clip_grad_norm's sums in its order. A piece counts as its parameter does (told apart by
    // tensor, not storage: ZeRO-3's pieces of a unit all view its one shard).
    std::map<const TensorImpl*, Tensor> param_of;
    for (const Piece& piece : pieces_) param_of[piece.owned.value.impl()] = piece.owned.param;
    NormScope pieces_scope{.counts = {}, .groups = {&comm_}};
    if (scope.counts)
      pieces_scope.counts = [&](const Tensor& v) { return scope.counts(param_of.at(v.impl())); };
    pieces_scope.groups.insert(pieces_scope.groups.end(), scope.groups.begin(), scope.groups.end());
    norm = nn::optim::clip_grad_norm_on_device(piece_values(), max_norm, [&](const auto& ps) {
      return global_norm_on_device(ps, pieces_scope);
    });
  }
  update();
  return norm;
}

void ZeroOptimizer::update() {
  autograd::NoGradGuard no_grad;
  attach_gradients();
  // Pieces in host memory (FSDPOptions::shards_on) are updated there in place: the host's work
  // goes on a sim device's host stream (Optimizer::step charges it for pieces it copies down).
  const std::optional<Device> host = opt_.offloaded_to();
  const bool on_host = host && !pieces_.empty() && pieces_.front().owned.value.device() == *host &&
                       comm_.device().type != DeviceType::cpu;
  {
    std::optional<OpProfile> meter;
    if (on_host) meter.emplace();
    shard_->update();
    if (meter)
      sim::host_compute(comm_.device(), meter->outermost().flops, meter->outermost().bytes);
  }
  gradients_attached_ = false;
  std::vector<OwnedPiece> mine;
  for (Piece& piece : pieces_) {
    piece.owned.value.set_grad(Tensor());
    mine.push_back(piece.owned);
  }
  shards_.publish_updates(mine);
}

nn::NamedTensors ZeroOptimizer::consolidated_state_dict() {
  autograd::NoGradGuard no_grad;
  nn::NamedTensors whole;
  whole.emplace_back("step", from_vector<int64_t>({shard_->steps()}, {}));
  if (shard_->steps() == 0) return whole;  // no state yet, on any rank
  const std::vector<std::string> slots = shard_->slot_names();
  // The index of each piece in its shard group, as shard_->state() counts them.
  std::vector<size_t> shard_index(pieces_.size());
  std::vector<size_t> counted(opt_.param_groups().size(), 0);
  for (size_t k = 0; k < pieces_.size(); ++k) shard_index[k] = counted[pieces_[k].group]++;
  std::map<std::tuple<size_t, size_t, size_t>, Tensor> slot_of;  // (group, index, slot)
  for (size_t s = 0; s < slots.size(); ++s) {
    size_t next = 0;
    for (int b = 0; b < shards_.num_buckets(); ++b) {
      const std::vector<Tensor>& params = shards_.bucket_params(b);
      Tensor mine =
          zeros({shards_.part_size(b)}, {.dtype = params[0].dtype(), .device = params[0].device()});
      for (; next < pieces_.size() && pieces_[next].owned.bucket == b; ++next) {
        const Piece& piece = pieces_[next];
        const std::vector<Tensor>& state = shard_->state(piece.group, shard_index[next]);
        if (state.size() > s && state[s].defined())
          mine.narrow(0, piece.owned.offset, piece.owned.end - piece.owned.begin)
              .copy_(state[s].to(mine.device()));
      }
      const Tensor all = comm_.allgather(mine);
      int64_t at = 0;
      for (const Tensor& p : params) {
        const auto [g, i] = place_.at(p.storage().get());
        slot_of[{g, i, s}] = all.narrow(0, at, p.numel()).reshape(p.shape()).clone();
        at += p.numel();
      }
    }
  }
  for (const auto& [key, t] : slot_of) {  // the unsharded state_dict()'s order
    const auto [g, i, s] = key;
    whole.emplace_back(slot_key(g, i, slots[s]), t);
  }
  return whole;
}

void ZeroOptimizer::load_state_dict(const nn::NamedTensors& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  DLF_CHECK(given.contains("step"), "optimizer state: missing 'step'");
  nn::NamedTensors mine;
  mine.emplace_back("step", given.at("step"));
  const std::vector<std::string> slots = shard_->slot_names();
  std::vector<size_t> counted(opt_.param_groups().size(), 0);
  for (const Piece& piece : pieces_) {
    const size_t j = counted[piece.group]++;
    const Shape& shape = piece.owned.param.shape();
    for (const std::string& slot : slots) {
      auto it = given.find(slot_key(piece.group, piece.index, slot));
      if (it == given.end()) continue;
      DLF_CHECK(it->second.shape() == shape, "optimizer state '", it->first, "' has shape ",
                shape_str(it->second.shape()), ", its parameter has ", shape_str(shape));
      mine.emplace_back(slot_key(piece.group, j, slot),
                        it->second.reshape({-1}).narrow(0, piece.owned.begin,
                                                        piece.owned.end - piece.owned.begin));
    }
  }
  for (const auto& [name, t] : state) {
    bool known = name == "step";
    for (const auto& [storage, gi] : place_) {
      for (const std::string& slot : slots)
        known = known || name == slot_key(gi.first, gi.second, slot);
    }
    DLF_CHECK(known, "optimizer state: unexpected entry '", name, "'");
  }
  shard_->load_state_dict(mine);
}

}  // namespace dlf::parallel
