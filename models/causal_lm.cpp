#include <dlf/error.h>
#include <dlf/models/causal_lm.h>

namespace dlf::models {

void CausalLM::check_cache(const nn::KVCache& cache, int64_t layers, int64_t B, int64_t T) const {
  DLF_CHECK(cache.batch() == B && cache.layers() == layers, model_name(), ": a cache of ",
            cache.batch(), " rows and ", cache.layers(), " layers for ", B, " rows of tokens and ",
            layers, " layers");
  for (const int64_t n : cache.lengths())
    DLF_CHECK(n + T <= context(), model_name(), ": positions ", n, "..", n + T - 1,
              " are past the context of ", context());
}

}  // namespace dlf::models
