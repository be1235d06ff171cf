// Graph mode's machinery on small steps: what capture records, what each pass removes, what the
// memory plan gives, guards, gradients, random ops, and the errors.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <dlf/dlf.h>

#include "graph_test_util.h"
#include "test_util.h"

using namespace dlf;
using dlf::test::check_error;
using dlf::test::op_names;

namespace {

std::vector<float> values_of(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST_CASE("graph: capture records each outermost op; CSE and DCE remove a repeat and a dead op") {
  const auto step = [](const std::vector<Tensor>& in) {
    const Tensor p = in[0] * in[1];
    const Tensor q = in[0] * in[1];  // the same product again
    const Tensor unused = exp(in[0]);
    return std::vector<Tensor>{relu(p + q)};
  };
  Generator gen(3);
  const Tensor a = randn({4, 8}, {}, &gen), b = randn({4, 8}, {}, &gen);
  graph::Capture c = graph::capture(step, {a, b});
  CHECK(op_names(c.graph) == std::vector<std::string>{"mul", "mul", "exp", "add", "relu"});
  CHECK(values_of(c.results[0]) == values_of(step({a, b})[0]));

  CHECK(graph::eliminate_common_subexpressions(c.graph) == 1);
  CHECK(op_names(c.graph) == std::vector<std::string>{"mul", "exp", "add", "relu"});
  CHECK(graph::eliminate_dead_code(c.graph) == 1);
  CHECK(op_names(c.graph) == std::vector<std::string>{"mul", "add", "relu"});
  // Both inputs of the add are now the one product.
  CHECK(c.graph.nodes[1].inputs[0] == c.graph.nodes[1].inputs[1]);

  const graph::Executable exe(std::move(c.graph));
  const Tensor a2 = randn({4, 8}, {}, &gen), b2 = randn({4, 8}, {}, &gen);
  CHECK(values_of(exe.run({a2, b2})[0]) == values_of(step({a2, b2})[0]));
}

TEST_CASE("graph: a tensor made outside dispatch over a step's bytes is the value it views") {
  // detach() (as an autograd function's identity output) makes a tensor without an op: it reads
  // the exp, so dead-code elimination keeps the exp.
  const auto step = [](const std::vector<Tensor>& in) {
    const Tensor e = exp(in[0]);
    return std::vector<Tensor>{e.detach() * 2.0};
  };
  Generator gen(31);
  graph::Graph g = graph::capture(step, {randn({6}, {}, &gen)}).graph;
  REQUIRE(op_names(g) == std::vector<std::string>{"exp", "mul_scalar"});
  CHECK(g.nodes[1].inputs[0] == g.nodes[0].outputs[0]);
  CHECK(graph::eliminate_dead_code(g) == 0);
  const Tensor x = randn({6}, {}, &gen);
  CHECK(values_of(graph::Executable(std::move(g)).run({x})[0]) == values_of(step({x})[0]));
}

TEST_CASE("graph: an aliased parameter's reads, and its views', read the value standing for it") {
  // ZeRO-3's way (FullyShardedDataParallel): while aliased, the graph reads the gathered value —
  // a slice of a larger one, as an allgather's — never the parameter's own bytes (zeros here).
  const Tensor param = zeros({2, 3});
  Tensor transposed;
  const auto rows_2_3 = [](const Tensor& t) {
    return t.reshape({-1}).narrow(0, 6, 6).view({2, 3});
  };
  const auto step = [&](const std::vector<Tensor>& in) {
    graph::alias_in_capture(param, rows_2_3(in[0] * 2.0));
    transposed = param.transpose(0, 1);  // a view op: a view of that slice
    const Tensor a = param + 1.0;
    graph::unalias_in_capture(param);
    graph::alias_in_capture(param, rows_2_3(in[0] * 3.0));
    // Made outside dispatch over param's bytes, as a tensor autograd saved: that view of 3 in[0].
    const Tensor b = Tensor(param.storage(), {3, 2}, {1, 3}, 0, DType::f32) * 1.0;
    graph::unalias_in_capture(param);
    return std::vector<Tensor>{a, transposed * 1.0, b};
  };
  const Tensor x = arange(1, 13, 1, {}).view({4, 3});  // rows 2 and 3: 7 to 12
  const std::vector<Tensor> out = graph::Executable(graph::capture(step, {x}).graph).run({x});
  CHECK(out[0].to_vector<float>() == std::vector<float>{15, 17, 19, 21, 23, 25});
  CHECK(out[1].to_vector<float>() == std::vector<float>{14, 20, 16, 22, 18, 24});
  CHECK(out[2].to_vector<float>() == std::vector<float>{21, 30, 24, 33, 27, 36});
  // Writing the parameter in place, or reading its bytes as another dtype, while a value stands
  // for them: refused.
  const auto writes = [&](const std::vector<Tensor>& in) {
    graph::alias_in_capture(param, rows_2_3(in[0] * 1.0));
    Tensor(param).copy_(in[0].narrow(0, 0, 2));
    return std::vector<Tensor>{in[0]};
  };
  test::check_error([&] { (void)graph::capture(writes, {x}); }, {"writes in place a parameter"});
  const auto reinterprets = [&](const std::vector<Tensor>& in) {
    graph::alias_in_capture(param, in[0].narrow(0, 0, 2) * 1.0);
    return std::vector<Tensor>{Tensor(param.storage(), {6}, {1}, 0, DType::i32) + 1};
  };
  test::check_error([&] { (void)graph::capture(reinterprets, {x}); },
                    {"i32 view of a f32 parameter"});
  // Not capturing: nothing to alias.
  graph::alias_in_capture(param, x);
  CHECK(!graph::capturing());
  CHECK(!graph::aliased_in_capture(param));
}

TEST_CASE("graph: constant folding computes once what depends on no input of the step") {
  const auto step = [](const std::vector<Tensor>& in) {
    const Tensor freqs = exp(arange(8.0) * -0.5);  // arange, mul_scalar, exp: no input
    return std::vector<Tensor>{in[0] * freqs};
  };
  graph::Graph g = graph::capture(step, {full({8}, 2.0)}).graph;
  CHECK(op_names(g) == std::vector<std::string>{"arange", "mul_scalar", "exp", "mul"});
  CHECK(graph::fold_constants(g) == 3);
  CHECK(op_names(g) == std::vector<std::string>{"mul"});
  int external = 0;
  for (const graph::Buffer& b : g.buffers) external += b.kind == graph::BufferKind::external;
  CHECK(external == 1);  // the frequencies, computed once
  const graph::Executable exe(std::move(g));
  const Tensor x = full({8}, -3.0);
  CHECK(values_of(exe.run({x})[0]) == values_of(step({x})[0]));
}

TEST_CASE("graph: CSE keeps a read before and after an in-place write apart") {
  const auto step = [](const std::vector<Tensor>& in) {
    Tensor x = in[0] * 1.0;  // an intermediate the step owns
    const Tensor before = exp(x);
    x.copy_(in[0] + 1.0);  // x changes in place
    const Tensor after = exp(x);
    return std::vector<Tensor>{before + after};
  };
  graph::Capture c = graph::capture(step, {full({3}, 0.5)});
  CHECK(graph::eliminate_common_subexpressions(c.graph) == 0);
  const graph::Executable exe(std::move(c.graph));
  CHECK(values_of(exe.run({full({3}, 0.25)})[0]) == values_of(step({full({3}, 0.25)})[0]));
}

TEST_CASE("graph: the memory plan reuses the bytes of values no longer needed") {
  // x -> s1 -> s2 -> s3 -> out (softmax: not in place): s1 dies when s2 is made, so s1 and s3
  // share their bytes.
  const auto step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{softmax(softmax(softmax(softmax(in[0], 0), 0), 0), 0)};
  };
  graph::Capture c = graph::capture(step, {full({256}, 1.0)});
  graph::Executable exe(std::move(c.graph));
  CHECK(exe.graph().arena_bytes == 2 * 1024);  // three 1 KiB intermediates, two alive at once
  CHECK(graph::arena_lower_bound(exe.graph()) == 2 * 1024);
  int arena = 0, output = 0;
  for (const graph::Buffer& b : exe.graph().buffers) {
    arena += b.kind == graph::BufferKind::arena;
    output += b.kind == graph::BufferKind::output;
  }
  CHECK(arena == 3);
  CHECK(output == 1);  // the result: in the arena, alive to the end and after
  const Tensor out = exe.run({full({256}, -2.0)})[0];
  CHECK(values_of(out) == values_of(step({full({256}, -2.0)})[0]));
}

TEST_CASE("graph: an element-wise op writes over an input that dies with it") {
  // r1 = relu(x); r2 = relu(r1) over r1; r3 over r2; the result over r3: one KiB for all. In
  // the second step r1 is read again after r2, so r2 needs bytes of its own.
  const auto chain = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{relu(relu(relu(relu(in[0]))))};
  };
  graph::Executable exe(graph::capture(chain, {full({256}, 1.0)}).graph);
  const graph::Graph& g = exe.graph();
  CHECK(g.arena_bytes == 1024);
  CHECK(graph::arena_lower_bound(g) == 1024);
  for (const graph::Buffer& b : g.buffers)
    if (b.kind == graph::BufferKind::arena || b.kind == graph::BufferKind::output)
      CHECK(b.offset == 0);
  Generator gen(19);
  const Tensor x = randn({256}, {}, &gen);
  CHECK(values_of(exe.run({x})[0]) == values_of(chain({x})[0]));

