// Epilogue fusion: which adds a matrix product or convolution takes in, where it must not, and
// that the fused kernels (oneDNN's binary or sum post-op, or the base kernel and a loop) compute
// what the two ops did — f32 (on AVX-512's kernels) and f64 to the bit, bf16 rounded once
// instead of twice.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <dlf/dlf.h>

#include "graph_test_util.h"
#include "test_util.h"

using namespace dlf;
using dlf::test::check_error;
using dlf::test::op_names;
using dlf::test::Step;

namespace {

int arena_values(const graph::Graph& g) {
  return int(std::count_if(g.buffers.begin(), g.buffers.end(), [](const graph::Buffer& b) {
    return b.kind == graph::BufferKind::arena || b.kind == graph::BufferKind::output;
  }));
}

Tensor normal(const Shape& shape, DType dtype, Generator& gen) {
  return randn(shape, {}, &gen).to(dtype);
}

std::vector<double> values_of(const Tensor& t) {
  return t.to(DType::f64).contiguous().to_vector<double>();
}

// Captures `step`, checks the pass makes `fused` of `unfused`, and runs the fused graph on fresh
// inputs against the step run eagerly: equal to the bit, or within `tolerance` relative.
void check_fuses(const Step& step, const std::function<std::vector<Tensor>()>& inputs,
                 const std::vector<std::string>& unfused, const std::vector<std::string>& fused,
                 double tolerance = 0) {
  graph::Graph g = graph::capture(step, inputs()).graph;
  REQUIRE(op_names(g) == unfused);
  const int arena_before = arena_values(g);
  CHECK(graph::fuse_epilogues(g) == int(unfused.size() - fused.size()));
  CHECK(op_names(g) == fused);
  CHECK(arena_values(g) == arena_before - int(unfused.size() - fused.size()));
  const std::vector<Tensor> in = inputs();
  const std::vector<Tensor> got = graph::Executable(std::move(g)).run(in);
  const std::vector<Tensor> want = step(in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("result ", i, ": ", shape_str(got[i].strides()), " vs eager's ",
         shape_str(want[i].strides()));
    CHECK(got[i].strides() == want[i].strides());
    const std::vector<double> a = values_of(got[i]), b = values_of(want[i]);
    if (tolerance == 0) {
      CHECK(a == b);
      continue;
    }
    double diff = 0, scale = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      diff = std::max(diff, std::abs(a[k] - b[k]));
      scale = std::max(scale, std::abs(b[k]));
    }
    CHECK(diff <= tolerance * scale);
  }
}

}  // namespace

TEST_CASE("graph: a residual add joins the linear or matmul before it, after bias and activation") {
  Generator gen(31);
  const auto weights = [&](DType dtype) {
    return std::vector<Tensor>{normal({48, 32}, dtype, gen), normal({48}, dtype, gen),
                               normal({32, 48}, dtype, gen), normal({32}, dtype, gen)};
  };
  for (const DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    CAPTURE(std::string(dtype_name(dtype)));
    const std::vector<Tensor> w = weights(dtype);
    // An MLP's residual block, then an add of a product of the form other + product.
    const Step block = [&](const std::vector<Tensor>& in) {
      const Tensor x = in[0];
      const Tensor h = linear(linear(x, w[0], w[1], Activation::gelu_tanh), w[2], w[3]) + x;
      return std::vector<Tensor>{in[1] + matmul(h, w[0].transpose(0, 1)), h};
    };
    // [600, 32]: rows enough for several of oneDNN's blocks.
    const auto inputs = [&] {
      return std::vector<Tensor>{normal({600, 32}, dtype, gen), normal({600, 48}, dtype, gen)};
    };
    check_fuses(block, inputs, {"linear", "linear", "add", "permute", "matmul", "add"},
                {"linear", "linear_add", "permute", "matmul_add"},
                dtype == DType::bf16 ? 1.0 / 128 : 0);
  }
}

