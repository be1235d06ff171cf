// GPT weights under Hugging Face GPT-2's names and layout, and back to dlf's (nanoGPT's).
#pragma once
#include <dlf/nn/module.h>

namespace dlf::models {

/// A GPT state in GPT-2's layout, as Hugging Face's own files hold it: no `transformer.`
/// prefix, the four Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) stored
/// [in, out] (transposed), and no lm_head.weight (it is wte's).
nn::NamedTensors gpt_to_hf(const nn::NamedTensors& state);
/// dlf's names from a GPT-2-layout state, with or without the `transformer.` prefix (GPT2Model's
/// files or GPT2LMHeadModel's): the Conv1D weights transposed back, the causal-mask buffers
/// (attn.bias, attn.masked_bias) dropped. A given lm_head.weight must equal wte's (dlf ties
/// them); a dlf::Error says so otherwise.
nn::NamedTensors gpt_from_hf(const nn::NamedTensors& state);
/// Whether a state is in GPT-2's layout: its first block's attn.c_attn.weight is [dim, 3·dim]
/// (Conv1D) where dlf's is [3·dim, dim].
bool is_hf_gpt(const nn::NamedTensors& state);

}  // namespace dlf::models
