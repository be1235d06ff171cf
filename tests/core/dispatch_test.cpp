#include "test_util.h"

#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <thread>

using namespace dlf;
using dlf::test::check_error;

namespace {
struct Recorder : DispatchObserver {
  std::vector<std::string> names;
  std::vector<Cost> costs;
  void on_op(const OpDef& op, Inputs in, const Attrs& attrs, std::span<const Tensor> out) override {
    names.push_back(op.name);
    costs.push_back(op_cost(op, in, attrs, out));
  }
};
}  // namespace

TEST_CASE("every op passes the observers with its cost") {
  Recorder rec;
  add_observer(&rec);
  Tensor x = zeros({4, 8});
  Tensor t = x.transpose(0, 1).contiguous();
  remove_observer(&rec);
  zeros({1});  // no longer observed
  REQUIRE(rec.names == std::vector<std::string>{"full", "permute", "copy"});
  CHECK(rec.costs[0].bytes_written == 128);
  CHECK(rec.costs[1].bytes_read == 0);  // views move nothing
  CHECK(rec.costs[2].bytes_read == 128);
  CHECK(rec.costs[2].bytes_written == 128);
}

TEST_CASE("the registry knows ops by name and refuses duplicates") {
  CHECK(find_op("copy").name == "copy");
  check_error([] { find_op("no_such_op"); }, {"no_such_op"});
  OpDef dup{.name = "copy",
            .view = [](Inputs in, const Attrs&) { return std::vector<Tensor>{in[0]}; }};
  check_error([&] { register_op(dup); }, {"copy", "twice"});
  CHECK(registered_ops().size() >= 8);
}

TEST_CASE("attrs are typed and printable") {
  Attrs a{{"dim", int64_t{1}}, {"keepdim", true}, {"eps", 1e-5}, {"dims", Shape{0, 2}}};
  CHECK(a.i("dim") == 1);
  CHECK(a.b("keepdim"));
  CHECK(a.ints("dims") == Shape{0, 2});
  CHECK(a.str() == "dim=1, keepdim=true, eps=1e-05, dims=[0, 2]");
  check_error([&] { a.f("dim"); }, {"dim", "type"});
  check_error([&] { a.i("missing"); }, {"missing"});
}

TEST_CASE("meta tensors run inference but no kernel") {
  Tensor m = ones({3, 5}, {.dtype = DType::f64, .device = kMeta});
  Tensor c = m.slice(1, 0, 5, 2).contiguous();
  CHECK(c.shape() == Shape{3, 3});
  CHECK(c.device() == kMeta);
  CHECK(c.storage()->data() == nullptr);
  check_error([&] { m.copy_(ones({3, 5}).to(DType::f64)); }, {"different devices"});
}

TEST_CASE("one thread setting reaches the OpenMP pool of every thread that runs ops") {
  const int before = num_threads();
  set_num_threads(1);
  CHECK(num_threads() == 1);
  CHECK(omp_get_max_threads() == 1);  // oneDNN, Eigen and dlf's loops all size from this
  omp_set_num_threads(3);             // a stray setting that dlf's must win over in new threads
  int seen = 0;
  std::thread rank([&] {  // a thread started later (a rank) picks it up at its first op
    zeros({1});
    seen = omp_get_max_threads();
  });
  rank.join();
  CHECK(seen == 1);
  check_error([] { set_num_threads(0); }, {"from 1 to 1024"});
  check_error([] { set_num_threads(100000); }, {"from 1 to 1024"});
  set_num_threads(before);
}

namespace {

constexpr const char* kSpinChild = "child: the environment is the one the program was given";

// Runs this test binary in a child whose environment is this one without OpenMP's settings,
// plus `given` and OMP_DISPLAY_ENV=verbose (libgomp prints its settings as it starts), running
// kSpinChild when `check_environment`. Returns the spin count libgomp started with ("" when it
// printed none); the child must pass.
std::string child_spin_count(const std::vector<std::string>& given, bool check_environment) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!entry.starts_with("OMP_WAIT_POLICY=") && !entry.starts_with("GOMP_SPINCOUNT=") &&
        !entry.starts_with("OMP_DISPLAY_ENV="))
      env.push_back(entry);
  }
  env.push_back("OMP_DISPLAY_ENV=verbose");
  env.insert(env.end(), given.begin(), given.end());
  std::vector<std::string> args = {"test_core", std::string("--test-case=") + kSpinChild};
  if (check_environment) args.push_back("--no-skip");
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  int out[2];
  REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, pointers(args).data(),
                                  pointers(env).data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  REQUIRE(spawned == 0);
  std::string printed;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) printed.append(buffer, n);
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("the child printed: ", printed);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t at = printed.find(key);
  if (at == std::string::npos) return "";
  return printed.substr(at + key.size(), printed.find('\'', at + key.size()) - at - key.size());
}

}  // namespace

