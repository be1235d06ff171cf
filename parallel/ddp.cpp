#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/parallel/ddp.h>

#include <algorithm>
#include <optional>

namespace dlf::parallel {

struct DistributedDataParallel::Reducer {
  struct Bucket {
    std::vector<Tensor> params;
    int64_t numel = 0, part = 0;  // elements; each rank's part of them, padded
    int pending = 0;  // gradients not final yet in this step (parameters x backward passes)
    bool launched = false;
    bool own = false;      // a parameter of DDPOptions::own_buckets, alone
    Tensor gradient_part;  // shard_gradients: this rank's part of the average
    Tensor wire;           // reduce_in_bf16: the bf16 buffer being averaged
  };

  Communicator* comm;
  int backward_passes = 1;
  bool shard_gradients = false;
  bool reduce_in_bf16 = false;
  std::optional<Device> gradients_to;  // offload_gradients()
  std::vector<Bucket> buckets;
  // The reductions under way, waited for in synchronize(): by their result (an op, so a
  // captured step waits there too), or, for a reduce-scatter whose part goes down to the host
  // at once (ZeRO-Offload, not captured), by its Work: the device's copy is gone by then.
  std::vector<Tensor> reducing;
  std::vector<Work> scattering;

  // Flattens the bucket's gradients, starts their average, and points each gradient at its
  // part of the (soon reduced) flat buffer.
  void launch(Bucket& b) {
    autograd::NoGradGuard no_grad;
    std::vector<Tensor> flat;
    for (const Tensor& p : b.params) {
      const Tensor g = p.grad();
      flat.push_back(g.defined() ? g.reshape({-1})
                                 : zeros({p.numel()}, {.dtype = p.dtype(), .device = p.device()}));
    }
    const Tensor& any = b.params.front();
    const int64_t padding = b.part * comm->size() - b.numel;
    if (shard_gradients && padding > 0)
      flat.push_back(zeros({padding}, {.dtype = any.dtype(), .device = any.device()}));
    Tensor buffer;
    {
      MemoryScope scope(MemoryCategory::gradients);
      buffer = flat.size() == 1 ? flat[0].clone() : cat(flat, 0);
      if (reduce_in_bf16) buffer = buffer.to(DType::bf16);
    }
    b.launched = true;
    if (shard_gradients) {
      MemoryScope scope(MemoryCategory::gradients);
      const bool offloaded = gradients_to && !b.own;
      Work work;
      b.gradient_part = comm->reduce_scatter(buffer, ReduceOp::avg, &work);  // bf16: below
      if (offloaded) {
        scattering.push_back(work);
      } else {
        reducing.push_back(b.gradient_part);
      }
      for (Tensor& p : b.params) p.set_grad(Tensor());
      if (offloaded) b.gradient_part = b.gradient_part.to(*gradients_to);
    } else {
      comm->allreduce(buffer, ReduceOp::avg, /*async=*/true);
      reducing.push_back(buffer);
    }
    if (shard_gradients) return;
    if (reduce_in_bf16) {
      b.wire = buffer;  // the gradients take the average once it has arrived (synchronize)
    } else {
      point_gradients_at(b, buffer);
    }
  }

  // Each gradient of the bucket becomes its part of the flat averaged buffer.
  static void point_gradients_at(Bucket& b, const Tensor& buffer) {
    int64_t offset = 0;
    for (Tensor& p : b.params) {
      p.set_grad(buffer.narrow(0, offset, p.numel()).reshape(p.shape()));
      offset += p.numel();
    }
  }

