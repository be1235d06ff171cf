// Mixed precision: one table, next to dispatch, says in which precision each op computes while
// an AutocastGuard is alive on the thread — the way torch.autocast keeps its op lists.
//
//   lower   matmuls, convolutions, attention, embedding: f32 inputs are cast to the guard's
//           dtype (bf16), so these run on the bf16 units with f32 accumulation;
//   f32     softmax, log_softmax: bf16 inputs are cast up to f32 (cross_entropy needs no entry:
//           it reads bf16 logits and computes and returns its loss in f32 itself);
//   match   layer_norm, group_norm: weight and bias take the input's dtype (their kernels keep
//           the statistics in f32), so a bf16 activation stays bf16;
//   widest  element-wise ops mixing bf16 and f32 compute in f32 (type promotion; the MSE of a
//           bf16 prediction against f32 noise is an f32 loss), unless the f32 inputs are all
//           parameters: those join the bf16 activation in bf16 (through their cast), so that a
//           ViT's position embedding and class token do not widen its residual stream to f32.
//
// Ops outside the table run on whatever dtypes they are given. Casts are ordinary `copy` ops
// (autograd turns their gradients back into f32), and the cast of a parameter (a leaf that
// requires grad) is made once per outermost guard, however often the parameter is used: a tied
// embedding and LM head share one bf16 copy, and so do the micro-batches of a pipeline.
// Backward runs without autocast (autograd's engine turns it off): each backward computes in
// the dtypes its forward saw. Recompute restores the forward's autocast state.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include <dlf/core/dtype.h>
#include <dlf/device/device.h>

namespace dlf {

class Tensor;
struct OpDef;

/// How autocast treats an op (see the file comment).
enum class CastPolicy { none, lower, f32, match, widest };

/// The op's entry in the autocast table.
CastPolicy cast_policy(std::string_view op);

/// The dtype `lower` ops compute in on this thread; nullopt outside autocast.
std::optional<DType> autocast_dtype();
/// What an AutocastGuard takes for a run in `precision` on `device`: bf16 for bf16, nullopt
/// (no autocast) for f32 — and for bf16 where bf16_computes_in_f32(precision, device).
std::optional<DType> autocast_for(DType precision, Device device);
/// Whether a bf16 run on `device` computes in f32: on a CPU without fast bf16
/// (cpu_has_fast_bf16()) bf16 products and convolutions are emulated or run on loops, and with
/// their casts a step ran at 0.25-0.80x f32's speed (docs/performance.md), so the run computes
/// in f32, as fast as fp32 and with fp32's memory. Sim and meta devices keep bf16.
bool bf16_computes_in_f32(DType precision, Device device);

/// Autocast to `dtype` (bf16) for the guard's lifetime on this thread; nullopt turns it off
/// (backward does). Nests; the parameter cast cache is dropped when the outermost guard that
/// turned autocast on ends.
class AutocastGuard {
 public:
  /// Autocast to `dtype` (bf16 only; a dlf::Error for another), or off for nullopt.
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();  ///< restores the state before it
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
  bool enables_;
};

namespace detail {
/// Rewrites `inputs` by the table while autocast is on (dispatch calls it).
void apply_autocast(const OpDef& op, std::vector<Tensor>& inputs);
}  // namespace detail

}  // namespace dlf
