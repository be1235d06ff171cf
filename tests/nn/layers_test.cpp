#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

namespace {

struct Moments {
  double mean, std, min, max;
};
Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double s = 0, s2 = 0, lo = v[0], hi = v[0];
  for (double x : v) {
    s += x;
    s2 += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double n = double(v.size()), mean = s / n;
  return {mean, std::sqrt(s2 / n - mean * mean), lo, hi};
}

std::vector<std::string> names(const nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [name, t] : list) out.push_back(name + " " + shape_str(t.shape()));
  return out;
}

}  // namespace

TEST_CASE("init: bounds and spreads follow the fan-in/fan-out formulas") {
  Generator gen(7);
  Tensor w = Tensor::empty({200, 300}, DType::f32);  // fan_in 300, fan_out 200
  CHECK(nn::init::fans(w).in == 300);
  CHECK(nn::init::fans(Tensor::empty({8, 4, 3, 3}, DType::f32)).in == 36);

  nn::init::kaiming_uniform_(w, std::sqrt(5.0), &gen);  // PyTorch's Linear default
  Moments m = moments(w);
  const double bound = 1 / std::sqrt(300.0);
  CHECK(m.min >= -bound);
  CHECK(m.max <= bound);
  CHECK(m.max > 0.99 * bound);
  CHECK(m.std == doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.02));

  nn::init::kaiming_normal_(w, 0, &gen);
  CHECK(moments(w).std == doctest::Approx(std::sqrt(2.0 / 300)).epsilon(0.02));
  nn::init::xavier_uniform_(w, 1, &gen);
  CHECK(moments(w).max <= std::sqrt(6.0 / 500));
  CHECK(moments(w).std == doctest::Approx(std::sqrt(2.0 / 500)).epsilon(0.02));
  nn::init::xavier_normal_(w, 2, &gen);
  CHECK(moments(w).std == doctest::Approx(2 * std::sqrt(2.0 / 500)).epsilon(0.02));
  nn::init::normal_(w, 3, 0.5, &gen);
  CHECK(moments(w).mean == doctest::Approx(3).epsilon(0.01));
  CHECK(moments(w).std == doctest::Approx(0.5).epsilon(0.02));
  nn::init::uniform_(w, -2, -1, &gen);
  CHECK(moments(w).min >= -2);
  CHECK(moments(w).max < -1);
  nn::init::constant_(w, 0.25);
  CHECK(moments(w).min == 0.25);
  CHECK(moments(w).max == 0.25);

  Generator a(3), b(3);  // same seed, same values; and init stays out of autograd
  Tensor p = zeros({4, 4}).requires_grad_(), q = zeros({4, 4});
  nn::init::normal_(p, 0, 1, &a);
  nn::init::normal_(q, 0, 1, &b);
  check_close(p, q, 0, 0);
  CHECK(p.is_leaf());
  check_error([] { nn::init::xavier_uniform_(zeros({3})); }, {"at least 2 dims", "[3]"});
}

TEST_CASE("Linear, Embedding, Conv2d: PyTorch's parameter shapes, names and formulas") {
  manual_seed(1);
  nn::Linear fc(3, 2);
  CHECK(names(fc.state_dict()) == std::vector<std::string>{"weight [2, 3]", "bias [2]"});
  autograd::NoGradGuard no_grad;  // writing into leaves that require grad
  fc.weight.copy_(from_vector<float>({1, 2, 3, -1, 0, 1}, {2, 3}));
  fc.bias.copy_(from_vector<float>({0.5, -10}, {2}));
  const Tensor x = from_vector<float>({1, 1, 1, 2, 0, -1}, {2, 3});
  check_close(fc.forward(x), {6.5, -10, -0.5, -13}, {2, 2});
  check_close(fc.forward(x, Activation::relu), {6.5, 0, 0, 0}, {2, 2});
  CHECK(nn::Linear(3, 2, {.bias = false}).state_dict().size() == 1);
  check_error([] { nn::Linear(0, 2); }, {"Linear", "positive"});

  nn::Embedding emb(5, 2);
  emb.weight.copy_(arange(10).view({5, 2}));
  check_close(emb.forward(from_vector<int64_t>({4, 0, 4}, {3})), {8, 9, 0, 1, 8, 9}, {3, 2});

  nn::Conv2d conv(4, 6, {3, 3}, {.padding = {1, 1}, .groups = 2});
  CHECK(names(conv.state_dict()) == std::vector<std::string>{"weight [6, 2, 3, 3]", "bias [6]"});
  const double bound = 1 / std::sqrt(18.0);
  CHECK(moments(conv.weight).max <= bound);
  CHECK(moments(conv.bias).max <= bound);
  const Tensor img = randn({1, 4, 5, 5});
  check_close(conv.forward(img), conv2d(img, conv.weight, conv.bias, conv.options));
  CHECK(conv.forward(img).shape() == Shape{1, 6, 5, 5});
}

