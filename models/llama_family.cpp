// The Llama family: next-byte prediction on text as GPT's, data-parallel or tensor-parallel
// (Megatron's split of heads, kv heads and MLP units).
#include <dlf/models/family.h>
#include <dlf/models/llama.h>
#include <dlf/models/llama_names.h>

#include <algorithm>

#include "families.h"
#include "named_config.h"

namespace dlf::models {

const Family& llama_family() {
  static const Family family{
      .name = "llama",
      .models = detail::names_of(llama_configs()),
      .unit = "tok",
      .generates = Generates::text,
      .build =
          [](const std::string& name, const BuildOptions& o) {
            LlamaConfig c = llama_config(name);
            c.linears = o.linears;
            if (o.vocab > 0) c.vocab = o.vocab;
            return std::unique_ptr<nn::Module>(std::make_unique<Llama>(c));
          },
      .tp_split = llama_tensor_parallel_split,
      // dlf's Llama has LlamaForCausalLM's names and rotary convention already.
      .hf = {.model_class = "LlamaForCausalLM",
             .to_hf = [](const nn::NamedTensors& state) { return state; },
             .from_hf = llama_from_hf,
             .recognises = is_hf_llama},
      .load_data = text_data,
      .loss =
          [](const nn::Module& model, const std::vector<Tensor>& b) {
            return static_cast<const Llama&>(model).loss(b[0], b[1]);
          },
      .task =
          [](const TaskSetup& s) {
            return next_token_task(s, llama_family().sequence(s.model, s.seq));
          },
      .example_batch =
          [](const std::string& name, int64_t batch, int64_t seq, Generator& gen) {
            const LlamaConfig c = llama_config(name);
            return next_token_batch(c.vocab, c.context, batch, seq, gen);
          },
      // Meta's batches for the planning sizes: Llama 2's 4M tokens of 4096 (Touvron et al. 2023),
      // 405B's 16M tokens of 8192 in its main phase (Dubey et al. 2024); 4M for Llama 3's others.
      .default_batch = [](const std::string& name) -> int64_t {
        if (name.starts_with("llama2-")) return 1024;
        if (name == "llama3-405b") return 2048;
        if (name.starts_with("llama3-")) return 512;
        return 8;
      },
      .sequence =
          [](const std::string& name, int64_t seq) {
            const int64_t context = llama_config(name).context;
            DLF_CHECK(seq <= context, "--seq ", seq, " is longer than ", name, "'s context of ",
                      context, " tokens");
            // Llama 3.1 pre-trained on 8192 tokens and stretched its context afterwards.
            return seq > 0 ? seq : std::min<int64_t>(context, 8192);
          },
  };
  return family;
}

}  // namespace dlf::models
