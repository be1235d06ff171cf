#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

V one(const Shape& s) { return leaves({s}); }
V transposed(const Shape& s) { return V{test::transposed_leaf(s)}; }

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "reduce", {
                  GradCase{"sum", "all dims",
                           [] {
                             return one({2, 3});
                           },
                           [](const V& x) { return sum(x[0]); }},
                  GradCase{"sum", "dims {0, 2}",
                           [] {
                             return one({2, 3, 4});
                           },
                           [](const V& x) {
                             return sum(x[0], {0, 2});
                           }},
                  GradCase{"sum", "keepdim, negative dim, transposed",
                           [] {
                             return transposed({3, 4});
                           },
                           [](const V& x) { return sum(x[0], {-1}, true); }},
                  GradCase{"sum", "one element", [] { return one({1}); },
                           [](const V& x) { return sum(x[0]); }},
                  GradCase{"mean", "dim 1",
                           [] {
                             return one({2, 3, 2});
                           },
                           [](const V& x) { return mean(x[0], {1}); }},
                  GradCase{"mean", "all, keepdim",
                           [] {
                             return one({3, 1});
                           },
                           [](const V& x) { return mean(x[0], {}, true); }},
                  GradCase{"max", "dim 1 (distinct values)",
                           [] {
                             return one({3, 5});
                           },
                           [](const V& x) { return max(x[0], {1}); }},
                  GradCase{"max", "all dims of a transposed leaf",
                           [] {
                             return transposed({2, 3});
                           },
                           [](const V& x) { return max(x[0]); }},
                  GradCase{"var", "dim 1, unbiased",
                           [] {
                             return one({2, 4});
                           },
                           [](const V& x) { return var(x[0], {1}); }},
                  GradCase{"var", "all, biased, keepdim",
                           [] {
                             return one({3, 2});
                           },
                           [](const V& x) { return var(x[0], {}, 0, true); }},
                  GradCase{"softmax", "last dim",
                           [] {
                             return one({2, 5});
                           },
                           [](const V& x) { return softmax(x[0], -1); }},
                  GradCase{"softmax", "dim 0 of a transposed leaf",
                           [] {
                             return transposed({3, 4});
                           },
                           [](const V& x) { return softmax(x[0], 0); }},
                  GradCase{"log_softmax", "last dim",
                           [] {
                             return one({3, 4});
                           },
                           [](const V& x) { return log_softmax(x[0], 1); }},
                  GradCase{"log_softmax", "size-1 dim",
                           [] {
                             return one({3, 1});
                           },
                           [](const V& x) { return log_softmax(x[0], 1); }},
                  GradCase{"layer_norm", "weight and bias",
                           [] {
                             return leaves({{3, 4}, {4}, {4}});
                           },
                           [](const V& x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
                  GradCase{"layer_norm", "two normalised dims, transposed input, no affine",
                           [] {
                             return transposed({2, 3, 4});
                           },
                           [](const V& x) {
                             return layer_norm(x[0], {3, 4});
                           }},
                  GradCase{"layer_norm", "weight only",
                           [] {
                             return leaves({{2, 5}, {5}});
                           },
                           [](const V& x) { return layer_norm(x[0], {5}, x[1], {}, 1e-3); }},
                  GradCase{"rms_norm", "weight, [2, 3, 4]",
                           [] {
                             return leaves({{2, 3, 4}, {4}});
                           },
                           [](const V& x) { return rms_norm(x[0], x[1]); }},
                  GradCase{"rms_norm", "transposed input, no weight, eps 0.1",
                           [] {
                             return transposed({3, 5});
                           },
                           [](const V& x) { return rms_norm(x[0], {}, 0.1); }},
                  GradCase{"rms_norm", "one row (33 elements), weight only needs grad",
                           [] {
                             V v = leaves({{33}, {33}});
                             v[0] = v[0].detach();
                             return v;
                           },
                           [](const V& x) { return rms_norm(x[0], x[1]); }},
                  GradCase{"group_norm", "2 groups, affine",
                           [] {
                             return leaves({{2, 4, 3, 3}, {4}, {4}});
                           },
                           [](const V& x) { return group_norm(x[0], 2, x[1], x[2]); }},
                  GradCase{"group_norm", "one channel per group, 1-d spatial, no affine",
                           [] {
                             return one({2, 3, 5});
                           },
                           [](const V& x) { return group_norm(x[0], 3); }},
                  GradCase{"group_norm_silu", "2 groups, affine",
                           [] {
                             return leaves({{2, 4, 3, 3}, {4}, {4}});
                           },
                           [](const V& x) { return group_norm_silu(x[0], 2, x[1], x[2]); }},
                  GradCase{"group_norm_silu", "channels last, weight only",
                           [] {
                             V v = leaves({{2, 4, 3, 3}, {4}});
                             v[0] = v[0].detach().contiguous(MemoryFormat::channels_last);
                             v[0].requires_grad_();
                             return v;
                           },
                           [](const V& x) { return group_norm_silu(x[0], 2, x[1]); }},
              });
}  // namespace

