// Counts dispatched ops and their FLOPs and bytes, per op name.
#pragma once
#include <map>
#include <ostream>
#include <string>

#include <dlf/core/op.h>

namespace dlf::app {

class OpCounter : public DispatchObserver {
 public:
  OpCounter() { add_observer(this); }
  ~OpCounter() override { remove_observer(this); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    Row& row = rows_[op.name];
    Cost c = op_cost(op, inputs, attrs, outputs);
    ++row.calls;
    row.flops += c.flops;
    row.bytes += c.bytes_read + c.bytes_written;
  }
  /// A table sorted by FLOPs.
  void print(std::ostream& os) const;

 private:
  struct Row {
    long calls = 0;
    double flops = 0, bytes = 0;
  };
  std::map<std::string, Row> rows_;
};

}  // namespace dlf::app