  const auto reread = [](const std::vector<Tensor>& in) {
    const Tensor r1 = exp(in[0]);
    return std::vector<Tensor>{relu(r1) + r1};  // relu's input lives on: not in place
  };
  graph::Executable kept(graph::capture(reread, {full({256}, 1.0)}).graph);
  CHECK(kept.graph().arena_bytes == 2 * 1024);  // r1 and relu's; the sum over relu's
  CHECK(values_of(kept.run({x})[0]) == values_of(reread({x})[0]));
}

TEST_CASE("graph: rematerialisation makes a cheap value again for a late read, in less memory") {
  // a = exp(x) is read at once and again 21 nodes later: between the two it need not be kept.
  const auto step = [](const std::vector<Tensor>& in) {
    const Tensor a = exp(in[0]);
    Tensor t = a * 3.0;
    for (int i = 0; i < 20; ++i) t = softmax(t, 0);  // never in place: two alive at once
    return std::vector<Tensor>{t + a.sum()};
  };
  const Tensor x = full({256}, 0.5);
  graph::Graph kept = graph::capture(step, {x}).graph;
  graph::Graph remat = kept;
  CHECK(graph::rematerialize(remat) == 1);
  const std::vector<std::string> names = op_names(remat);
  REQUIRE(names.size() == 25);
  CHECK(names[0] == "exp");
  CHECK(names[22] == "exp");  // made again just before the read that needs it
  CHECK(names[23] == "sum");
  graph::plan_memory(kept);
  graph::plan_memory(remat);
  CHECK(kept.arena_bytes == 3 * 1024);  // a, and two softmaxes alive at once
  // a is gone while the softmaxes run; at the end a again, the last softmax and the sum (64
  // bytes); the add writes over the last softmax.
  CHECK(remat.arena_bytes == 2 * 1024 + 64);
  const graph::Executable exe(std::move(remat));
  const Tensor x2 = full({256}, -0.25);
  CHECK(values_of(exe.run({x2})[0]) == values_of(step({x2})[0]));
}

