// nn::save and nn::load: one module's state in one file, HDF5 or safetensors.
#include "test_util.h"

#include <dlf/nn/checkpoint.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/save.h>

#include <unistd.h>

#include <filesystem>

using namespace dlf;
using dlf::test::bitwise_equal;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

// Two layers, a buffer of another dtype and a weight tied to the first layer's.
struct Net : nn::Module {
  explicit Net(int64_t hidden = 4) : fc2(2, hidden) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  nn::Linear fc1{3, 2};
  nn::Linear fc2;
  Tensor steps = register_buffer("steps", from_vector<int64_t>({7, -1}, {2}));
  Tensor head = register_parameter("head", fc1.weight);  // tied
};

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("dlf_save_test_" + std::to_string(::getpid()));
  Scratch() { fs::remove_all(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

void check_same_state(const nn::Module& a, const nn::Module& b) {
  const nn::NamedTensors sa = a.state_dict(), sb = b.state_dict();
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    INFO(sa[i].first);
    CHECK(sa[i].first == sb[i].first);
    CHECK(bitwise_equal(sa[i].second, sb[i].second));
  }
}

}  // namespace

TEST_CASE("nn::save and nn::load: one module in one file, HDF5 or safetensors, bit for bit") {
  Scratch scratch;
  manual_seed(1);
  Net net;
  for (const std::string name : {"net.h5", "net.hdf5", "net.safetensors"}) {
    INFO(name);
    const std::string path = scratch.file(name);
    nn::save(net, path);
    manual_seed(2);
    Net fresh;
    CHECK(!bitwise_equal(fresh.fc1.weight, net.fc1.weight));
    nn::load(fresh, path);
    check_same_state(fresh, net);
    CHECK(fresh.head.is_same(fresh.fc1.weight));  // still tied
  }
  // dlf train's checkpoint file loads too (its model tensors).
  nn::save_checkpoint(scratch.file("run"), {.model = net.state_dict(), .step = 3});
  Net resumed;
  nn::load(resumed, scratch.file("run/checkpoint.h5"));
  check_same_state(resumed, net);
}

TEST_CASE("nn::load refuses a missing, unexpected or mis-shaped tensor by name, changing nothing") {
  Scratch scratch;
  Net net;
  const std::string path = scratch.file("net.h5");
  nn::save(net, path);
  struct Smaller : nn::Module {
    nn::Linear fc1{3, 2};
    Smaller() { register_module("fc1", fc1); }
  };
  struct Larger : Net {
    Tensor extra = register_parameter("extra", zeros({1}));
  };
  Smaller smaller;
  Larger larger;
  Net wider(5);
  const std::vector<float> before = wider.fc1.weight.to_vector<float>();
  check_error([&] { nn::load(smaller, path); }, {path, "unexpected tensor 'head'"});
  check_error([&] { nn::load(larger, path); }, {path, "missing tensor 'extra'"});
  check_error([&] { nn::load(wider, path); }, {path, "'fc2.weight'", "[4, 2]", "[5, 2]"});
  CHECK(wider.fc1.weight.to_vector<float>() == before);

  check_error([&] { nn::load(net, scratch.file("none.h5")); }, {"no checkpoint", "none.h5"});
  check_error([&] { nn::load(net, scratch.file("none.safetensors")); }, {"none.safetensors"});
  check_error([&] { nn::save(net, scratch.file("net.pt")); }, {"net.pt", ".h5", ".safetensors"});
  check_error([&] { nn::load(net, scratch.file("net.pt")); }, {"net.pt", ".h5", ".safetensors"});
}

TEST_CASE("nn::save replaces the file atomically: a failed save keeps the previous one") {
  Scratch scratch;
  manual_seed(3);
  Net net;
  struct Unstorable : nn::Module {  // a name HDF5 cannot hold, met after other tensors
    Tensor w = register_parameter("w", ones({2}));
    Tensor bad = register_parameter("a/b", ones({2}));
  };
  for (const std::string name : {"net.h5", "net.safetensors"}) {
    INFO(name);
    const std::string path = scratch.file(name);
    nn::save(net, path);
    if (name == "net.h5") {
      check_error([&] { nn::save(Unstorable(), path); }, {"'a/b'", "cannot be stored"});
    } else {
      test::with_file_size_limit(4096, [&] {
        check_error([&] { nn::save(Net(2000), path); }, {"the previous safetensors file"});
      });
    }
    Net back;
    nn::load(back, path);
    check_same_state(back, net);
    int files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(scratch.dir)) ++files;
    CHECK(files == 1);  // no temporary left behind
    fs::remove(path);
  }
}
