#include <dlf/models/llama_names.h>

namespace dlf::models {
namespace {

// Rows of each head viewed as [heads, a, b, in] and swapped to [heads, b, a, in]: with a = d/2,
// b = 2 the interleaved pairs (2j, 2j + 1) land at (j, j + d/2); the other way round undoes it.
Tensor swap_row_groups(const Tensor& w, int64_t heads, int64_t a, int64_t b) {
  DLF_CHECK(w.dim() == 2 && heads > 0 && w.size(0) == heads * a * b,
            "Llama rotary rows: ", shape_str(w.shape()), " is not ", heads, " heads of ", a * b,
            " rows");
  return w.contiguous().view({heads, a, b, w.size(1)}).transpose(1, 2).reshape(w.shape());
}

int64_t rows_per_head(const Tensor& w, int64_t heads) {
  DLF_CHECK(w.dim() == 2 && heads > 0 && w.size(0) % (2 * heads) == 0,
            "Llama rotary rows: ", shape_str(w.shape()), " does not split into ", heads,
            " heads of even size");
  return w.size(0) / heads;
}

// `state` with every q_proj and k_proj weight passed through `reorder` (with its head count).
nn::NamedTensors reorder_qk(const nn::NamedTensors& state, const LlamaConfig& c,
                            Tensor (*reorder)(const Tensor&, int64_t)) {
  nn::NamedTensors out;
  for (const auto& [name, t] : state) {
    const bool q = name.ends_with(".self_attn.q_proj.weight");
    const bool k = name.ends_with(".self_attn.k_proj.weight");
    out.emplace_back(name, q || k ? reorder(t, q ? c.heads : c.kv_heads) : t);
  }
  return out;
}

}  // namespace

Tensor rotate_half_rows(const Tensor& w, int64_t heads) {
  return swap_row_groups(w, heads, rows_per_head(w, heads) / 2, 2);
}

Tensor interleaved_rows(const Tensor& w, int64_t heads) {
  return swap_row_groups(w, heads, 2, rows_per_head(w, heads) / 2);
}

nn::NamedTensors rotate_half_state(const nn::NamedTensors& state, const LlamaConfig& config) {
  return reorder_qk(state, config, rotate_half_rows);
}

nn::NamedTensors interleaved_state(const nn::NamedTensors& state, const LlamaConfig& config) {
  return reorder_qk(state, config, interleaved_rows);
}

nn::NamedTensors llama_from_hf(const nn::NamedTensors& state) {
  nn::NamedTensors out;
  for (const auto& named : state)
    if (!named.first.ends_with(".rotary_emb.inv_freq")) out.push_back(named);
  return out;
}

bool is_hf_llama(const nn::NamedTensors& state) {
  for (const auto& named : state)
    if (named.first == "model.layers.0.self_attn.q_proj.weight") return true;
  return false;
}

}  // namespace dlf::models
