#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/device/sim_device.h>
#include <dlf/graph/capture.h>
#include <dlf/parallel/fsdp.h>

#include <cstring>
#include <optional>
#include <set>
#include <utility>

namespace dlf::parallel {

struct FullyShardedDataParallel::State {
  struct Unit {
    std::vector<Tensor> params;
    int64_t numel = 0, part = 0;
    bool whole = true;     // its parameters hold their values now
    int pending = 0;       // gradients not final yet (parameters x backward passes)
    Tensor shard;          // this rank's part of the flattened parameters, [part]
    Tensor gradient_part;  // this rank's part of the averaged gradients, [part]
    Tensor arriving;       // its allgather's output, started ahead of its use (prefetch)
    int position = -1;     // a block's place in the forward's order, once seen
    bool own = false;      // a parameter of FSDPOptions::own_units, alone
  };
  Communicator* comm = nullptr;
  FSDPOptions options;
  std::vector<Unit> units;
  std::vector<size_t> forward_order;   // the blocks' units as the forward first ran them
  std::vector<size_t> roots;           // units of what no block holds: gathered by unshard()
  std::optional<Device> gradients_to;  // offload_gradients()
  std::vector<Tensor> reducing;        // this backward's reduce-scatters' outputs

  // The unit's parameters flattened, padded to a multiple of the ranks.
  Tensor flatten(const Unit& u, bool gradients) const {
    std::vector<Tensor> flat;
    for (const Tensor& p : u.params) {
      const Tensor g = gradients ? p.grad() : p;
      flat.push_back(g.defined() ? g.reshape({-1})
                                 : zeros({p.numel()}, {.dtype = p.dtype(), .device = p.device()}));
    }
    const Tensor& any = u.params.front();
    const int64_t padding = u.part * comm->size() - u.numel;
    if (padding > 0)
      flat.push_back(zeros({padding}, {.dtype = any.dtype(), .device = any.device()}));
    return flat.size() == 1 ? flat[0].contiguous() : cat(flat, 0);
  }

  // Starts gathering the unit's whole parameters: the bytes are in place at once, the
  // simulated clock has them arrive when u.arriving is waited for. In a captured step the
  // allgather's output stands for them instead (graph::alias_in_capture): the graph reads it
  // with no copy, and its memory plan holds it as long as it is read, as an activation.
  void start_gather(Unit& u) {
    const std::optional<graph::CaptureMode> capture = graph::capturing();
    if (u.whole) {
      const Tensor& p = u.params.front();
      if (capture ? graph::aliased_in_capture(p) : !p.storage()->released()) return;
      // Whole with no bytes nor alias: a capture that threw left it so. Gathered again.
      DLF_CHECK(p.storage()->released(),
                "FSDP: a unit's parameters are whole (gather_whole(), or unshard() with no "
                "step after it) when a step is captured; release them first");
    }
    autograd::NoGradGuard no_grad;
    DLF_CHECK(capture != graph::CaptureMode::eager,
              "FSDP: a ZeRO-3 step is captured without running it (graph::CaptureMode::abstract, "
              "as graph::Compiled does): its parameters' storage is released between uses");
    Work work;
    Tensor shard = u.shard;
    if (shard.device() != comm->device()) {  // offloaded: up first, for the allgather
      sim::UploadsFeed feed(sim::Stream::comm);
      shard = shard.to(comm->device());
    }
    const Tensor all = comm->allgather(shard, &work);
    u.arriving = all;
    int64_t at = 0;
    for (const Tensor& p : u.params) {
      if (capture) {
        graph::alias_in_capture(p, all.narrow(0, at, p.numel()).view(p.shape()));
      } else {
        // The values autograd saved, put back without a new version.
        p.storage()->materialize();
        if (p.device().has_data())
          std::memcpy(
              p.raw_data(),
              static_cast<const char*>(all.raw_data()) + at * int64_t(dtype_size(p.dtype())),
              p.nbytes());
      }
      at += p.numel();
    }
    u.whole = true;
  }

  // The unit's whole parameters, now: gathered, or waited for if a prefetch started them.
  void use(Unit& u) {
    start_gather(u);
    if (u.arriving.defined()) comm->wait_for(u.arriving);
    u.arriving = Tensor();
  }

  void prefetch(Unit& u) {
    if (options.prefetch) start_gather(u);
  }

  // Before block unit i's forward: its parameters, and the next block's on their way.
  void before_forward(size_t i) {
    Unit& u = units[i];
    if (u.position < 0) {
      u.position = int(forward_order.size());
      forward_order.push_back(i);
    }
    use(u);
    const size_t next = size_t(u.position) + 1;
    if (next < forward_order.size()) prefetch(units[forward_order[next]]);
  }