TEST_CASE("graph: an add after a batched matmul with a broadcast operand, and with an activation") {
  Generator gen(32);
  const Step step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(in[0], in[1]) + in[2],
                               linear(in[0], in[3], {}, Activation::gelu_erf) + in[4]};
  };
  const auto inputs = [&] {
    return std::vector<Tensor>{
        randn({3, 20, 16}, {}, &gen), randn({16, 24}, {}, &gen),
        randn({3, 20, 24}, {}, &gen).transpose(0, 1).contiguous().transpose(0, 1),
        randn({8, 16}, {}, &gen), randn({3, 20, 8}, {}, &gen)};
  };
  // The first added tensor is not contiguous: the kernel reads a dense copy.
  check_fuses(step, inputs, {"matmul", "add", "linear", "add"}, {"matmul_add", "linear_add"});
}

TEST_CASE("graph: an add after a convolution, by oneDNN's post-op or by the loop after it") {
  Generator gen(33);
  for (const DType dtype : {DType::f32, DType::f64}) {
    const Tensor w = normal({8, 4, 3, 3}, dtype, gen), b = normal({8}, dtype, gen);
    const Tensor wt = normal({8, 4, 3, 3}, dtype, gen);
    const Step step = [&](const std::vector<Tensor>& in) {
      const Tensor y = conv2d(in[0], w, b, {.padding = {1, 1}}) + in[1];
      const ConvTranspose2dOptions up{
          .stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}};
      return std::vector<Tensor>{conv_transpose2d(y, wt, {}, up) + in[2]};
    };
    // Channels last and f32: oneDNN's post-op; otherwise the base kernel and the add's loop.
    for (const MemoryFormat format : {MemoryFormat::channels_last, MemoryFormat::contiguous}) {
      CAPTURE(std::string(dtype_name(dtype)));
      CAPTURE(format == MemoryFormat::channels_last);
      const auto inputs = [&] {
        return std::vector<Tensor>{normal({2, 4, 7, 9}, dtype, gen).contiguous(format),
                                   normal({2, 8, 7, 9}, dtype, gen).contiguous(format),
                                   normal({2, 4, 14, 18}, dtype, gen).contiguous(format)};
      };
      // conv_transpose2d keeps its add: oneDNN's kernels with the post-op are slower.
      check_fuses(step, inputs, {"conv2d", "add", "conv_transpose2d", "add"},
                  {"conv2d_add", "conv_transpose2d", "add"});
    }
  }
}

TEST_CASE("graph: a product another node reads, that escapes, or that cannot move stays") {
  Generator gen(34);
  Tensor w = randn({6, 6}, {}, &gen);
  const Step twice = [&](const std::vector<Tensor>& in) {
    const Tensor y = matmul(in[0], w);
    return std::vector<Tensor>{y + in[1], y * 2.0};
  };
  const Step escapes = [&](const std::vector<Tensor>& in) {
    const Tensor y = matmul(in[0], w);
    return std::vector<Tensor>{y + in[1], y};
  };
  const Step broadcast = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(in[0], w) + in[1][0]};  // [6] across the rows: a bias
  };
  const Step operand_written = [&](const std::vector<Tensor>& in) {
    // The added tensor is made after the product, and fused at the add the product would read
    // w after the copy.
    const Tensor y = matmul(in[0], w);
    w.copy_(in[1]);
    return std::vector<Tensor>{y + in[1] * 2.0};
  };
  const Step operand_dies = [&](const std::vector<Tensor>& in) {
    // Fused at the add, the product would keep x * 3 alive to there (as the tied embedding's
    // gradient product would keep the logits' gradient to backward's end).
    const Tensor y = matmul(in[0] * 3.0, w);
    return std::vector<Tensor>{y + in[1] * 2.0};
  };
  const Step self = [&](const std::vector<Tensor>& in) {
    const Tensor y = matmul(in[0], w);
    return std::vector<Tensor>{y + y};
  };
  for (const Step* step : {&twice, &escapes, &broadcast, &operand_written, &operand_dies, &self}) {
    const Tensor w0 = w.clone();
    graph::Graph g =
        graph::capture(*step, {randn({6, 6}, {}, &gen), randn({6, 6}, {}, &gen)}).graph;
    w.copy_(w0);
    const std::vector<std::string> before = op_names(g);
    CHECK(graph::fuse_epilogues(g) == 0);
    CHECK(op_names(g) == before);
  }
}