TEST_CASE("a program linking libdlf starts libgomp with a short idle spin, unless it chose one") {
  // libgomp's default is 300000 rounds, which starve another busy process on the same cores.
  CHECK(child_spin_count({}, true) == "10000");
  CHECK(child_spin_count({"OMP_WAIT_POLICY=PASSIVE"}, false) == "0");
  CHECK(child_spin_count({"GOMP_SPINCOUNT=5"}, false) == "5");
}

TEST_CASE(kSpinChild* doctest::skip()) {
  // libgomp read the setting; the environment goes on without it.
  CHECK(std::getenv("GOMP_SPINCOUNT") == nullptr);
}

TEST_CASE("a profile's outermost totals count a composite op's inner work once") {
  // An op whose kernel dispatches matmul twice and whose cost is those two matmuls' FLOPs.
  static const OpDef& twice = register_op({
      .name = "test_matmul_twice",
      .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
        return {{{in[0].shape()[0], in[1].shape()[1]}, in[0].dtype()}};
      },
      .kernel = [](Inputs in, const Attrs&,
                   Outputs out) { out[0].copy_(matmul(matmul(in[0], in[1]), in[2])); },
      .cost = [](Inputs, const Attrs&,
                 std::span<const Tensor>) { return Cost{.flops = 2.0 * 2 * 4 * 8 * 8}; },
  });
  const Tensor a = ones({4, 8}), b = ones({8, 8});
  OpProfile profile;
  const Tensor y = dispatch1(twice, {a, b, b});
  CHECK(profile.rows().at("matmul").calls == 2);
  CHECK(profile.rows().at("matmul").flops == 2 * 2 * 4 * 8 * 8);
  CHECK(profile.outermost().calls == 1);
  CHECK(profile.outermost().flops == 2 * 2 * 4 * 8 * 8);  // not 4 matmuls' worth
  CHECK(sum(y).item<float>() == 4 * 8 * 64);
  // Self time leaves the inner ops out: every moment is counted once over the rows' self times.
  const OpProfile::Row& outer = profile.rows().at("test_matmul_twice");
  CHECK(outer.self_seconds < outer.seconds);
  double self = 0;
  for (const auto& [name, row] : profile.rows()) self += row.self_seconds;
  CHECK(self == doctest::Approx(profile.outermost().seconds).epsilon(1e-9));
}

TEST_CASE("a profile groups by input shapes on request and keeps a sim device's clock") {
  OpProfile by_shape({.by_shape = true});
  (void)matmul(ones({2, 3}), ones({3, 4}));
  (void)matmul(ones({5, 3}), ones({3, 4}));
  CHECK(by_shape.rows().count("matmul [2, 3] [3, 4]") == 1);
  CHECK(by_shape.rows().count("matmul [5, 3] [3, 4]") == 1);
  // A multi-tensor op's row names its first shapes and its input count, and prints whole.
  (void)sum_squares(std::vector<Tensor>(40, ones({7, 9})));
  const std::string many = "sum_squares [7, 9] [7, 9] [7, 9] [7, 9] ... (40 inputs)";
  CHECK(by_shape.rows().count(many) == 1);
  std::ostringstream rows;
  by_shape.print(rows, Roofline{.flops_per_s = 1e11, .bytes_per_s = 1e10});
  const std::string text = rows.str();
  const auto row = text.find(many);
  REQUIRE(row != std::string::npos);
  CHECK(text.substr(row, text.find('\n', row) - row).find("memory") != std::string::npos);

  const Device sim{DeviceType::sim, 0};
  sim::configure(sim, sim_preset("a100-40gb"));
  const Tensor a = ones({64, 64}, {.device = sim});
  const double before = sim::timeline(sim).now();
  OpProfile profile;
  (void)matmul(a, a);
  const double charged = sim::timeline(sim).now() - before;
  CHECK(charged > 0);
  // the simulated time, not the host's
  CHECK(profile.outermost().seconds == doctest::Approx(charged).epsilon(1e-9));
  CHECK(profile.rows().at("matmul").self_seconds == doctest::Approx(charged).epsilon(1e-9));
  // A roofline table names the bound: a 64^3 matmul on an A100 is memory-bound.
  std::ostringstream table;
  profile.print(table, Roofline{.flops_per_s = 19.5e12, .bytes_per_s = 1.555e12});
  CHECK(table.str().find("memory") != std::string::npos);
}