  // When the gradient of block unit i's output arrives: its parameters again, and those of the
  // block backward reaches next (the one before it in the forward) on their way.
  void before_backward(size_t i) {
    Unit& u = units[i];
    use(u);
    if (u.position > 0) prefetch(units[forward_order[size_t(u.position) - 1]]);
  }

  void release(Unit& u) {
    if (!u.whole) return;
    const bool captured = graph::capturing().has_value();
    for (const Tensor& p : u.params) {
      if (captured) {
        graph::unalias_in_capture(p);
      } else {
        p.storage()->release();
      }
    }
    u.whole = false;
    u.arriving = Tensor();
  }

  void reduce(Unit& u) {
    autograd::NoGradGuard no_grad;
    Tensor flat;
    {
      MemoryScope scope(MemoryCategory::gradients);
      flat = flatten(u, /*gradients=*/true);
    }
    for (const Tensor& p : u.params) p.set_grad(Tensor());
    MemoryScope scope(MemoryCategory::gradients);
    if (options.reduce_in_bf16) flat = flat.to(DType::bf16);
    Work work;  // overlaps the rest of backward; synchronize() waits for it
    u.gradient_part = comm->reduce_scatter(flat, ReduceOp::avg, &work);
    reducing.push_back(u.gradient_part);
    if (gradients_to && !u.own) u.gradient_part = u.gradient_part.to(*gradients_to);
    u.pending = -1;  // reduced in this step
  }

