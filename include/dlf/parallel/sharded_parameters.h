// What a ZeroOptimizer needs from the wrapper that reduces the gradients (DDP under ZeRO-1 and
// -2, FSDP under ZeRO-3): parameters in buckets, each bucket cut into one equal part per rank
// (Megatron-LM's distributed optimizer); the pieces of parameters in this rank's parts, with
// their averaged gradients; and how the updated pieces reach the other ranks.
#pragma once
#include <vector>

#include <dlf/core/tensor.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel {

/// The elements [begin, end) of a parameter (flattened) that lie in this rank's part of a
/// bucket, at `offset` in that part. `value` holds them: the optimizer updates it in place.
struct OwnedPiece {
  Tensor param;    ///< the parameter
  int bucket = 0;  ///< which bucket's part it lies in
  /// its elements [begin, end) in the flattened parameter, at `offset` in the part
  ///@{
  int64_t begin = 0, end = 0, offset = 0;
  ///@}
  Tensor value;  ///< holds the piece's elements: updated in place
};

/// The pieces of `params`, flattened one after another as bucket `bucket`, that lie in part
/// `rank` of `part` elements each; their `value` is left for the caller.
std::vector<OwnedPiece> pieces_of_part(const std::vector<Tensor>& params, int bucket, int64_t part,
                                       int rank);

/// A data-parallel wrapper's layout of the parameters (see above).
class ShardedParameters {
 public:
  virtual ~ShardedParameters() = default;
  virtual int num_buckets() const = 0;  ///< buckets
  /// Bucket b's parameters, in the order they are flattened.
  virtual const std::vector<Tensor>& bucket_params(int b) const = 0;
  /// Elements of each rank's part of bucket b: its size padded to a multiple of the ranks,
  /// divided by them.
  virtual int64_t part_size(int b) const = 0;
  /// This rank's pieces, bucket by bucket, in flattened order.
  virtual std::vector<OwnedPiece> owned_pieces() const = 0;
  /// A piece's averaged gradient once the gradients are reduced (undefined if it has none, and
  /// with sharded gradients once publish_updates has released them).
  virtual Tensor piece_gradient(const OwnedPiece& piece) const = 0;
  /// Whether every rank also holds the whole averaged gradients (ZeRO-1).
  virtual bool whole_gradients() const = 0;
  /// After this rank's pieces were updated: every rank gets the updated parameters (collective),
  /// and this rank's parts of the averaged gradients, consumed, are released (ZeRO-2 and -3:
  /// kept, they would live through the next step's forward, at its peak).
  virtual void publish_updates(const std::vector<OwnedPiece>& mine) = 0;
  /// ZeRO-Offload's gradients: with sharded gradients (ZeRO-2 and -3), each bucket's part of
  /// the averaged gradients goes down to `host` as soon as it is reduced, so the copies overlap
  /// the rest of backward (a sim device's host stream), and piece_gradient() is on `host`.
  /// Whole gradients (ZeRO-1) and a bucket of its own (a tied weight: sum_tied_gradient) stay.
  virtual void offload_gradients(Device host) = 0;
};

/// Sums the averaged gradient of `p` with those of its copies on the other ranks of `group` (a
/// weight tied across ranks, as a pipeline's embedding on its first and last stage), so every
/// copy takes the same step (collective over `group`). With whole gradients (no data
/// parallelism: `sharded` null; ZeRO-0 and -1) the whole gradient; with sharded ones (ZeRO-2
/// and -3) this rank's part of it, which needs `p` alone in its bucket
/// (DDPOptions::own_buckets, FSDPOptions::own_units) so that the copies' parts hold the same
/// elements.
void sum_tied_gradient(const Tensor& p, Communicator& group, const ShardedParameters* sharded);

}  // namespace dlf::parallel
