// The ops of Llama-shaped models: rotary embeddings and grouped-query attention (rms_norm is in
// normalization_test.cpp, swiglu in the element-wise tests).
#include <cmath>

#include "op_check.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
using dlf::test::check_op;
using dlf::test::random_inputs;

namespace {

// x[i] = 0.1 (i + 1) (-1)^i over [1, 2, 3, 8], as tests/interop/rope_reference.py makes it.
Tensor rope_input() {
  std::vector<double> v;
  for (int i = 0; i < 48; ++i) v.push_back(0.1 * (i + 1) * (i % 2 ? -1 : 1));
  return from_vector(v, {1, 2, 3, 8});
}
// θ 100 and Llama 3 scaling (factor 8, low 1, high 4, original context 32) over d = 8 keep the
// first frequency, blend the second and divide the other two; positions 7, 8, 9.
const RotaryOptions kRope{
    .theta = 100, .offset = 7, .scaling = {.factor = 8, .original_context = 32}};

TEST_CASE("rotary_embedding matches PyTorch running Hugging Face's and Meta's formulas") {
  const std::vector<double> rotate_half = {
      -0.25310307392506404,  0.21635026805494695,  0.23768042267792733, -0.37771376567877651,
      0.4426497870435312,    -0.59430006016536185, 0.72353853848681893, -0.81076032908422357,
      -1.4171157510381487,   0.25109713214799256,  0.94475445683558612, -1.1488120397544395,
      0.70127237800984599,   -1.7020429578089544,  1.6023230062285496,  -1.6371410743473649,
      -2.41437026421164,     0.5000308836521794,   1.6297846936164175,  -1.9133710206735246,
      -1.2127721250468353,   -2.7982081972923352,  2.498760063001976,   -2.4696176500111831,
      -0.020505500426226897, -0.17148858967817615, 2.4187666491854642,  -2.7103957170234403,
      3.8287830343925564,    -3.9661809922909708,  3.324089032620535,   -3.2762409949728966,
      -4.1407756240749372,   0.18770464622766836,  3.09316425355046,    -3.4717301243852652,
      2.72653208876529,      -5.0955634591068097,  4.2299332028481986,  -4.111823189709872,
      -5.5901672573150805,   0.76166660316459023,  3.7451823758788194,  -4.2264889430427006,
      -2.410400388989844,    -6.1822216059943793,  5.1530194033601955,  -4.9534625479898207};
  const std::vector<double> interleaved = {
      0.20678754517808828,  -0.085081790996782022, 0.48365265973221128, -0.12680735283869732,
      0.55052019185340284,  -0.55401039553576314,  0.72186516743719642, -0.78032729033455484,
      0.85840821619562957,  1.0359224557696571,    1.6247412300818822,  -0.10107390994719401,
      1.4332721981669929,   -1.2632223897483597,   1.5498380727418108,  -1.551773807060794,
      -0.80710817176878913, 2.3406358963034046,    2.7549616387269191,  0.14207874275587473,
      2.3337032073571051,   -1.9503408266175322,   2.3839081725547251,  -2.3166747343610399,
      3.5929207925271132,   -0.31767936449561929,  3.8555335918578204,  -0.51464621057182036,
      3.1510706859871189,   -2.7350966220433,      3.1873458333258693,  -3.1130092416792188,
      2.8836679269510737,   3.759582328806446,     5.0182617313797362,  -0.16446639586751832,
      4.0608823947866428,   -3.4116321864632342,   4.0245201881043187,  -3.87469189169162,
      -2.0047364357117985,  5.516432889406846,     6.1389750474289624,  0.40371446226828489,
      4.9879625477153251,   -4.0657385088799352,   4.8677530705333627,  -4.6297926567302161};
  RotaryOptions meta = kRope;
  meta.interleaved = true;
  const Tensor x = rope_input();
  check_close(check_op([](const auto& t) { return rotary_embedding(t[0], kRope); }, {x},
                       {.bf16_tol = 3e-2}),
              rotate_half, {1, 2, 3, 8}, 1e-14, 1e-14);
  check_close(check_op([&](const auto& t) { return rotary_embedding(t[0], meta); }, {x},
                       {.bf16_tol = 3e-2}),
              interleaved, {1, 2, 3, 8}, 1e-14, 1e-14);
  // [B, T, H, d] with seq_dim 1 is the same rotation of the transposed tensor.
  RotaryOptions bthd = kRope;
  bthd.seq_dim = 1;
  check_close(rotary_embedding(x.transpose(1, 2).contiguous(), bthd).transpose(1, 2), rotate_half,
              {1, 2, 3, 8}, 1e-14, 1e-14);
}

TEST_CASE("rotary_embedding by hand: a quarter turn per position, and a decode step alone") {
  // d = 2, θ irrelevant (the one frequency is 1): position t turns (1, 0) by t radians.
  const Tensor x = from_vector<double>({1, 0, 1, 0, 0, 2}, {3, 2});
  check_close(rotary_embedding(x),
              {1, 0, std::cos(1.0), std::sin(1.0), -2 * std::sin(2.0), 2 * std::cos(2.0)}, {3, 2},
              1e-15);
  // A KV-cached decode rotates token t alone with offset t: row t of the whole sequence's.
  const Tensor seq = random_inputs({{2, 6, 8}})[0];
  const Tensor whole = rotary_embedding(seq, kRope);
  RotaryOptions step = kRope;
  step.offset = kRope.offset + 4;
  check_close(rotary_embedding(seq.narrow(1, 4, 1), step), whole.narrow(1, 4, 1), 1e-15, 1e-15);
  // The inverse rotation (its gradient) undoes it: the op is orthogonal.
  Tensor leaf = seq.detach().requires_grad_();
  autograd::backward({rotary_embedding(leaf, kRope)}, {whole});
  check_close(leaf.grad(), seq, 1e-14, 1e-14);
}

TEST_CASE("rotary_embedding with an offset per row: each row as if rotated alone") {
  // [B, T, H, d]: row 0 three positions on (a cached decode of a longer prompt), row 1 none.
  const Tensor x = random_inputs({{2, 5, 2, 8}})[0];
  RotaryOptions rows = kRope;
  rows.seq_dim = 1;
  rows.row_offsets = {3, 0};
  const Tensor both = rotary_embedding(x, rows);
  for (int64_t b = 0; b < 2; ++b) {
    RotaryOptions alone = kRope;
    alone.seq_dim = 1;
    alone.offset = kRope.offset + rows.row_offsets[size_t(b)];
    check_close(both.narrow(0, b, 1), rotary_embedding(x.narrow(0, b, 1), alone), 1e-15, 1e-15);
  }
  // Its gradient is the inverse rotation, row by row too.
  Tensor leaf = x.detach().requires_grad_();
  autograd::backward({rotary_embedding(leaf, rows)}, {both});
  check_close(leaf.grad(), x, 1e-14, 1e-14);
}

TEST_CASE("rotary_embedding refuses bad input") {
  check_error([] { rotary_embedding(zeros({2, 3})); }, {"rotary_embedding", "even", "[2, 3]"});
  check_error([] { rotary_embedding(zeros({4})); }, {"rotary_embedding", "at least 2 dims"});
  check_error([] { rotary_embedding(zeros({2, 4}), {.seq_dim = 1}); }, {"seq_dim", "1"});
  check_error([] { rotary_embedding(zeros({2, 4}, {.dtype = DType::i64})); }, {"floating", "i64"});
  check_error([] { rotary_embedding(zeros({2, 4}), {.theta = 0}); }, {"theta"});
  check_error([] { rotary_embedding(zeros({2, 4}), {.offset = -1}); }, {"offset", "-1"});
  check_error(
      [] {
        rotary_embedding(zeros({2, 3, 4}), {.row_offsets = {1}});
      },
      {"row_offsets", "per row of dim 0 (2)", "1 offsets"});
  check_error(
      [] {
        rotary_embedding(zeros({2, 4}), {.seq_dim = 0, .row_offsets = {1, 2}});
      },
      {"row_offsets", "seq_dim 0"});
  check_error(
      [] {
        rotary_embedding(zeros({2, 4}), {.scaling = {.factor = 8, .high_freq_factor = 1}});
      },
      {"Llama 3 scaling", "high_freq_factor"});
}

// ---- grouped-query attention ----

// q [B, Hkv, G, T, d] against k, v [B, Hkv, 1, T, d] (each kv head shared by G query heads),
// and the same attention with k and v repeated to every query head, as [B, H, T, d].
struct Gqa {
  Tensor q, k, v;
};
Gqa repeated(const Gqa& g) {
  const Shape& s = g.q.shape();
  const Shape heads{s[0], s[1] * s[2], s[3], s[4]};
  auto rep = [&](const Tensor& t) {
    return t.expand({s[0], s[1], s[2], s[3], t.size(-1)})
        .contiguous()
        .reshape({s[0], s[1] * s[2], s[3], t.size(-1)});
  };
  return {g.q.reshape(heads), rep(g.k), rep(g.v)};
}

void check_gqa(int64_t batch, int64_t kv_heads, int64_t group, int64_t t) {
  INFO("B ", batch, ", kv heads ", kv_heads, ", group ", group, ", T ", t);
  std::vector<Tensor> in = random_inputs(
      {{batch, kv_heads, group, t, 4}, {batch, kv_heads, 1, t, 4}, {batch, kv_heads, 1, t, 3}}, 9);
  for (Tensor& x : in) x.requires_grad_();
  const Gqa grouped{in[0], in[1], in[2]};
  const Tensor w = random_inputs({{batch, kv_heads * group, t, 3}}, 10)[0];
  const Tensor y = scaled_dot_product_attention(grouped.q, grouped.k, grouped.v, true);
  const std::vector<Tensor> d = autograd::grad({sum(y.reshape(w.shape()) * w)}, in);

  std::vector<Tensor> flat;
  for (const Tensor& x : in) flat.push_back(x.detach().requires_grad_());
  const Gqa ref = repeated({flat[0], flat[1], flat[2]});
  const Tensor y_ref = scaled_dot_product_attention(ref.q, ref.k, ref.v, true);
  const std::vector<Tensor> d_ref = autograd::grad({sum(y_ref * w)}, flat);
  check_close(y.reshape(w.shape()), y_ref, 1e-13, 1e-13);
  for (int i = 0; i < 3; ++i) {
    INFO("gradient ", i);
    CHECK(d[i].shape() == in[i].shape());
    check_close(d[i], d_ref[i], 1e-12, 1e-12);
  }
  // The backward's dk and dv are k's and v's size: no [.., G, T, d] gradient exists.
  const Attrs attrs{{"causal", true}, {"scale", 0.5}};
  const Tensor q = in[0].detach(), k = in[1].detach(), v = in[2].detach();
  const std::vector<Tensor> outs =
      dispatch(find_op("scaled_dot_product_attention"), {q, k, v}, attrs);
  const std::vector<Tensor> grads = dispatch(find_op("scaled_dot_product_attention_backward"),
                                             {outs[0], q, k, v, outs[0], outs[1]}, attrs);
  CHECK(grads[1].shape() == in[1].shape());
  CHECK(grads[2].shape() == in[2].shape());
}

TEST_CASE("grouped-query and multi-query attention equal attention over repeated k and v") {
  check_gqa(2, 2, 3, 5);   // grouped-query, two passes (4 kv entries)
  check_gqa(1, 1, 4, 70);  // multi-query over two blocks of rows
  check_gqa(4, 2, 2, 6);   // 8 kv entries: one task per kv entry
}

}  // namespace