  void on_grad_ready(size_t unit) {
    Unit& u = units[unit];
    if (--u.pending == 0) {
      reduce(u);
      release(u);
    } else if (u.position >= 0 && u.pending % int(u.params.size()) == 0) {
      // A block's backward pass is done and more are to come (gradient accumulation): its
      // parameters go until the next pass gathers them, as PyTorch's FSDP reshards after
      // each backward; only the gradients stay whole.
      release(u);
    }
  }
};

namespace {

// Every block of the module tree, outermost first (a block's blocks belong to it).
void find_blocks(const nn::Module& m, std::vector<const nn::Module*>& out) {
  if (m.is_block()) {
    out.push_back(&m);
    return;
  }
  for (const auto& [name, child] : m.children()) find_blocks(*child, out);
}

}  // namespace

FullyShardedDataParallel::FullyShardedDataParallel(nn::Module& module, Communicator& comm,
                                                   FSDPOptions options)
    : state_(std::make_shared<State>()) {
  DLF_CHECK(options.backward_passes > 0, "FSDP: backward_passes must be positive");
  State& s = *state_;
  s.comm = &comm;
  s.options = options;
  {
    autograd::NoGradGuard no_grad;
    for (auto& [name, t] : module.named_parameters()) comm.broadcast(t, 0);
    for (auto& [name, t] : module.named_buffers()) comm.broadcast(t, 0);
  }
  std::vector<const nn::Module*> blocks;
  find_blocks(module, blocks);
  std::set<const Storage*> taken;
  auto add_unit = [&](const std::vector<Tensor>& params) {
    State::Unit u;
    for (const Tensor& p : params) {
      if (!taken.insert(p.storage().get()).second) continue;  // tied: in the first unit only
      DLF_CHECK(p.is_contiguous() && p.offset() == 0 &&
                    int64_t(p.storage()->nbytes()) == int64_t(p.nbytes()),
                "FSDP: a parameter must own its whole storage (shape ", shape_str(p.shape()), ")");
      u.params.push_back(p);
      u.numel += p.numel();
    }
    if (u.params.empty()) return false;
    u.part = (u.numel + comm.size() - 1) / comm.size();
    s.units.push_back(std::move(u));
    return true;
  };
  std::vector<std::pair<nn::Module*, size_t>> block_units;  // a block and its unit
  for (const nn::Module* b : blocks) {
    if (add_unit(b->parameters()))
      block_units.emplace_back(const_cast<nn::Module*>(b), s.units.size() - 1);
  }
  for (const Tensor& p : options.own_units) {
    if (!add_unit({p})) continue;
    s.roots.push_back(s.units.size() - 1);
    s.units.back().own = true;
  }
  if (add_unit(module.parameters())) s.roots.push_back(s.units.size() - 1);  // the rest
  autograd::NoGradGuard no_grad;
  for (State::Unit& u : s.units) {
    u.pending = int(u.params.size()) * options.backward_passes;
    {
      MemoryScope scope(MemoryCategory::parameters);
      u.shard = s.flatten(u, false).narrow(0, comm.rank() * u.part, u.part).clone();
      if (options.shards_on) u.shard = u.shard.to(*options.shards_on);
    }
    s.release(u);
  }
  for (size_t i = 0; i < s.units.size(); ++i) {
    std::weak_ptr<State> weak = state_;
    for (const Tensor& p : s.units[i].params)
      p.register_grad_ready_hook([weak, i](const Tensor&) {
        if (auto st = weak.lock()) st->on_grad_ready(i);
      });
  }
  for (const auto& block_unit : block_units) {
    nn::Module* block = block_unit.first;
    const size_t i = block_unit.second;  // a plain variable: lambdas capture it (clang 14)
    std::weak_ptr<State> weak = state_;
    auto hooks = std::make_shared<nn::Module::BlockHooks>();
    hooks->before_forward = [weak, i] {
      if (auto st = weak.lock()) st->before_forward(i);
    };
    hooks->after_forward = [weak, i](const Tensor& out) {
      auto st = weak.lock();
      if (!st) return;
      // Backward needs the parameters again: gathered when the output's gradient arrives.
      if (out.requires_grad())
        out.register_hook([weak, i](const Tensor&) {
          if (auto later = weak.lock()) later->before_backward(i);
          return Tensor();
        });
      st->release(st->units[i]);
    };
    block->set_block_hooks(hooks);
  }
}

FullyShardedDataParallel::~FullyShardedDataParallel() = default;

void FullyShardedDataParallel::synchronize() {
  State& s = *state_;
  for (State::Unit& u : s.units) {
    if (u.pending >= 0) {  // some of its parameters got no gradient in this step
      s.reduce(u);
      s.release(u);
    }
    u.pending = int(u.params.size()) * s.options.backward_passes;
  }
  for (const Tensor& part : s.reducing) s.comm->wait_for(part);
  s.reducing.clear();
  for (State::Unit& u : s.units) {
    const DType dtype = u.params.front().dtype();
    if (u.gradient_part.defined() && u.gradient_part.dtype() != dtype) {  // arrived in bf16
      autograd::NoGradGuard no_grad;
      MemoryScope scope(MemoryCategory::gradients);
      u.gradient_part = u.gradient_part.to(dtype);
    }
  }
}

void FullyShardedDataParallel::unshard() {
  State& s = *state_;
  for (size_t root : s.roots) s.use(s.units[root]);
  if (!s.forward_order.empty()) s.prefetch(s.units[s.forward_order.front()]);
}

void FullyShardedDataParallel::reshard() {
  State& s = *state_;
  for (size_t root : s.roots) s.release(s.units[root]);
}

void FullyShardedDataParallel::gather_whole() {
  for (State::Unit& u : state_->units) state_->use(u);
}

void FullyShardedDataParallel::release_whole() {
  for (State::Unit& u : state_->units) state_->release(u);
}

nn::NamedTensors FullyShardedDataParallel::whole_copy(const std::function<nn::NamedTensors()>& read,
                                                      bool keep) {
  gather_whole();
  nn::NamedTensors copy;
  if (keep)
    for (const auto& [name, t] : read()) copy.emplace_back(name, t.clone());
  release_whole();
  return copy;
}

int FullyShardedDataParallel::num_buckets() const { return int(state_->units.size()); }

const std::vector<Tensor>& FullyShardedDataParallel::bucket_params(int b) const {
  return state_->units.at(size_t(b)).params;
}

int64_t FullyShardedDataParallel::part_size(int b) const {
  return state_->units.at(size_t(b)).part;
}

std::vector<OwnedPiece> FullyShardedDataParallel::owned_pieces() const {
  std::vector<OwnedPiece> pieces;
  for (size_t b = 0; b < state_->units.size(); ++b) {
    const State::Unit& u = state_->units[b];
    for (OwnedPiece& o : pieces_of_part(u.params, int(b), u.part, state_->comm->rank())) {
      o.value = u.shard.narrow(0, o.offset, o.end - o.begin);  // the shard holds the values
      pieces.push_back(std::move(o));
    }
  }
  return pieces;
}

Tensor FullyShardedDataParallel::piece_gradient(const OwnedPiece& piece) const {
  const Tensor& g = state_->units.at(size_t(piece.bucket)).gradient_part;
  return g.defined() ? g.narrow(0, piece.offset, piece.end - piece.begin) : Tensor();
}

void FullyShardedDataParallel::offload_gradients(Device host) { state_->gradients_to = host; }

void FullyShardedDataParallel::publish_updates(const std::vector<OwnedPiece>&) {
  // The shards were updated in place: whole values are stale, gathered again when next used;
  // the gradient parts are consumed.
  for (State::Unit& u : state_->units) {
    state_->release(u);
    u.gradient_part = Tensor();
  }
}

}  // namespace dlf::parallel
