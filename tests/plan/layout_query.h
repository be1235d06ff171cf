// The run the layout tests ask about: gpt-mini, a global batch of 8 sequences of 64 tokens.
#pragma once
#include <dlf/models/registry.h>
#include <dlf/plan/layout.h>

namespace dlf::test {

/// The host memory the tests give a run: more than any needs.
constexpr double kLargeHost = 1e15;

/// gpt-mini on `devices` devices of `spec`, no layout or memory flag given.
inline plan::LayoutQuery layout_query(int devices, SimSpec spec = sim_preset("a100-40gb")) {
  return {.model = "gpt-mini",
          .devices = devices,
          .run = {.model = models::gpt_config("gpt-mini"),
                  .layout = {},
                  .spec = spec,
                  .global_batch = 8,
                  .seq = 64},
          .host_available = kLargeHost};
}

}  // namespace dlf::test
