#include <dlf/core/op_profile.h>
#include <dlf/device/threads.h>

#include "autograd/grad_cases.h"

using namespace dlf;
using test::GradCase;
using test::leaves;

namespace {
using V = std::vector<Tensor>;

// q, k, v as GPT makes them: views of one [B, T, 3, H, d] tensor (unbind), transposed to
// [B, H, T, d].
V qkv_leaf(int64_t t, int64_t heads = 2) { return leaves({{2, t, 3, heads, 3}}); }
V heads(const Tensor& all) {
  V qkv = unbind(all, 2);
  for (Tensor& t : qkv) t = t.transpose(1, 2);
  return qkv;
}

Tensor targets(const std::vector<int64_t>& v, const Shape& s) { return from_vector(v, s); }

GradCase attention_case(std::string name, std::vector<Shape> shapes, bool causal) {
  return {"scaled_dot_product_attention", std::move(name), [shapes] { return leaves(shapes); },
          [causal](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); }};
}

// Tensors are made inside the lambdas: the table is static and outlives the allocator.
GradCase cross_entropy_case(std::string name, std::function<V()> logits,
                            std::vector<int64_t> target, Shape target_shape,
                            CrossEntropyOptions options) {
  return {"cross_entropy", std::move(name), std::move(logits),
          [target, target_shape, options](const V& x) {
            return cross_entropy(x[0], targets(target, target_shape), options);
          }};
}

