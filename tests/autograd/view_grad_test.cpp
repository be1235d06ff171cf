#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "views", {
                 GradCase{"view", "split and merge dims",
                          [] {
                            return leaves({{2, 6}});
                          },
                          [](const V& x) {
                            return x[0].view({3, 2, 2});
                          }},
                 GradCase{"view", "of a transposed (non-contiguous) leaf via reshape",
                          [] {
                            return V{test::transposed_leaf({3, 4})};
                          },
                          [](const V& x) { return x[0].reshape({12}); }},
                 GradCase{"permute", "3-d",
                          [] {
                            return leaves({{2, 3, 4}});
                          },
                          [](const V& x) {
                            return x[0].permute({2, 0, 1});
                          }},
                 GradCase{"slice", "with a step",
                          [] {
                            return leaves({{3, 7}});
                          },
                          [](const V& x) { return x[0].slice(1, 1, 7, 3); }},
                 GradCase{"slice_backward", "second order of slice",
                          [] {
                            return leaves({{2, 2}});
                          },
                          [](const V& x) {
                            Attrs a{{"dim", int64_t{1}},
                                    {"start", int64_t{1}},
                                    {"end", int64_t{5}},
                                    {"step", int64_t{2}},
                                    {"input_shape", Shape{2, 5}}};
                            return dispatch1(find_op("slice_backward"), {x[0]}, a);
                          }},
                 GradCase{"expand", "broadcast a row and add a dim",
                          [] {
                            return leaves({{1, 3}});
                          },
                          [](const V& x) {
                            return x[0].expand({2, 4, 3});
                          }},
                 GradCase{"expand", "one element", [] { return leaves({{}}); },
                          [](const V& x) { return x[0].expand({3}); }},
                 GradCase{"copy", "contiguous() of a permuted leaf",
                          [] {
                            return V{test::transposed_leaf({2, 3})};
                          },
                          [](const V& x) { return x[0].contiguous(); }},
             });
}  // namespace

TEST_CASE("gradcheck: views and copies") { test::run_grad_cases("views"); }
