#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "linalg",
    {
        GradCase{"matmul", "2-d",
                 [] {
                   return leaves({{2, 3}, {3, 4}});
                 },
                 [](const V& x) { return matmul(x[0], x[1]); }},
        GradCase{"matmul", "batched with broadcast batch dims",
                 [] {
                   return leaves({{2, 1, 2, 3}, {3, 3, 2}});
                 },
                 [](const V& x) { return matmul(x[0], x[1]); }},
        GradCase{"matmul", "transposed operands",
                 [] {
                   return V{test::transposed_leaf({3, 2}), test::transposed_leaf({2, 4})};
                 },
                 [](const V& x) { return matmul(x[0], x[1]); }},
        GradCase{"matmul", "vector @ batched matrix",
                 [] {
                   return leaves({{3}, {2, 3, 2}});
                 },
                 [](const V& x) { return matmul(x[0], x[1]); }},
        GradCase{"matmul", "matrix @ vector",
                 [] {
                   return leaves({{2, 3}, {3}});
                 },
                 [](const V& x) { return matmul(x[0], x[1]); }},
        GradCase{"linear", "bias, 3-d input",
                 [] {
                   return leaves({{2, 3, 4}, {5, 4}, {5}});
                 },
                 [](const V& x) { return linear(x[0], x[1], x[2]); }},
        GradCase{"linear", "no bias, 1-d input",
                 [] {
                   return leaves({{4}, {3, 4}});
                 },
                 [](const V& x) { return linear(x[0], x[1]); }},
        GradCase{"linear", "fused relu",
                 [] {
                   return leaves({{3, 4}, {5, 4}, {5}});
                 },
                 [](const V& x) { return linear(x[0], x[1], x[2], Activation::relu); }},
        GradCase{"linear", "fused gelu (tanh)",
                 [] {
                   return leaves({{3, 4}, {5, 4}, {5}});
                 },
                 [](const V& x) { return linear(x[0], x[1], x[2], Activation::gelu_tanh); }},
        GradCase{"linear", "fused gelu (erf), transposed weight",
                 [] {
                   return V{leaves({{2, 4}})[0], test::transposed_leaf({3, 4}), leaves({{3}})[0]};
                 },
                 [](const V& x) { return linear(x[0], x[1], x[2], Activation::gelu_erf); }},
    });
}  // namespace

TEST_CASE("gradcheck: matmul and linear") { test::run_grad_cases("linalg"); }
