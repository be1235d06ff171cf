// Element-wise fusion: which nodes a chain takes, where it must stop, and that the fused loop
// computes what the ops did one by one — broadcast, strided and channels-last operands, and
// outputs larger than one thread's share.
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

// The largest difference between `got` and `want`, relative to want's largest magnitude.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> a = got.contiguous().to_vector<float>();
  const std::vector<float> b = want.contiguous().to_vector<float>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// Runs the graph on `inputs` and the step eagerly on copies of them: each result agrees.
void check_runs_as_eager(graph::Graph g, const Step& step, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(t.clone());
  const std::vector<Tensor> want = step(copies);
  const std::vector<Tensor> got = graph::Executable(std::move(g)).run(inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(relative_error(got[i], want[i]) < 1e-6);
}

int arena_buffers(const graph::Graph& g) {
  return int(std::count_if(g.buffers.begin(), g.buffers.end(), [](const graph::Buffer& b) {
    return b.kind == graph::BufferKind::arena || b.kind == graph::BufferKind::output;
  }));
}

}  // namespace

TEST_CASE("graph: element-wise fusion runs a chain as one node that reads each input once") {
  // 600 x 70 elements: several tiles a thread, the last one partial; the bias is broadcast.
  const Step step = [](const std::vector<Tensor>& in) {
    const Tensor h = gelu(in[0] * 2.0 + in[1], GeluApproximation::tanh);
    return std::vector<Tensor>{h + in[0]};
  };
  Generator gen(21);
  graph::Graph g = graph::capture(step, {randn({600, 70}, {}, &gen), randn({70}, {}, &gen)}).graph;
  CHECK(op_names(g) == std::vector<std::string>{"mul_scalar", "add", "gelu", "add"});
  CHECK(arena_buffers(g) == 4);
  CHECK(graph::fuse_elementwise(g) == 3);
  CHECK(op_names(g) == std::vector<std::string>{"[mul_scalar,add,gelu,add]"});
  CHECK(g.nodes[0].inputs.size() == 2);   // x once, though two ops read it
  CHECK(g.nodes[0].outputs.size() == 1);  // the three values in between never reach memory
  CHECK(arena_buffers(g) == 1);
  // Its cost is the chain's FLOPs over its own inputs and output: what the sim clock charges.
  std::vector<Tensor> in = {randn({600, 70}, {}, &gen), randn({70}, {}, &gen)};
  const Tensor out = Tensor::empty({600, 70}, DType::f32, kMeta);
  const Cost cost = op_cost(*g.nodes[0].op, in, g.nodes[0].attrs, {&out, 1});
  CHECK(cost.flops == doctest::Approx(600 * 70 * (1 + 1 + 15 + 1)));
  CHECK(cost.bytes_read == (600 * 70 + 70) * 4);
  CHECK(cost.bytes_written == 600 * 70 * 4);
  check_runs_as_eager(std::move(g), step, in);
}

TEST_CASE("graph: a chain ends where a node outside it reads one of its values") {
  const Step step = [](const std::vector<Tensor>& in) {
    const Tensor b = in[0] * 2.0 + 1.0;
    const Tensor m = matmul(b, in[1]);  // reads b: the first chain runs before it, b its output
    return std::vector<Tensor>{b * 3.0 + m};
  };
  Generator gen(22);
  const std::vector<Tensor> in = {randn({8, 8}, {}, &gen), randn({8, 8}, {}, &gen)};
  graph::Graph g = graph::capture(step, in).graph;
  CHECK(graph::fuse_elementwise(g) == 2);
  CHECK(op_names(g) ==
        std::vector<std::string>{"[mul_scalar,add_scalar]", "matmul", "[mul_scalar,add]"});
  CHECK(g.nodes[0].outputs.size() == 1);
  check_runs_as_eager(std::move(g), step, {randn({8, 8}, {}, &gen), randn({8, 8}, {}, &gen)});
}

TEST_CASE("graph: a chain ends before an in-place write to bytes it read") {
  // Fused at the add, the product would read x after the copy: it must run before it.
  const Step step = [](const std::vector<Tensor>& in) {
    const Tensor a = in[0] * 2.0;
    Tensor x = in[0];
    x.copy_(in[1]);
    return std::vector<Tensor>{a + x};
  };
  Generator gen(23);
  graph::Graph g = graph::capture(step, {randn({5}, {}, &gen), randn({5}, {}, &gen)}).graph;
  CHECK(op_names(g) == std::vector<std::string>{"mul_scalar", "copy_", "add"});
  CHECK(graph::fuse_elementwise(g) == 0);
  check_runs_as_eager(std::move(g), step, {randn({5}, {}, &gen), randn({5}, {}, &gen)});
}

