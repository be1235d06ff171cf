#include "test_util.h"

#include <omp.h>

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
  check_error([] { set_num_threads(0); }, {"positive"});
  set_num_threads(before);
}