[[maybe_unused]] const bool cases = test::add_grad_cases(
    "nn",
    {
        GradCase{"cat", "three inputs along dim 1",
                 [] {
                   return leaves({{2, 1}, {2, 3}, {2, 2}});
                 },
                 [](const V& x) { return cat(x, 1); }},
        GradCase{"cat", "dim 0, a transposed input and one that needs no grad",
                 [] {
                   return V{test::transposed_leaf({2, 3}), leaves({{1, 3}})[0].detach()};
                 },
                 [](const V& x) { return cat(x, 0); }},
        GradCase{"cat", "last dim of 3-d inputs",
                 [] {
                   return leaves({{2, 1, 2}, {2, 1, 1}});
                 },
                 [](const V& x) { return cat(x, -1); }},
        GradCase{"cat", "stack along a new last dim",
                 [] {
                   return leaves({{3}, {3}});
                 },
                 [](const V& x) { return stack(x, -1); }},
        GradCase{"split", "split and chunk (views of one input) rejoined",
                 [] {
                   return leaves({{4, 3}});
                 },
                 [](const V& x) {
                   V parts = chunk(x[0], 2, 0);
                   return cat({parts[1], split(parts[0], 1, 1)[2] * 2.0}, 1);
                 }},
        GradCase{"split", "unbind along a middle dim, a piece unused and one used twice",
                 [] {
                   return leaves({{2, 3, 4}});
                 },
                 [](const V& x) {
                   V p = unbind(x[0], 1);
                   return p[0] * p[2] + p[2] * 3.0;
                 }},
        GradCase{"embedding", "repeated 2-d indices",
                 [] {
                   return leaves({{5, 3}});
                 },
                 [](const V& x) {
                   return embedding(x[0], targets({1, 4, 1, 0, 1, 2}, {2, 3}));
                 }},
        GradCase{"embedding", "transposed weight, i32 indices, a row never picked",
                 [] {
                   return V{test::transposed_leaf({4, 2})};
                 },
                 [](const V& x) {
                   return embedding(x[0], targets({3, 3, 0}, {3}).to(DType::i32));
                 }},
        cross_entropy_case("mean, ignore_index",
                           [] {
                             return leaves({{4, 5}});
                           },
                           {1, -100, 4, 0}, {4}, {}),
        cross_entropy_case("label smoothing, sum",
                           [] {
                             return leaves({{3, 4}});
                           },
                           {3, 0, 2}, {3}, {.label_smoothing = 0.1, .reduction = Reduction::sum}),
        cross_entropy_case("[N, C, d] form, no reduction",
                           [] {
                             return V{test::transposed_leaf({3, 4, 2})};
                           },
                           {0, 3, 1, 2, 2, -100}, {3, 2}, {.reduction = Reduction::none}),
        cross_entropy_case("[N, C, d1, d2], mean, smoothing and a custom ignore_index",
                           [] {
                             return leaves({{2, 3, 2, 1}});
                           },
                           {2, 1, 0, 2}, {2, 2, 1}, {.ignore_index = 1, .label_smoothing = 0.2}),
        cross_entropy_case("[N, C, d], sum, ignore_index",
                           [] {
                             return leaves({{2, 3, 2}});
                           },
                           {-100, 1, 2, 0}, {2, 2}, {.reduction = Reduction::sum}),
        cross_entropy_case("one row, smoothing, no reduction",
                           [] {
                             return leaves({{1, 3}});
                           },
                           {2}, {1}, {.label_smoothing = 0.5, .reduction = Reduction::none}),
        GradCase{"dropout", "fixed generator",
                 [] {
                   return leaves({{4, 5}});
                 },
                 [](const V& x) {
                   Generator g(5);
                   return dropout(x[0], 0.3, true, &g);
                 }},
        GradCase{"dropout", "transposed input, p = 0.6",
                 [] {
                   return V{test::transposed_leaf({3, 4})};
                 },
                 [](const V& x) {
                   Generator g(7);
                   return dropout(x[0], 0.6, true, &g);
                 }},
        GradCase{"scaled_dot_product_attention", "causal, q/k/v as views of one tensor",
                 [] { return qkv_leaf(4); },
                 [](const V& x) {
                   const V h = heads(x[0]);
                   return scaled_dot_product_attention(h[0], h[1], h[2], true);
                 }},
        GradCase{"scaled_dot_product_attention", "not causal, views of one tensor, q is k",
                 [] { return qkv_leaf(3); },
                 [](const V& x) {
                   const V h = heads(x[0]);  // the first piece unused: its gradient is zeros
                   return scaled_dot_product_attention(h[1], h[1], h[2], false);
                 }},
        GradCase{
            "scaled_dot_product_attention", "Tq != Tk, broadcast k/v, custom scale",
            [] {
              return leaves({{2, 3, 4}, {1, 5, 4}, {1, 5, 2}});
            },
            [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], false, 0.7); }},
        attention_case("causal with more queries than keys (rows that see no key)",
                       {{1, 4, 2}, {1, 3, 2}, {1, 3, 2}}, true),
        attention_case("causal with fewer queries than keys, k/v shared by heads",
                       {{2, 2, 2, 3}, {2, 1, 4, 3}, {2, 1, 4, 2}}, true),
        // Two blocks of query rows and of keys, the block edges not aligned with the mask's.
        attention_case("causal, several blocks, Tq = 70, Tk = 67", {{70, 2}, {67, 2}, {67, 1}},
                       true),
        attention_case("several blocks, Tq = 66, Tk = 70", {{66, 1}, {70, 1}, {70, 2}}, false),
        attention_case("one query, q broadcast over the batch", {{1, 2}, {3, 2, 2}, {3, 2, 1}},
                       false),
        // From 8 batch entries on, the backward runs one task per entry (P and dS once).
        GradCase{"scaled_dot_product_attention", "causal, 8 entries, views of one tensor",
                 [] { return qkv_leaf(5, 4); },
                 [](const V& x) {
                   const V h = heads(x[0]);
                   return scaled_dot_product_attention(h[0], h[1], h[2], true);
                 }},
        attention_case("causal, 8 entries, more queries than keys, k/v broadcast",
                       {{8, 4, 2}, {1, 3, 2}, {1, 3, 2}}, true),
        attention_case("8 entries, Tq != Tk", {{8, 3, 4}, {8, 5, 4}, {8, 5, 2}}, false),
        // Grouped-query attention: q [B, Hkv, G, T, d] against k and v [B, Hkv, 1, T, d].
        attention_case("grouped-query, causal, 2 kv heads of 3 query heads each",
                       {{2, 2, 3, 4, 3}, {2, 2, 1, 4, 3}, {2, 2, 1, 4, 2}}, true),
        attention_case("multi-query, causal, 8 kv entries (one task per kv entry)",
                       {{8, 2, 3, 2}, {8, 1, 3, 2}, {8, 1, 3, 2}}, true),
        attention_case("grouped-query over 70 rows, Tq != Tk",
                       {{1, 2, 70, 2}, {1, 1, 67, 2}, {1, 1, 67, 1}}, false),
        GradCase{"scaled_dot_product_attention", "k broadcast over the group, v not",
                 [] {
                   return leaves({{2, 3, 3, 2}, {2, 1, 3, 2}, {2, 3, 3, 2}});
                 },
                 [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], true); }},
        GradCase{"rotary_embedding", "rotate-half, [B, H, T, d]",
                 [] {
                   return leaves({{2, 2, 3, 4}});
                 },
                 [](const V& x) { return rotary_embedding(x[0]); }},
        GradCase{"rotary_embedding", "interleaved, [B, T, H, d], offset, Llama 3 scaling",
                 [] {
                   return leaves({{1, 3, 2, 8}});
                 },
                 [](const V& x) {
                   return rotary_embedding(x[0],
                                           {.theta = 50,
                                            .interleaved = true,
                                            .offset = 5,
                                            .seq_dim = 1,
                                            .scaling = {.factor = 8, .original_context = 16}});
                 }},
        GradCase{"rotary_embedding", "transposed input",
                 [] {
                   return V{test::transposed_leaf({4, 3})};
                 },
                 [](const V& x) { return rotary_embedding(x[0].transpose(0, 1), {.seq_dim = 0}); }},
        GradCase{"scaled_dot_product_attention", "an expanded incoming gradient (sum over dv)",
                 [] {
                   return leaves({{2, 3, 2}, {2, 3, 2}, {2, 3, 3}});
                 },
                 [](const V& x) {
                   return sum(scaled_dot_product_attention(x[0], x[1], x[2], true), {-1});
                 }},
    });