TEST_CASE(
    "graph: a fused product runs at the product when the added tensor is there, else at the add") {
  Generator gen(36);
  const Tensor w = randn({6, 6}, {}, &gen);
  const Step step = [&](const std::vector<Tensor>& in) {
    const Tensor x = in[0] * 3.0;
    const Tensor early = matmul(x, w);  // in[1] is there: runs here, before the sigmoid
    const Tensor s = sigmoid(in[1]);
    const Tensor late = matmul(x, w.transpose(0, 1));  // s * 2 comes later; x lives on anyway
    const Tensor t = s * 2.0;
    return std::vector<Tensor>{early + in[1], late + t, x};
  };
  const auto inputs = [&] {
    return std::vector<Tensor>{randn({6, 6}, {}, &gen), randn({6, 6}, {}, &gen)};
  };
  check_fuses(step, inputs,
              {"mul_scalar", "matmul", "sigmoid", "permute", "matmul", "mul_scalar", "add", "add"},
              {"mul_scalar", "matmul_add", "sigmoid", "permute", "mul_scalar", "matmul_add"});
}

TEST_CASE("graph: a fused product checks its added tensor and costs the add beside the product") {
  const OpDef& linear_add = find_op("linear_add");
  const Attrs attrs{{"activation", std::string("none")}};
  const Tensor x = full({5, 3}, 1.0), w = full({4, 3}, 1.0), b = full({4}, 0.5);
  check_error(
      [&] {
        linear_add.infer(std::vector<Tensor>{x, w, b, full({5, 3}, 1.0)}, attrs);
      },
      {"linear_add", "f32[5, 4]", "f32[5, 3]"});
  check_error(
      [&] {
        linear_add.infer(std::vector<Tensor>{x, w, b}, attrs);
      },
      {"linear_add", "takes 4 inputs"});
  const std::vector<Tensor> in = {x, w, b, full({5, 4}, 2.0)};
  CHECK(dispatch1(linear_add, in, attrs).to_vector<float>() == std::vector<float>(20, 5.5f));
  const Tensor out = Tensor::empty({5, 4}, DType::f32, kMeta);
  const Cost fused = op_cost(linear_add, in, attrs, {&out, 1});
  const Cost product = op_cost(find_op("linear"), std::span(in).first(3), attrs, {&out, 1});
  CHECK(fused.flops == product.flops + 20);
  CHECK(fused.bytes_read == product.bytes_read + 20 * 4);
  CHECK(fused.bytes_written == product.bytes_written);
}

TEST_CASE("graph: a fused product writes its output over an added tensor that dies there") {
  // x * 2 is read by the add alone: the plan gives the sum its bytes, which the kernel sums
  // into (oneDNN's sum post-op) or keeps aside before the product overwrites them (Eigen's f64
  // product, the f64 convolution's loops).
  Generator gen(35);
  for (const DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(std::string(dtype_name(dtype)));
    const Tensor w = normal({16, 16}, dtype, gen), k = normal({8, 8, 3, 3}, dtype, gen);
    const Tensor b = normal({16}, dtype, gen);
    const Step step = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{
          matmul(in[0], w) + in[0] * 2.0, conv2d(in[1], k, {}, {.padding = {1, 1}}) + in[1] * 2.0,
          linear(in[0], w, b, Activation::gelu_tanh) + in[0] * 3.0};  // bias, GELU, then the sum
    };
    const auto inputs = [&] {
      return std::vector<Tensor>{
          normal({40, 16}, dtype, gen),
          normal({2, 8, 6, 5}, dtype, gen).contiguous(MemoryFormat::channels_last)};
    };
    graph::Graph g = graph::capture(step, inputs()).graph;
    REQUIRE(graph::fuse_epilogues(g) == 3);
    REQUIRE(op_names(g) == std::vector<std::string>{"mul_scalar", "matmul_add", "mul_scalar",
                                                    "conv2d_add", "mul_scalar", "linear_add"});
    graph::plan_memory(g);
    for (const graph::Node& n : g.nodes) {
      if (n.op->name.ends_with("_add"))
        CHECK(g.buffers[g.values[n.inputs.back()].buffer].offset ==
              g.buffers[g.values[n.outputs[0]].buffer].offset);
    }
    const std::vector<Tensor> in = inputs();
    const std::vector<Tensor> got = graph::Executable(std::move(g)).run(in);
    const std::vector<Tensor> want = step(in);
    for (size_t i = 0; i < got.size(); ++i) CHECK(values_of(got[i]) == values_of(want[i]));
  }
}
