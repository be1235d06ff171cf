// The smallest program that embeds dlf: a two-layer network learns XOR with autograd and Adam,
// written as it would be with libtorch, and is saved to one file and loaded back.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <dlf/dlf.h>

using namespace dlf;

// The layers are members, registered under their names; net(x) calls forward.
struct Net : nn::Module, nn::Callable<Net> {
  nn::Linear fc1{2, 8}, fc2{8, 1};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) const { return fc2(fc1(x).tanh()); }
};

int main() {
  manual_seed(0);
  const Tensor x = from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  const Tensor y = from_vector<float>({0, 1, 1, 0}, {4, 1});
  Net model;
  nn::optim::Adam optimizer(model.parameters(), {.lr = 0.05});
  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    Tensor l = (model(x) - y).pow(2).mean();
    optimizer.zero_grad();
    l.backward();
    optimizer.step();
    loss = l.item<double>();
  }
  std::printf("XOR after 300 Adam steps: loss %.5f, outputs", loss);
  for (float v : model(x).to_vector<float>()) std::printf(" %.2f", v);
  const bool all_right = ((model(x) > 0.5) == (y > 0.5)).to_vector<bool>() ==
                         std::vector<bool>{true, true, true, true};

  const std::string path = std::filesystem::temp_directory_path() /
                           ("xor_" + std::to_string(::getpid()) + ".safetensors");
  nn::save(model, path);
  Net reloaded;
  nn::load(reloaded, path);
  std::filesystem::remove(path);
  const bool same = (reloaded(x) == model(x)).to_vector<bool>() == std::vector<bool>(4, true);
  std::printf("\n%s\nsaved to and loaded from %s: %s\n", model.str().c_str(), path.c_str(),
              same ? "the same outputs" : "other outputs");
  return loss < 0.01 && all_right && same ? 0 : 1;
}