TEST_CASE("graph: rematerialisation reads an input as it was, so not across a write to it") {
  // a = exp(w) of a tensor from outside, read at once and 21 nodes later; the step then
  // writes w in place (as an optimizer's update writes a parameter). Made again before that
  // write, a is the same; with the write before the late read it would not be.
  Tensor w = full({256}, 0.5);
  const auto step = [&](bool write_between) {
    return [&w, write_between](const std::vector<Tensor>& in) {
      const Tensor a = exp(w);
      Tensor t = a * 3.0;
      for (int i = 0; i < 20; ++i) t = softmax(t, 0);
      if (write_between) w.copy_(in[0]);
      const Tensor out = t + a.sum();
      if (!write_between) w.copy_(in[0]);
      return std::vector<Tensor>{out};
    };
  };
  graph::Graph after = graph::capture(step(false), {full({256}, 0.5)}).graph;
  CHECK(graph::rematerialize(after) == 1);
  graph::Graph between = graph::capture(step(true), {full({256}, 0.5)}).graph;
  CHECK(graph::rematerialize(between) == 0);
}

TEST_CASE("graph: compile captures once per input signature and runs the graph after") {
  int traced = 0;
  graph::Compiled f([&](const std::vector<Tensor>& in) {
    ++traced;
    return std::vector<Tensor>{gelu(in[0]).sum({1})};
  });
  Generator gen(5);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = randn({4, 6}, {}, &gen);
    CHECK(values_of(f({x})[0]) == values_of(gelu(x).sum({1})));
  }
  CHECK(traced == 1);
  CHECK(f.captures() == 1);
  const Tensor other = randn({2, 6}, {}, &gen);  // another shape: captured again
  CHECK(values_of(f({other})[0]) == values_of(gelu(other).sum({1})));
  CHECK(f.captures() == 2);
  {
    autograd::NoGradGuard no_grad;  // another grad mode: a guard of its own
    f({randn({4, 6}, {}, &gen)});
  }
  CHECK(f.captures() == 3);
  CHECK(traced == 3);
}