TEST_CASE("LayerNorm, GroupNorm, GELU and Dropout layers") {
  nn::LayerNorm ln(4);
  CHECK(names(ln.state_dict()) == std::vector<std::string>{"weight [4]", "bias [4]"});
  const Tensor x = from_vector<float>({1, 2, 3, 4, -1, -1, 1, 1}, {2, 4});
  const double s = std::sqrt(1.25 + 1e-5);
  check_close(ln.forward(x), {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s, -1, -1, 1, 1}, {2, 4}, 1e-4);
  CHECK(nn::LayerNorm(4, 1e-5, false).state_dict().empty());

  nn::GroupNorm gn(2, 4);
  const Tensor img = randn({2, 4, 3, 3});
  check_close(gn.forward(img), group_norm(img, 2, gn.weight, gn.bias));
  check_error([] { nn::GroupNorm(3, 4); }, {"4 channels", "3 groups"});

  check_close(nn::GELU(GeluApproximation::tanh).forward(x), gelu(x, GeluApproximation::tanh));

  nn::Dropout drop(0.25);
  const Tensor ones_in = ones({10000});
  const std::vector<double> kept = drop.forward(ones_in).to_vector<double>();
  int zeros_seen = 0;
  for (double v : kept) {
    if (v == 0)
      ++zeros_seen;
    else
      CHECK(v == doctest::Approx(1 / 0.75));
  }
  CHECK(zeros_seen == doctest::Approx(2500).epsilon(0.1));
  drop.eval();
  check_close(drop.forward(ones_in), ones_in, 0, 0);
  check_error([] { nn::Dropout(1.0); }, {"Dropout", "[0, 1)"});
}

TEST_CASE("SelfAttention matches per-head attention written out with matmul and softmax") {
  manual_seed(3);
  const int64_t B = 2, T = 5, C = 6, H = 2, hd = 3;
  nn::SelfAttention attn({.dim = C, .heads = H, .dtype = DType::f64});
  CHECK(names(attn.state_dict()) ==
        std::vector<std::string>{"c_attn.weight [18, 6]", "c_attn.bias [18]",
                                 "c_proj.weight [6, 6]", "c_proj.bias [6]"});
  const Tensor x = randn({B, T, C}, {.dtype = DType::f64});
  const Tensor qkv = linear(x, attn.c_attn->weight, attn.c_attn->bias);
  const std::vector<Tensor> parts = split(qkv, C, 2);
  auto heads = [&](const Tensor& t) { return t.view({B, T, H, hd}).transpose(1, 2); };
  const Tensor scores = matmul(heads(parts[0]), heads(parts[1]).transpose(2, 3)) / std::sqrt(3.0);
  const Tensor future = gt(arange(T).view({T, 1}) * 0 + arange(T).view({1, T}),
                           arange(T).view({T, 1}));  // key j > query i
  const Tensor probs = softmax(masked_fill(scores, future, -INFINITY), -1);
  const Tensor y = matmul(probs, heads(parts[2])).transpose(1, 2).reshape({B, T, C});
  const Tensor expected = linear(y, attn.c_proj->weight, attn.c_proj->bias);
  check_close(attn.forward(x), expected, 1e-12, 1e-10);
  check_error([&] { attn.forward(randn({B, T, 4})); }, {"attention", "[2, 5, 4]"});
  check_error([] { nn::SelfAttention({.dim = 6, .heads = 4}); }, {"6", "4 heads"});
}

TEST_CASE("TransformerBlock: nanoGPT names, residual structure and a gradient check") {
  manual_seed(4);
  nn::TransformerBlock block({.dim = 4, .heads = 2, .dtype = DType::f64});
  CHECK(names(block.state_dict()) ==
        std::vector<std::string>{"ln_1.weight [4]", "ln_1.bias [4]", "attn.c_attn.weight [12, 4]",
                                 "attn.c_attn.bias [12]", "attn.c_proj.weight [4, 4]",
                                 "attn.c_proj.bias [4]", "ln_2.weight [4]", "ln_2.bias [4]",
                                 "mlp.c_fc.weight [16, 4]", "mlp.c_fc.bias [16]",
                                 "mlp.c_proj.weight [4, 16]", "mlp.c_proj.bias [4]"});
  const Tensor x = randn({2, 3, 4}, {.dtype = DType::f64}).requires_grad_();
  // Zero output projections make the block the identity: both branches end in them.
  {
    autograd::NoGradGuard no_grad;
    nn::TransformerBlock identity({.dim = 4, .heads = 2, .dtype = DType::f64});
    nn::init::zeros_(identity.attn->c_proj->weight);
    nn::init::zeros_(identity.attn->c_proj->bias);
    nn::init::zeros_(identity.mlp->c_proj->weight);
    nn::init::zeros_(identity.mlp->c_proj->bias);
    check_close(identity.forward(x), x, 0, 0);
  }
  std::vector<Tensor> inputs = {x};
  for (const Tensor& p : block.parameters()) inputs.push_back(p);
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, inputs);
  INFO(result.str());
  CHECK(result.ok);
}

TEST_CASE("ModuleList names children by index; functional losses") {
  nn::ModuleList<nn::Linear> list;
  list.push_back(std::make_shared<nn::Linear>(2, 3));
  list.push_back(std::make_shared<nn::Linear>(3, 1, nn::LinearOptions{.bias = false}));
  CHECK(list.size() == 2);
  CHECK(names(list.state_dict()) ==
        std::vector<std::string>{"0.weight [3, 2]", "0.bias [3]", "1.weight [1, 3]"});

  const Tensor a = from_vector<float>({1, 2, 3}), b = from_vector<float>({1, 0, 0});
  check_close(nn::functional::mse_loss(a, b), {13.0 / 3}, {});
  check_close(nn::functional::mse_loss(a, b, Reduction::sum), {13}, {});
  check_close(nn::functional::mse_loss(a, b, Reduction::none), {0, 4, 9}, {3});
  check_close(nn::functional::silu(a),
              {1 / (1 + std::exp(-1.0)), 2 / (1 + std::exp(-2.0)), 3 / (1 + std::exp(-3.0))}, {3});
  check_error([&] { nn::functional::mse_loss(a, zeros({2})); }, {"mse_loss", "[3]", "[2]"});
}