// The gradients of sum(attention(q, k, v)²) with respect to q, k and v.
V attention_grads(const V& in, bool causal) {
  Tensor y = scaled_dot_product_attention(in[0], in[1], in[2], causal);
  return autograd::grad({sum(y * y)}, in);
}

V converted(const V& in, DType dtype) {
  V out;
  for (const Tensor& t : in) out.push_back(t.detach().to(dtype).requires_grad_());
  return out;
}

}  // namespace

TEST_CASE("gradcheck: join, embedding, losses, dropout, attention") { test::run_grad_cases("nn"); }

TEST_CASE("unbind's pieces send their gradients back as one cat") {
  const Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  const V p = unbind(x, 1);
  const Tensor loss = (p[0] * p[1] + p[2] * 2.0).sum();
  OpProfile profile;  // the backward's ops
  loss.backward();
  // d/dp0 = p1, d/dp1 = p0, d/dp2 = 2: rows [2, 1, 2] and [5, 4, 2].
  test::check_close(x.grad(), {2, 1, 2, 5, 4, 2}, {2, 3}, 0, 0);
  CHECK(profile.rows().at("cat").calls == 1);
  CHECK(profile.rows().count("slice_backward") == 0);
  CHECK(profile.rows().count("add") == 0);
}

TEST_CASE("the f32 and bf16 attention backward agree with the f64 one across blocks") {
  // T = 150: three blocks of query rows and of keys, so pass 2 sums over several blocks; with
  // 8 batch entries the one-task-per-entry path runs instead.
  for (int64_t batch : {1, 4}) {
    V in64 = leaves({{batch, 2, 150, 8}, {batch, 2, 150, 8}, {batch, 2, 150, 8}}, 13);
    for (bool causal : {true, false}) {
      const V g64 = attention_grads(in64, causal);
      const V g32 = attention_grads(converted(in64, DType::f32), causal);
      for (int i = 0; i < 3; ++i) test::check_close(g32[i], g64[i], 1e-4, 1e-3);
    }
  }
  V small = leaves({{2, 20, 8}, {2, 20, 8}, {2, 20, 8}}, 17);
  const V g64 = attention_grads(small, true);
  const V g16 = attention_grads(converted(small, DType::bf16), true);
  for (int i = 0; i < 3; ++i) test::check_close(g16[i], g64[i], 0.1, 0.05);
}

