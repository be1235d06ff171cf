// The smallest program that embeds dlf: a two-layer network learns XOR with autograd and Adam.
#include <cstdio>

#include <dlf/dlf.h>

int main() {
  using namespace dlf;
  manual_seed(0);
  const Tensor x = from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  const Tensor y = from_vector<float>({0, 1, 1, 0}, {4, 1});
  nn::Linear hidden(2, 8), out(8, 1);
  std::vector<Tensor> params = hidden.parameters();
  for (const Tensor& p : out.parameters()) params.push_back(p);
  nn::optim::Adam opt({{.params = params}}, {.lr = 0.05});
  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor l = mean(pow(out.forward(tanh(hidden.forward(x))) - y, 2.0));
    l.backward();
    opt.step();
    loss = l.item<double>();
  }
  const Tensor prediction = out.forward(tanh(hidden.forward(x)));
  std::printf("XOR after 300 Adam steps: loss %.5f, outputs", loss);
  for (float v : prediction.to_vector<float>()) std::printf(" %.2f", v);
  std::printf("\n");
  return loss < 0.01 ? 0 : 1;
}