TEST_CASE("gradcheck: reductions and normalisation") { test::run_grad_cases("reduce"); }

TEST_CASE("max shares the gradient among ties") {
  Tensor x = from_vector<double>({1, 3, 3, 2}, {2, 2}).requires_grad_();
  sum(max(x, {})).backward();
  test::check_close(x.grad(), {0, 0.5, 0.5, 0}, {2, 2}, 0);
}

TEST_CASE("layer_norm, rms_norm, softmax and group_norm_silu can be differentiated twice") {
  Generator g(11);
  Tensor v = randn({3, 4}, {.dtype = DType::f64}, &g);
  auto grad_of = [v](auto f) {
    return [v, f](const V& x) { return autograd::grad({f(x[0])}, {x[0]}, {v}, false, true)[0]; };
  };
  for (auto f :
       {std::function<Tensor(const Tensor&)>([](const Tensor& x) { return layer_norm(x, {4}); }),
        std::function<Tensor(const Tensor&)>([](const Tensor& x) { return rms_norm(x, x[2]); }),
        std::function<Tensor(const Tensor&)>([](const Tensor& x) { return softmax(x, 1); }),
        std::function<Tensor(const Tensor&)>(
            // weight and bias: rows of x itself, so that their paths are differentiated too
            [](const Tensor& x) { return group_norm_silu(x, 2, x[0], x[1]); })}) {
    autograd::GradcheckResult r = autograd::gradcheck(grad_of(f), leaves({{3, 4}}));
    INFO(r.str());
    CHECK(r.ok);
  }
}

TEST_CASE("group_norm's bf16 gradients on channels-last data are f32's on the same values") {
  // The bf16 kernel widens each sample to float; f32 on the same (bf16-exact) values is the
  // reference, within bf16's rounding of the results (2^-8 relative).
  manual_seed(7);
  const auto bf16_values = [](const Shape& s) { return randn(s).to(DType::bf16); };
  const Tensor x = bf16_values({3, 8, 4, 5}).contiguous(MemoryFormat::channels_last);
  const Tensor w = bf16_values({8}), b = bf16_values({8}), g = bf16_values({3, 8, 4, 5});
  for (const bool silu : {false, true}) {
    INFO("silu ", silu);
    auto grads = [&](DType dtype) {
      const auto leaf = [&](const Tensor& t) { return t.to(dtype).detach().requires_grad_(); };
      const Tensor xd = leaf(x), wd = leaf(w), bd = leaf(b);
      const Tensor y = silu ? group_norm_silu(xd, 2, wd, bd) : group_norm(xd, 2, wd, bd);
      CHECK(y.is_channels_last());
      y.backward(g.to(dtype).contiguous(MemoryFormat::channels_last));
      return std::vector<Tensor>{xd.grad(), wd.grad(), bd.grad()};
    };
    const std::vector<Tensor> low = grads(DType::bf16), reference = grads(DType::f32);
    for (size_t i = 0; i < low.size(); ++i) {
      CHECK(low[i].dtype() == DType::bf16);
      test::check_close(low[i].to(DType::f32), reference[i], 1e-2, 1e-2);
    }
  }
}
