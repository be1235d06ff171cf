#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/parallel/sharded_parameters.h>

#include <algorithm>

namespace dlf::parallel {

std::vector<OwnedPiece> pieces_of_part(const std::vector<Tensor>& params, int bucket, int64_t part,
                                       int rank) {
  std::vector<OwnedPiece> pieces;
  const int64_t lo = int64_t(rank) * part, hi = lo + part;  // the part's elements
  int64_t at = 0;                                           // where a parameter starts
  for (const Tensor& p : params) {
    const int64_t begin = std::max(lo, at), end = std::min(hi, at + p.numel());
    if (begin < end)
      pieces.push_back({.param = p,
                        .bucket = bucket,
                        .begin = begin - at,
                        .end = end - at,
                        .offset = begin - lo,
                        .value = {}});
    at += p.numel();
  }
  return pieces;
}

void sum_tied_gradient(const Tensor& p, Communicator& group, const ShardedParameters* sharded) {
  autograd::NoGradGuard no_grad;
  MemoryScope scope(MemoryCategory::gradients);
  if (!sharded || sharded->whole_gradients()) {
    Tensor g = p.grad().defined() ? p.grad().contiguous().clone() : zeros_like(p);
    group.allreduce(g);
    p.set_grad(g);
    return;
  }
  for (int b = 0; b < sharded->num_buckets(); ++b) {
    const std::vector<Tensor>& params = sharded->bucket_params(b);
    if (std::none_of(params.begin(), params.end(),
                     [&](const Tensor& q) { return q.storage() == p.storage(); }))
      continue;
    DLF_CHECK(params.size() == 1, "a tied weight's gradient is summed part by part: it needs a ",
              "bucket of its own (DDPOptions::own_buckets, FSDPOptions::own_units)");
    for (const OwnedPiece& piece : sharded->owned_pieces()) {
      if (piece.bucket != b) continue;
      Tensor g = sharded->piece_gradient(piece);  // a view of the part: summed in place
      group.allreduce(g);
    }
    return;
  }
  DLF_CHECK(false, "sum_tied_gradient: the parameter (shape ", shape_str(p.shape()),
            ") is not in any bucket");
}

}  // namespace dlf::parallel
