#include <dlf/core/op_class_times.h>

namespace dlf {

void OpClassTimes::on_op_start(const OpDef&) {
  if (depth_++ == 0) start_ = std::chrono::steady_clock::now();
}

void OpClassTimes::on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                         std::span<const Tensor> outputs) {
  if (--depth_ != 0 || op.view) return;
  const double measured =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  Totals& t = classes_[static_cast<size_t>(op_class(op.name))];
  ++t.calls;
  t.measured += measured;
  t.predicted += simulated_seconds(spec_, op, op_cost(op, inputs, attrs, outputs), inputs, outputs);
}

}  // namespace dlf
