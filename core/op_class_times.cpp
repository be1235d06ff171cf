#include <dlf/core/op_class_times.h>

namespace dlf {

void OpClassTimes::clear() {
  classes_ = {};
  ops_by_name_.clear();
  ops_.clear();
}

void OpClassTimes::on_op_start(const OpDef&) {
  if (depth_++ == 0) start_ = std::chrono::steady_clock::now();
}

void OpClassTimes::on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                         std::span<const Tensor> outputs) {
  if (--depth_ != 0 || op.view) return;
  if (op.collective) {  // not compared (it waits for its peers), but its bytes pass the caches
    cold_starts_.moved(op_cost(op, inputs, attrs, outputs).bytes());
    return;
  }
  const double measured =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const OpClass c = op_class(op.name);
  const Cost cost = op_cost(op, inputs, attrs, outputs);
  const double predicted = simulated_seconds(spec_, op, cost, inputs, outputs, &cold_starts_);
  auto named = ops_by_name_.find(op.name);
  if (named == ops_by_name_.end()) named = ops_by_name_.emplace(op.name, Totals{}).first;
  for (Totals* t : {&classes_[static_cast<size_t>(c)], &named->second}) {
    ++t->calls;
    t->measured += measured;
    t->predicted += predicted;
  }
  if (keep_ops_) {
    const DType dtype = outputs.empty() ? inputs[0].dtype() : outputs[0].dtype();
    ops_.push_back({.op_class = c,
                    .precision = math_precision(dtype),
                    .flops = cost.flops,
                    .bytes = cost.bytes(),
                    .rows = cost.rows,
                    .cold = cold_starts_.last_share(),
                    .measured = measured});
  }
}

}  // namespace dlf
