// The fused ops graph mode's passes make, dispatched directly: each computes what its unfused
// ops do.
#include "test_util.h"

#include <functional>

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

// The last op dispatched while it watched, as dispatched.
struct LastOp : DispatchObserver {
  const OpDef* op = nullptr;
  std::vector<Tensor> inputs;
  Attrs attrs;
  void on_op(const OpDef& o, Inputs in, const Attrs& a, std::span<const Tensor>) override {
    op = &o;
    inputs.assign(in.begin(), in.end());
    attrs = a;
  }
};

template <typename Fn>
LastOp last_op(Fn&& fn) {
  LastOp last;
  add_observer(&last);
  fn();
  remove_observer(&last);
  return last;
}

}  // namespace

TEST_CASE("fused ops: matmul_add, linear_add and conv2d_add are the product plus a tensor") {
  const Tensor a = randn({3, 4}), b = randn({4, 5}), w = randn({5, 4}), bias = randn({5});
  const Tensor x = randn({2, 3, 6, 6}).contiguous(MemoryFormat::channels_last);  // oneDNN's path
  const Tensor k = randn({4, 3, 3, 3}), kb = randn({4});
  for (const auto& product : std::vector<std::function<Tensor()>>{
           [&] { return matmul(a, b); },
           [&] { return linear(a, w, bias, Activation::relu); },
           [&] {
             return conv2d(x, k, kb, {.padding = {1, 1}});
           },
       }) {
    Tensor expected;
    const LastOp base = last_op([&] { expected = product(); });
    const OpDef* fused = epilogue_add_op(*base.op);
    REQUIRE(fused != nullptr);
    INFO(fused->name);
    CHECK(fused->name == base.op->name + "_add");
    CHECK(added_input(*fused) == int(base.inputs.size()));
    const Tensor other = randn(expected.shape()).contiguous(expected.memory_format());
    std::vector<Tensor> inputs = base.inputs;
    inputs.push_back(other);
    check_close(dispatch1(*fused, inputs, base.attrs), expected + other, 1e-5, 1e-5);
    inputs.back() = randn({1});
    check_error([&] { dispatch1(*fused, inputs, base.attrs); },
                {fused->name, ": the added tensor must be f32"});
  }
  CHECK(epilogue_add_op(find_op("add")) == nullptr);
  CHECK(added_input(find_op("matmul")) == -1);
}

TEST_CASE("fused ops: fused_elementwise runs its chain: x * y + x, and x * y, hand-computed") {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5}), y = from_vector<float>({2, -1, 0.5f, 3, 0});
  const std::vector<FusedMember> chain = {
      {.op = &find_op("mul"), .attrs = {}, .sources = {0, 1}},  // source 2
      {.op = &find_op("add"), .attrs = {}, .sources = {2, 0}},  // source 3
  };
  const std::vector<Tensor> out =
      dispatch(fused_elementwise_op(), {x, y}, fused_attrs(chain, {1, 0}, {5}, 2, 10));
  REQUIRE(out.size() == 2);
  check_close(out[0], {3, 0, 4.5, 16, 5}, {5});
  check_close(out[1], {2, -2, 1.5, 12, 0}, {5});
  // A member may read only inputs and the members before it.
  const std::vector<FusedMember> ahead = {{.op = &find_op("neg"), .attrs = {}, .sources = {1}}};
  check_error([&] { dispatch(fused_elementwise_op(), {x}, fused_attrs(ahead, {0}, {5}, 1, 5)); },
              {"fused_elementwise: member 0 ('neg') reads source 1"});
}
