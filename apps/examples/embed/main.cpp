// The smallest program that embeds dlf: a two-layer network learns XOR with autograd and Adam,
// written as it would be with libtorch.
#include <cstdio>

#include <dlf/dlf.h>

int main() {
  using namespace dlf;
  manual_seed(0);
  const Tensor x = from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  const Tensor y = from_vector<float>({0, 1, 1, 0}, {4, 1});
  nn::Sequential model;
  model.add<nn::Linear>(2, 8).add<nn::Tanh>().add<nn::Linear>(8, 1);
  nn::optim::Adam optimizer(model.parameters(), {.lr = 0.05});
  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    Tensor l = (model.forward(x) - y).pow(2).mean();
    optimizer.zero_grad();
    l.backward();
    optimizer.step();
    loss = l.item<double>();
  }
  std::printf("XOR after 300 Adam steps: loss %.5f, outputs", loss);
  for (float v : model.forward(x).to_vector<float>()) std::printf(" %.2f", v);
  std::printf("\n%s\n", model.str().c_str());
  return loss < 0.01 ? 0 : 1;
}
