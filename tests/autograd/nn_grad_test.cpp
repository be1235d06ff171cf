#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

// q, k, v as GPT makes them: views of one [B, T, 3, H, d] tensor, transposed to [B, H, T, d].
V qkv_views(int64_t t) {
  Tensor all = leaves({{2, t, 3, 2, 3}})[0];
  return {all};
}
Tensor head(const Tensor& all, int64_t i) { return all.select(2, i).transpose(1, 2); }

Tensor targets(const std::vector<int64_t>& v, const Shape& s) { return from_vector(v, s); }

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "nn",
    {
        GradCase{"cat", "three inputs along dim 1",
                 [] {
                   return leaves({{2, 1}, {2, 3}, {2, 2}});
                 },
                 [](const V& x) { return cat(x, 1); }},
        GradCase{"cat", "stack along a new last dim",
                 [] {
                   return leaves({{3}, {3}});
                 },
                 [](const V& x) { return stack(x, -1); }},
        GradCase{"embedding", "repeated 2-d indices",
                 [] {
                   return leaves({{5, 3}});
                 },
                 [](const V& x) {
                   return embedding(x[0], targets({1, 4, 1, 0, 1, 2}, {2, 3}));
                 }},
        GradCase{"cross_entropy", "mean, ignore_index",
                 [] {
                   return leaves({{4, 5}});
                 },
                 [](const V& x) {
                   return cross_entropy(x[0], targets({1, -100, 4, 0}, {4}));
                 }},
        GradCase{"cross_entropy", "label smoothing, sum",
                 [] {
                   return leaves({{3, 4}});
                 },
                 [](const V& x) {
                   return cross_entropy(x[0], targets({3, 0, 2}, {3}),
                                        {.label_smoothing = 0.1, .reduction = Reduction::sum});
                 }},
        GradCase{"cross_entropy", "[N, C, d] form, no reduction",
                 [] {
                   return V{test::transposed_leaf({3, 4, 2})};
                 },
                 [](const V& x) {
                   return cross_entropy(x[0], targets({0, 3, 1, 2, 2, -100}, {3, 2}),
                                        {.reduction = Reduction::none});
                 }},
        GradCase{"dropout", "fixed generator",
                 [] {
                   return leaves({{4, 5}});
                 },
                 [](const V& x) {
                   Generator g(5);
                   return dropout(x[0], 0.3, true, &g);
                 }},
        GradCase{"scaled_dot_product_attention", "causal, q/k/v as views of one tensor",
                 [] { return qkv_views(4); },
                 [](const V& x) {
                   return scaled_dot_product_attention(head(x[0], 0), head(x[0], 1), head(x[0], 2),
                                                       true);
                 }},
        GradCase{
            "scaled_dot_product_attention", "Tq != Tk, broadcast k/v, custom scale",
            [] {
              return leaves({{2, 3, 4}, {1, 5, 4}, {1, 5, 2}});
            },
            [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], false, 0.7); }},
        GradCase{"scaled_dot_product_attention", "causal with more queries than keys",
                 [] {
                   return leaves({{1, 4, 2}, {1, 3, 2}, {1, 3, 2}});
                 },
                 [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], true); }},
    });
}  // namespace

TEST_CASE("gradcheck: join, embedding, losses, dropout, attention") { test::run_grad_cases("nn"); }

TEST_CASE("the f32 attention backward agrees with the f64 one across query blocks") {
  V in64 = leaves({{1, 2, 150, 8}, {1, 2, 150, 8}, {1, 2, 150, 8}}, 13);
  V in32;
  for (const Tensor& t : in64) in32.push_back(t.detach().to(DType::f32).requires_grad_());
  for (const V* in : {&in64, &in32}) {
    Tensor y = scaled_dot_product_attention((*in)[0], (*in)[1], (*in)[2], true);
    sum(y * y).backward();
  }
  for (int i = 0; i < 3; ++i) test::check_close(in32[i].grad(), in64[i].grad(), 1e-4, 1e-3);
}
