#include <set>

#include "common.h"

namespace dlf::plan {
namespace {

// The largest block's parameter bytes, and the blocks' parameters (FSDP's units).
void visit_blocks(const nn::Module& m, ZeroShape& z, std::set<const Storage*>& in_blocks) {
  if (m.is_block()) {
    int64_t bytes = 0;
    for (const Tensor& p : m.parameters()) {
      bytes += int64_t(p.nbytes());
      in_blocks.insert(p.storage().get());
    }
    z.largest_block_bytes = std::max(z.largest_block_bytes, bytes);
    return;
  }
  for (const auto& [name, child] : m.children()) visit_blocks(*child, z, in_blocks);
}

}  // namespace

ZeroShape zero_shape(const nn::Module& model) {
  ZeroShape z;
  std::set<const Storage*> in_blocks;
  visit_blocks(model, z, in_blocks);
  for (const Tensor& p : model.parameters())
    if (!in_blocks.contains(p.storage().get())) z.root_param_bytes += int64_t(p.nbytes());
  return z;
}

}  // namespace dlf::plan