  void on_grad_ready(size_t bucket) {
    Bucket& b = buckets[bucket];
    if (--b.pending == 0) launch(b);
  }
};

DistributedDataParallel::DistributedDataParallel(nn::Module& module, Communicator& comm,
                                                 DDPOptions options)
    : reducer_(std::make_shared<Reducer>()) {
  DLF_CHECK(options.bucket_bytes > 0, "DDP: bucket_bytes must be positive");
  DLF_CHECK(options.backward_passes > 0, "DDP: backward_passes must be positive");
  reducer_->comm = &comm;
  reducer_->backward_passes = options.backward_passes;
  reducer_->shard_gradients = options.shard_gradients;
  reducer_->reduce_in_bf16 = options.reduce_in_bf16;
  {
    autograd::NoGradGuard no_grad;
    for (auto& [name, t] : module.named_parameters()) comm.broadcast(t, 0);
    for (auto& [name, t] : module.named_buffers()) comm.broadcast(t, 0);
  }
  if (comm.size() == 1) return;  // nothing to average

  // Buckets in reverse registration order: roughly the order backward finishes gradients.
  // A bucket holds one dtype and is closed once it reaches bucket_bytes.
  std::vector<Tensor> params = module.parameters();
  std::reverse(params.begin(), params.end());
  // A parameter of options.own_buckets is alone in its bucket.
  auto alone = [&](const Tensor& p) {
    return std::any_of(options.own_buckets.begin(), options.own_buckets.end(),
                       [&](const Tensor& q) { return q.storage() == p.storage(); });
  };
  int64_t bytes = 0;
  for (const Tensor& p : params) {
    const bool fits = !reducer_->buckets.empty() && bytes < options.bucket_bytes &&
                      reducer_->buckets.back().params.front().dtype() == p.dtype() && !alone(p) &&
                      !reducer_->buckets.back().own;
    if (!fits) {
      reducer_->buckets.emplace_back();
      bytes = 0;
    }
    reducer_->buckets.back().params.push_back(p);
    reducer_->buckets.back().own = alone(p);
    reducer_->buckets.back().numel += p.numel();
    bytes += static_cast<int64_t>(p.nbytes());
  }
  for (Reducer::Bucket& b : reducer_->buckets) b.part = (b.numel + comm.size() - 1) / comm.size();
  for (size_t b = 0; b < reducer_->buckets.size(); ++b) {
    Reducer::Bucket& bucket = reducer_->buckets[b];
    bucket.pending = static_cast<int>(bucket.params.size()) * options.backward_passes;
    for (const Tensor& p : bucket.params) {
      std::weak_ptr<Reducer> weak = reducer_;
      p.register_grad_ready_hook([weak, b](const Tensor&) {
        if (auto r = weak.lock()) r->on_grad_ready(b);
      });
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::synchronize() {
  Reducer& r = *reducer_;
  for (Reducer::Bucket& b : r.buckets) {
    if (!b.launched) r.launch(b);
  }
  for (const Tensor& t : r.reducing) r.comm->wait_for(t);
  for (const Work& w : r.scattering) r.comm->wait(w);
  r.reducing.clear();
  r.scattering.clear();
  for (Reducer::Bucket& b : r.buckets) {
    const DType dtype = b.params.front().dtype();
    if (b.gradient_part.defined() && b.gradient_part.dtype() != dtype) {  // arrived in bf16
      MemoryScope scope(MemoryCategory::gradients);
      b.gradient_part = b.gradient_part.to(dtype);
    }
    if (b.wire.defined()) {
      autograd::NoGradGuard no_grad;
      MemoryScope scope(MemoryCategory::gradients);
      Reducer::point_gradients_at(b, b.wire.to(b.params.front().dtype()));
      b.wire = Tensor();
    }
    b.pending = static_cast<int>(b.params.size()) * r.backward_passes;
    b.launched = false;
  }
}

int DistributedDataParallel::num_buckets() const {
  return static_cast<int>(reducer_->buckets.size());
}

const std::vector<Tensor>& DistributedDataParallel::bucket_params(int b) const {
  return reducer_->buckets.at(size_t(b)).params;
}

int64_t DistributedDataParallel::part_size(int b) const {
  return reducer_->buckets.at(size_t(b)).part;
}

std::vector<OwnedPiece> DistributedDataParallel::owned_pieces() const {
  std::vector<OwnedPiece> pieces;
  for (size_t b = 0; b < reducer_->buckets.size(); ++b) {
    const Reducer::Bucket& bucket = reducer_->buckets[b];
    for (OwnedPiece& o :
         pieces_of_part(bucket.params, int(b), bucket.part, reducer_->comm->rank())) {
      o.value = o.param.reshape({-1}).narrow(0, o.begin, o.end - o.begin);
      pieces.push_back(std::move(o));
    }
  }
  return pieces;
}

Tensor DistributedDataParallel::piece_gradient(const OwnedPiece& piece) const {
  const int64_t n = piece.end - piece.begin;
  if (reducer_->shard_gradients) {
    const Tensor& part = reducer_->buckets.at(size_t(piece.bucket)).gradient_part;
    return part.defined() ? part.narrow(0, piece.offset, n) : Tensor();  // none since the update
  }
  const Tensor g = piece.param.grad();
  return g.defined() ? g.reshape({-1}).narrow(0, piece.begin, n) : Tensor();
}

bool DistributedDataParallel::whole_gradients() const { return !reducer_->shard_gradients; }

void DistributedDataParallel::offload_gradients(Device host) { reducer_->gradients_to = host; }

void DistributedDataParallel::publish_updates(const std::vector<OwnedPiece>& mine) {
  autograd::NoGradGuard no_grad;
  size_t next = 0;  // `mine` is bucket by bucket, in order
  for (int b = 0; b < num_buckets(); ++b) {
    const std::vector<Tensor>& params = bucket_params(b);
    Tensor part = zeros({part_size(b)}, {.dtype = params[0].dtype(), .device = params[0].device()});
    for (; next < mine.size() && mine[next].bucket == b; ++next) {
      const OwnedPiece& o = mine[next];
      part.narrow(0, o.offset, o.end - o.begin).copy_(o.value);
    }
    const Tensor all = reducer_->comm->allgather(part);
    int64_t at = 0;
    for (const Tensor& p : params) {
      Tensor target = p;
      target.copy_(all.narrow(0, at, p.numel()).reshape(p.shape()));
      at += p.numel();
    }
  }
  for (Reducer::Bucket& b : reducer_->buckets) b.gradient_part = Tensor();  // consumed
}

}  // namespace dlf::parallel