TEST_CASE("graph: a chain reads a parameter as it was, not as an in-place update leaves it") {
  // The product and sum read w; the update writes w after them (an optimizer's step): the
  // fused chain takes w itself as an input, not what the update makes of it later.
  Generator gen(24);
  Tensor w = randn({5}, {}, &gen);
  const Step step = [&](const std::vector<Tensor>& in) {
    const Tensor y = in[0] * w + 1.0;
    w.copy_(w + in[0]);
    return std::vector<Tensor>{y};
  };
  const Tensor w0 = w.clone();
  graph::Graph g = graph::capture(step, {randn({5}, {}, &gen)}).graph;
  REQUIRE(graph::fuse_elementwise(g) == 1);
  CHECK(op_names(g) == std::vector<std::string>{"[mul,add_scalar]", "add", "copy_"});
  w.copy_(w0);
  const Tensor x = randn({5}, {}, &gen);
  const Tensor want = x * w0 + 1.0;
  CHECK(relative_error(graph::Executable(std::move(g)).run({x})[0], want) < 1e-6);
  CHECK(relative_error(w, w0 + x) < 1e-6);
}

TEST_CASE("graph: a fused loop walks a channels-last output in memory order, gathering the rest") {
  // x channels last [2, 8, 5, 5] scaled per channel ([8, 1, 1]) through SiLU; y a transposed
  // [30, 40] read along its columns.
  const Step step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{silu(in[0] * in[1]) - 0.5,
                               relu(in[2] + in[3].transpose(0, 1)) * in[2]};
  };
  Generator gen(24);
  auto inputs = [&] {
    return std::vector<Tensor>{
        randn({2, 8, 5, 5}, {}, &gen).contiguous(MemoryFormat::channels_last),
        randn({8, 1, 1}, {}, &gen), randn({30, 40}, {}, &gen), randn({40, 30}, {}, &gen)};
  };
  graph::Graph g = graph::capture(step, inputs()).graph;
  CHECK(graph::fuse_elementwise(g) == 4);
  CHECK(op_names(g) ==
        std::vector<std::string>{"[mul,silu,add_scalar]", "permute", "[add,relu,mul]"});
  CHECK(g.values[g.outputs[0]].strides ==
        Shape{8 * 5 * 5, 1, 5 * 8, 8});  // the fused output stays channels last
  check_runs_as_eager(std::move(g), step, inputs());
}

TEST_CASE("graph: a fused node's attributes are checked as its ops check theirs") {
  const Step step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{exp(in[0] + in[1])};
  };
  graph::Graph g = graph::capture(step, {full({3, 4}, 1.0), full({4}, 1.0)}).graph;
  REQUIRE(graph::fuse_elementwise(g) == 1);
  const OpDef& fused = *g.nodes[0].op;
  const std::vector<Tensor> ok = {full({3, 4}, 1.0), full({4}, 1.0)};
  CHECK(fused.infer(ok, g.nodes[0].attrs).size() == 1);
  // Inputs the chain's add cannot broadcast; a member reading a later member.
  const std::vector<Tensor> bad = {full({3, 4}, 1.0), full({5}, 1.0)};
  check_error([&] { fused.infer(bad, g.nodes[0].attrs); }, {"add", "[5]"});
  Attrs later = g.nodes[0].attrs;
  later.set("in.0", std::vector<int64_t>{0, 3});
  check_error([&] { fused.infer(ok, later); }, {"member 0", "not an input or an earlier"});
  Attrs unknown = g.nodes[0].attrs;
  unknown.set("ops", std::string("add,matmul"));
  check_error([&] { fused.infer(ok, unknown); }, {"'matmul' is not element-wise"});
}

TEST_CASE("graph: compiling without a pass, and a pass that does not exist") {
  const Step step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{relu(in[0] * 2.0) + 1.0};
  };
  const auto fused = [](const graph::Graph& g) {
    return std::count_if(g.nodes.begin(), g.nodes.end(),
                         [](const graph::Node& n) { return !graph::fused_chain(n).empty(); });
  };
  const std::vector<Tensor> x = {full({4}, -1.5)};
  graph::Compiled all(step), unfused(step, {"element-wise fusion"});
  CHECK(all(x)[0].to_vector<float>() == unfused(x)[0].to_vector<float>());
  CHECK(fused(all.last_executable().graph()) == 1);
  CHECK(fused(unfused.last_executable().graph()) == 0);
  CHECK(unfused.last_report().passes.size() == graph::pass_names().size() - 1);
  check_error([&] { graph::Compiled(step, {"fusion"}); },
              {"no pass 'fusion'", "element-wise fusion", "dead code"});
}
