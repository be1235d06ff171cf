#include <dlf/autograd/anomaly.h>
#include <dlf/core/op.h>

#include <cmath>

#include "autograd/graph_nodes.h"

namespace dlf {

namespace {

template <typename T>
bool finite_values(const T* p, int64_t n) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) finite &= std::isfinite(p[i]);  // no branch: vectorises
  return finite;
}

bool finite_bf16(const uint16_t* p, int64_t n) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) finite &= (p[i] & 0x7F80) != 0x7F80;  // exponent all ones
  return finite;
}

}  // namespace

bool all_finite(const Tensor& t) {
  if (!t.defined() || !t.device().has_data() || !is_floating(t.dtype())) return true;
  const Tensor c = t.contiguous();
  switch (c.dtype()) {
    case DType::f32:
      return finite_values(c.data<float>(), c.numel());
    case DType::f64:
      return finite_values(c.data<double>(), c.numel());
    default:  // bf16
      return finite_bf16(static_cast<const uint16_t*>(c.raw_data()), c.numel());
  }
}

}  // namespace dlf

namespace dlf::autograd {

struct DetectAnomalyGuard::Checker final : DispatchObserver {
  bool checking = false;  // the check's own ops (to, contiguous) are not checked

  void on_op(const OpDef& op, Inputs inputs, const Attrs&,
             std::span<const Tensor> outputs) override {
    if (checking || op.view) return;
    checking = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{checking};
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (all_finite(outputs[k])) continue;
      for (const Tensor& in : inputs) {
        if (!all_finite(in)) return;  // not the first op: its input was already bad
      }
      std::string where;
      if (const Node* node = running_backward_node())
        where = " while computing the gradient of '" + node->name() + "'";
      throw Error(detail::concat("detect_anomaly: op '", op.name, "'", where,
                                 " turned finite inputs into NaN or infinity (output ", k,
                                 ", shape ", shape_str(outputs[k].shape()), ")"));
    }
  }
};

DetectAnomalyGuard::DetectAnomalyGuard() : checker_(std::make_unique<Checker>()) {
  add_observer(checker_.get());
}

DetectAnomalyGuard::~DetectAnomalyGuard() { remove_observer(checker_.get()); }

}  // namespace dlf::autograd