TEST_CASE("the f32 attention backward loses nothing to a large logsumexp") {
  // Integer q and k make every score exact in f32; column 0 (32 · 32 · 0.5) adds 512 to each row,
  // which softmax ignores but which makes lse ≈ 512, where an f32 lse is off by up to 3e-5 and so
  // is every probability the backward recomputes from it. Batches of 1 and 8 take both backward
  // paths; dq's column 0 is left out (exactly 0: Σ_j dS_ij = 0, f32 noise in either case).
  Generator gen(31);
  for (int64_t batch : {1, 8}) {
    auto integers = [&](double first_column) {
      const Tensor rest = randint(-1, 2, {batch, 2, 40, 7}, {.dtype = DType::f64}, &gen);
      return cat({full({batch, 2, 40, 1}, first_column, {.dtype = DType::f64}), rest}, -1);
    };
    const Tensor q = integers(32), k = integers(32), v = randn({batch, 2, 40, 8}, {}, &gen);
    for (bool causal : {false, true}) {
      auto grads = [&](DType dtype) {
        V in = converted({q, k, v}, dtype);
        const Tensor y = scaled_dot_product_attention(in[0], in[1], in[2], causal, 0.5);
        return autograd::grad({sum(y * y)}, in);
      };
      const V g64 = grads(DType::f64), g32 = grads(DType::f32);
      INFO("batch ", batch, ", causal ", causal);
      CHECK(test::relative_error(g32[0].narrow(-1, 1, 7), g64[0].narrow(-1, 1, 7)) < 1e-6);
      CHECK(test::relative_error(g32[1], g64[1]) < 1e-6);
      CHECK(test::relative_error(g32[2], g64[2]) < 1e-6);
    }
  }
}

TEST_CASE("the attention and embedding gradients do not depend on the thread count") {
  // Big enough for both kernels to run on several threads: 2 x 3 blocks of query rows, and
  // 300 x 256 gradient elements for embedding_backward.
  // 8 x 20 x 4 runs the one-task-per-entry path.
  V in = leaves(
      {{2, 130, 4}, {2, 130, 4}, {2, 130, 4}, {10, 256}, {8, 20, 4}, {8, 20, 4}, {8, 20, 4}}, 21);
  Generator gen(4);
  const Tensor index = randint(0, 10, {300}, {.dtype = DType::i64}, &gen);
  auto grads = [&] {
    V g = attention_grads({in[0], in[1], in[2]}, true);
    for (const Tensor& t : attention_grads({in[4], in[5], in[6]}, true)) g.push_back(t);
    g.push_back(autograd::grad({sum(embedding(in[3], index) * 1.5)}, {in[3]})[0]);
    return g;
  };
  const int threads = num_threads();
  set_num_threads(1);
  const V one = grads();
  set_num_threads(2);
  const V two = grads();
  set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i) test::check_close(two[i], one[i], 0, 0);
}

TEST_CASE("the cross_entropy logits gradient in f32 matches f64, and is zero where ignored") {
  const Tensor logits = leaves({{3, 4, 2}}, 29)[0];
  const Tensor target = targets({0, 3, -100, 2, 1, -100}, {3, 2});
  const CrossEntropyOptions options{.label_smoothing = 0.1};
  const Tensor g64 = autograd::grad({cross_entropy(logits, target, options)}, {logits})[0];
  const Tensor l32 = logits.detach().to(DType::f32).requires_grad_();
  const Tensor g32 = autograd::grad({cross_entropy(l32, target, options)}, {l32})[0];
  test::check_close(g32, g64, 1e-6, 1e-5);
  // target [1, 0] and [2, 1] are ignored: logits[1, :, 0] and logits[2, :, 1].
  for (int64_t c = 0; c < 4; ++c) {
    CHECK(g64.select(0, 1).select(1, 0).select(0, c).item<double>() == 0);
    CHECK(g64.select(0, 2).select(1, 1).select(0, c).item<double>() == 0);
  }
}

TEST_CASE("the fused nn backward ops refuse operands that no forward made") {
  const Tensor q = zeros({2, 3, 4}), v = zeros({2, 3, 5});
  test::check_error(
      [&] {
        dispatch(find_op("scaled_dot_product_attention_backward"),
                 {zeros({2, 3, 4}), q, q, v, zeros({2, 3, 5}), zeros({2, 3})},
                 {{"causal", false}, {"scale", 1.0}});
      },
      {"scaled_dot_product_attention_backward", "grad [2, 3, 4]", "v [2, 3, 5]"});
  test::check_error(
      [&] {
        dispatch(find_op("cross_entropy_backward"),
                 {zeros({}), zeros({2, 3}), from_vector<int64_t>({0, 3}, {2}), zeros({2})},
                 {{"ignore_index", int64_t{-100}},
                  {"label_smoothing", 0.0},
                  {"reduction", std::string("mean")}});
      },
      {"cross_entropy_backward", "target 3", "3 classes"});
}
