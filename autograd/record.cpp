// The autograd hook at the dispatch choke point: links each op's outputs to a backward node.
#include <dlf/autograd/grad_mode.h>

#include "autograd/backward_registry.h"
#include "autograd/graph_nodes.h"
#include "autograd/recompute_region.h"

namespace dlf::autograd {
namespace {

void record(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
            std::vector<Tensor>& outputs) {
  RecomputeRegion::keep(op, inputs, attrs, outputs);
  if (!grad_enabled()) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any) return;
  DLF_CHECK(op.inplace < 0, "in-place op '", op.name,
            "' with an input that requires grad would "
            "change a value autograd needs; use the out-of-place form or autograd::NoGradGuard");
  const BackwardDef* def = find_backward(op);
  if (def == nullptr) {
    if (is_nondifferentiable(op.name)) return;
    throw Error("op '" + op.name +
                "' has no backward, but an input requires grad; call it under "
                "autograd::NoGradGuard or on detach()ed inputs");
  }
  auto node = std::make_shared<OpNode>(op, *def, attrs, inputs, outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!is_floating(out.dtype())) continue;
    for (const Tensor& in : inputs) {
      if (out.is_same(in)) out = out.detach();  // an op handing back its input gets its own link
    }
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = node;
    meta->output_nr = static_cast<int>(i);
    out.set_autograd_meta(std::move(meta));
  }
  node->save(inputs, outputs);
}

[[maybe_unused]] const bool installed = (set_autograd_hook(record), true);

}  // namespace
}  // namespace dlf::autograd
