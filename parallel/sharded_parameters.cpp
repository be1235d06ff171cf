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

}  // namespace dlf::parallel
