// rotary_embedding: one op, a fused kernel (core/kernels/nn_rotary.cpp); its gradient is the
// same op rotating the other way (attr inverse).
#include <dlf/core/op.h>
#include <dlf/core/ops/nn_ops.h>

#include <algorithm>

#include "core/kernels/nn_rotary.h"

namespace dlf {
namespace {

const OpDef& rotary_op = register_op({
    .name = "rotary_embedding",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      const Tensor& x = in[0];
      DLF_CHECK(is_floating(x.dtype()), "rotary_embedding: dtype must be floating, got ",
                dtype_name(x.dtype()));
      DLF_CHECK(x.dim() >= 2 && x.shape().back() % 2 == 0,
                "rotary_embedding: input needs at least 2 dims and an even last dim, got shape ",
                shape_str(x.shape()));
      const int64_t seq = a.i("seq_dim"), rank = x.dim();
      DLF_CHECK(seq >= -rank && seq < rank && wrap_dim(seq, rank) != rank - 1,
                "rotary_embedding: seq_dim ", seq, " is not a dim before the last of shape ",
                shape_str(x.shape()));
      DLF_CHECK(a.f("theta") > 0 && a.i("offset") >= 0,
                "rotary_embedding: theta must be positive and offset non-negative (theta ",
                a.f("theta"), ", offset ", a.i("offset"), ")");
      const std::vector<int64_t>& rows = a.ints("row_offsets");
      DLF_CHECK(rows.empty() || (wrap_dim(seq, rank) != 0 && int64_t(rows.size()) == x.size(0) &&
                                 std::ranges::all_of(rows, [](int64_t n) { return n >= 0; })),
                "rotary_embedding: row_offsets needs one offset >= 0 per row of dim 0 (", x.size(0),
                ") and the positions along another dim, got ", rows.size(), " offsets and seq_dim ",
                seq);
      const double factor = a.f("scaling_factor");
      DLF_CHECK(factor == 0 || (factor > 0 && a.f("low_freq_factor") > 0 &&
                                a.f("high_freq_factor") > a.f("low_freq_factor") &&
                                a.i("original_context") > 0),
                "rotary_embedding: Llama 3 scaling needs factor > 0, 0 < low_freq_factor < "
                "high_freq_factor and original_context > 0 (got factor ",
                factor, ", low ", a.f("low_freq_factor"), ", high ", a.f("high_freq_factor"),
                ", original_context ", a.i("original_context"), ")");
      return {{x.shape(), x.dtype()}};
    },
    .kernel = [](Inputs in, const Attrs& a,
                 Outputs out) { kernels::rotary_forward(in[0], a, out[0]); },
    // Per pair: four products and two sums (three flops an element); x read, y written once.
    .cost = [](Inputs in, const Attrs&, std::span<const Tensor> out) -> Cost {
      return {3.0 * static_cast<double>(in[0].numel()), static_cast<double>(in[0].nbytes()),
              static_cast<double>(out[0].nbytes())};
    },
});

}  // namespace

Tensor rotary_embedding(const Tensor& x, const RotaryOptions& o) {
  return dispatch1(rotary_op, {x},
                   {{"theta", o.theta},
                    {"interleaved", o.interleaved},
                    {"offset", o.offset},
                    {"seq_dim", o.seq_dim},
                    {"scaling_factor", o.scaling.factor},
                    {"low_freq_factor", o.scaling.low_freq_factor},
                    {"high_freq_factor", o.scaling.high_freq_factor},
                    {"original_context", o.scaling.original_context},
                    {"row_offsets", o.row_offsets},
                    {"inverse", false}});
}

}  // namespace dlf