TEST_CASE("graph: a captured step leaves the gradients eager leaves") {
  Generator gen(11);
  const Tensor w = randn({8, 3}, {}, &gen).requires_grad_();
  const auto step = [&](const std::vector<Tensor>& in) {
    const Tensor loss = (relu(matmul(in[0], w)) * in[0].sum({1}, true)).mean();
    loss.backward();
    return std::vector<Tensor>{loss};
  };
  graph::Compiled f(step);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = randn({5, 8}, {}, &gen);
    w.set_grad(Tensor());
    const float eager_loss = step({x})[0].item<float>();
    const std::vector<float> eager_grad = values_of(w.grad());
    w.set_grad(Tensor());
    CHECK(f({x})[0].item<float>() == eager_loss);
    CHECK(values_of(w.grad()) == eager_grad);
  }
  CHECK(f.captures() == 1);
  check_error([&] { f({randn({5, 8}, {}, &gen)}); }, {"already has a gradient", "zero_grad"});
}

TEST_CASE("graph: random ops draw afresh at each run, as eager does") {
  const auto step = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{dropout(in[0], 0.5, true) + rand({16})};
  };
  const Tensor x = full({16}, 1.0);
  manual_seed(7);
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 3; ++i) eager.push_back(values_of(step({x})[0]));
  CHECK(eager[0] != eager[1]);
  manual_seed(7);
  graph::Compiled f(step);
  for (int i = 0; i < 3; ++i) CHECK(values_of(f({x})[0]) == eager[size_t(i)]);
}

TEST_CASE("graph: an abstract capture records the step without running it") {
  Generator gen(17);
  const Tensor w = randn({6, 4}, {}, &gen).requires_grad_();
  const auto step = [&](const std::vector<Tensor>& in) {
    const Tensor loss = dropout(gelu(matmul(in[0], w)), 0.25, true).square().mean();
    loss.backward();
    return std::vector<Tensor>{loss};
  };
  const Tensor x = randn({5, 6}, {}, &gen);
  struct Count final : DispatchObserver {
    int ops = 0;
    void on_op(const OpDef&, Inputs, const Attrs&, std::span<const Tensor>) override { ++ops; }
  } seen;
  add_observer(&seen);
  manual_seed(3);
  graph::Capture eager = graph::capture(step, {x});
  const float eager_loss = eager.results[0].item<float>();
  const std::vector<float> eager_grad = values_of(w.grad());
  const int eager_ops = seen.ops;
  w.set_grad(Tensor());

  manual_seed(3);
  const uint64_t drawn = default_generator().offset();
  seen.ops = 0;
  graph::Capture abstract = graph::capture(step, {x}, graph::CaptureMode::abstract);
  CHECK(seen.ops == 0);  // only the recorder saw the ops: no kernel, no profile, no clock
  CHECK(eager_ops == int(abstract.graph.nodes.size()));
  CHECK(op_names(abstract.graph) == op_names(eager.graph));
  CHECK_FALSE(w.grad().defined());               // the step's gradients are cleared
  CHECK(default_generator().offset() == drawn);  // and nothing was drawn
  remove_observer(&seen);
  // Run next, the graph does what the eager step did, dropout's draw included.
  const std::vector<Tensor> results = graph::Executable(std::move(abstract.graph)).run({x});
  CHECK(results[0].item<float>() == eager_loss);
  CHECK(values_of(w.grad()) == eager_grad);
}

