// Llama weights in Hugging Face's LlamaForCausalLM layout, and the q/k row order of the two
// rotary conventions.
//
// Which convention each file layout uses:
// - Hugging Face's files (model.layers.N.self_attn.q_proj.weight, ... in model.safetensors or
//   model-0000i-of-0000N.safetensors): rotate-half, each head's pairs (j, j + d/2). dlf's Llama
//   has these names and this convention, so such weights load as they are.
// - Meta's original checkpoints (consolidated.00.pth, layers.N.attention.wq.weight, ...):
//   interleaved, pairs (2j, 2j + 1). Hugging Face's convert_llama_weights_to_hf.py reorders their
//   q and k rows (its `permute`); rotate_half_state does the same, interleaved_state undoes it.
#pragma once
#include <dlf/models/llama.h>
#include <dlf/nn/module.h>

namespace dlf::models {

/// q_proj or k_proj weight rows [heads·d, in] of the interleaved convention reordered for
/// rotate-half: within each head, rows (2j, 2j + 1) become (j, j + d/2) (Hugging Face's
/// `permute`).
Tensor rotate_half_rows(const Tensor& weight, int64_t heads);
/// The inverse of rotate_half_rows: rotate-half rows back to the interleaved order.
Tensor interleaved_rows(const Tensor& weight, int64_t heads);

/// A Llama state (dlf's names) whose q and k rows are laid out for interleaved rotary (Meta's),
/// with them reordered for rotate-half (Hugging Face's and dlf's): the same model's logits from
/// a Llama of `config`.
nn::NamedTensors rotate_half_state(const nn::NamedTensors& state, const LlamaConfig& config);
/// The inverse: rotate-half q and k rows reordered for a Llama with interleaved rotary
/// (LlamaConfig::rotary_interleaved).
nn::NamedTensors interleaved_state(const nn::NamedTensors& state, const LlamaConfig& config);

/// dlf's names from LlamaForCausalLM's: the same names, without the rotary_emb.inv_freq buffers
/// that older transformers versions saved.
nn::NamedTensors llama_from_hf(const nn::NamedTensors& state);
/// Whether a state has LlamaForCausalLM's names (model.layers.0.self_attn.q_proj.weight).
bool is_hf_llama(const nn::NamedTensors& state);

}  // namespace dlf::models