TEST_CASE("graph: a step that reads values on the host cannot be captured") {
  const auto step = [](const std::vector<Tensor>& in) {
    const Tensor s = in[0].sum();
    return std::vector<Tensor>{s.item<float>() > 0 ? in[0] * 2.0 : in[0]};
  };
  check_error([&] { graph::capture(step, {full({3}, 1.0)}); },
              {"graph capture", "item()", "'sum'", "tensor ops"});
  const auto reads_input = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * double(in[1].to_vector<int64_t>()[0])};
  };
  check_error(
      [&] {
        graph::capture(reads_input, {full({3}, 1.0), zeros({1}, {.dtype = DType::i64})});
      },
      {"graph capture", "on the host", "input 1 of the step"});
  // The failed capture left nothing behind: the next works.
  CHECK(graph::capture([](const std::vector<Tensor>& in) { return std::vector<Tensor>{-in[0]}; },
                       {full({3}, 1.0)})
            .graph.nodes.size() == 1);
  graph::Executable exe(
      graph::capture([](const std::vector<Tensor>& in) { return std::vector<Tensor>{-in[0]}; },
                     {full({3}, 1.0)})
          .graph);
  check_error([&] { exe.run({full({4}, 1.0)}); }, {"differ from the captured ones", "shape"});
}

TEST_CASE("graph: a saved graph loads and runs without the code that captured it") {
  Generator gen(13);
  const Tensor w = randn({6, 4}, {}, &gen).requires_grad_();
  const Tensor b = randn({4}, {}, &gen).requires_grad_();
  graph::Capture c = graph::capture(
      [&](const std::vector<Tensor>& in) {
        const Tensor loss = gelu(matmul(in[0], w) + b).square().mean();
        loss.backward();
        return std::vector<Tensor>{loss};
      },
      {randn({3, 6}, {}, &gen)});
  w.set_grad(Tensor());
  b.set_grad(Tensor());
  graph::optimize(c.graph);
  const graph::Executable original(std::move(c.graph));
  const std::string path = std::filesystem::temp_directory_path() /
                           ("dlf_graph_test_" + std::to_string(::getpid()) + ".json");
  graph::save(original.graph(), path);
  const graph::Executable loaded(graph::load(path));
  CHECK(loaded.graph().nodes.size() == original.graph().nodes.size());
  CHECK(loaded.graph().arena_bytes == original.graph().arena_bytes);
  REQUIRE(loaded.graph().grads.size() == 2);

  const Tensor x = randn({3, 6}, {}, &gen);
  const float expected = original.run({x})[0].item<float>();
  CHECK(loaded.run({x})[0].item<float>() == expected);
  // The loaded graph's parameters are its own copies, with the same values and gradients.
  for (const graph::GradBinding& g : loaded.graph().grads) {
    const Tensor& mine = g.param.shape() == w.shape() ? w : b;
    CHECK(values_of(g.param) == values_of(mine));
    CHECK(values_of(g.param.grad()) == values_of(mine.grad()));
  }
  // A damaged file is named.
  { std::ofstream(path) << "{\"graph\": {\"version\": 1, \"buffers\": ["; }
  check_error([&] { graph::load(path); }, {"not a saved graph", path});
  // So is one whose node no longer makes its outputs (matmul [3, 6] x [6, 4] turned gelu).
  graph::save(original.graph(), path);
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t op = text.find("\"matmul\"");
  REQUIRE(op != std::string::npos);
  text.replace(op, 8, "\"gelu\"");
  { std::ofstream(path) << text; }
  check_error([&] { graph::load(path); },
              {path, "('gelu')", "outputs are not what its op makes of its inputs"});
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".safetensors");
}
