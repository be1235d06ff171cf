#include <cstring>
#include <mutex>
#include <thread>

#include <dlf/core/op_class_times.h>

#include "collective_reference.h"
#include "test_util.h"

namespace dlf {
namespace {

using parallel::Communicator;
using parallel::ReduceOp;

using test::input_of;
using test::kNumel;
using test::reference;
using test::require_equal;

void on_ranks(int n, const std::function<void(Communicator&)>& fn) {
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), fn);
}

const int kWorldSizes[] = {1, 2, 3, 4, 5, 8};

}  // namespace

TEST_CASE("allreduce: sum, avg and max equal the rank-order reference exactly") {
  for (int n : kWorldSizes) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i64}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
        if (op == ReduceOp::avg && dtype == DType::i64) continue;
        CAPTURE(n);
        CAPTURE(dtype_name(dtype));
        CAPTURE(int(op));
        const std::vector<double> expected = reference(n, dtype, op);
        std::vector<Tensor> results(n);
        on_ranks(n, [&](Communicator& world) {
          Tensor t = input_of(world.rank(), dtype);
          world.allreduce(t, op);
          results[world.rank()] = t;
        });
        for (const Tensor& t : results) require_equal(t, expected);
      }
    }
  }
}

TEST_CASE("allgather, reduce_scatter and broadcast against sequential references") {
  for (int n : kWorldSizes) {
    CAPTURE(n);
    std::vector<Tensor> gathered(n), scattered(n), broadcast(n);
    on_ranks(n, [&](Communicator& world) {
      const int r = world.rank();
      Tensor mine = input_of(r, DType::f32).reshape({kNumel, 1});
      gathered[r] = world.allgather(mine);
      Tensor whole = input_of(r, DType::f32).narrow(0, 0, 10 * n).reshape({n, 10});
      scattered[r] = world.reduce_scatter(whole);
      Tensor b = input_of(r, DType::f32);
      world.broadcast(b, n - 1);
      broadcast[r] = b;
    });
    std::vector<double> all;
    for (int r = 0; r < n; ++r) {
      auto v = input_of(r, DType::f32).to_vector<double>();
      all.insert(all.end(), v.begin(), v.end());
    }
    const std::vector<double> sums = reference(n, DType::f32, ReduceOp::sum);
    for (int r = 0; r < n; ++r) {
      CHECK(shape_str(gathered[r].shape()) == shape_str({kNumel * n, 1}));
      require_equal(gathered[r], all);
      CHECK(shape_str(scattered[r].shape()) == shape_str({1, 10}));
      require_equal(scattered[r],
                    std::vector<double>(sums.begin() + 10 * r, sums.begin() + 10 * r + 10));
      require_equal(broadcast[r], input_of(n - 1, DType::f32).to_vector<double>());
    }
  }
}

TEST_CASE("send/recv around a ring, barrier, and split into groups") {
  for (int n : {2, 3, 5, 8}) {
    CAPTURE(n);
    std::vector<Tensor> received(n), group_sums(n);
    std::vector<int> group_ranks(n), group_sizes(n);
    on_ranks(n, [&](Communicator& world) {
      const int r = world.rank();
      world.send(input_of(r, DType::f64), (r + 1) % n);
      world.send(full({2}, r, {.dtype = DType::f64}), (r + 1) % n);  // messages keep their order
      const Tensor in = world.recv({kNumel}, DType::f64, (r + n - 1) % n);
      const Tensor second = world.recv({2}, DType::f64, (r + n - 1) % n);
      CHECK(second.to_vector<double>()[0] == (r + n - 1) % n);
      received[r] = in;
      world.barrier();
      // Odd and even ranks, in reverse order of rank.
      auto group = world.split(r % 2, -r, "parity");
      group_ranks[r] = group->rank();
      group_sizes[r] = group->size();
      Tensor t = full({1}, r, {.dtype = DType::f64});
      group->allreduce(t);
      group_sums[r] = t;
    });
    for (int r = 0; r < n; ++r) {
      require_equal(received[r], input_of((r + n - 1) % n, DType::f64).to_vector<double>());
      const int same = (n - r % 2 + 1) / 2;  // ranks with r's parity
      CHECK(group_sizes[r] == same);
      double sum = 0;
      int higher = 0;
      for (int q = r % 2; q < n; q += 2) {
        sum += q;
        higher += q > r;
      }
      CHECK(group_ranks[r] == higher);
      CHECK(group_sums[r].item<double>() == sum);
    }
  }
}

TEST_CASE("collectives refuse mismatched tensors, and a failing rank stops the others") {
  test::check_error(
      [] {
        on_ranks(3, [](Communicator& world) {
          Tensor t = zeros({world.rank() == 2 ? 4 : 5});
          world.allreduce(t);
        });
      },
      {"allreduce on group 'world': ranks disagree", "rank 0 has [5] f32, rank 2 has [4] f32"});
  test::check_error(
      [] {
        on_ranks(4, [](Communicator& world) {
          if (world.rank() == 1) throw Error("boom");
          Tensor t = zeros({3});
          world.allreduce(t);
        });
      },
      {"rank 1: boom"});
  test::check_error(
      [] {
        on_ranks(2, [](Communicator& world) {
          Tensor t = zeros({3}, {.dtype = DType::i64});
          world.allreduce(t, ReduceOp::avg);
        });
      },
      {"avg needs a floating dtype"});
}

TEST_CASE("collectives on sim devices run on the comm stream for their alpha-beta time") {
  const int n = 4;
  SimSpec spec = sim_preset("h100-80gb");
  spec.interconnect = {100e9, 5e-6};
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, n);
  for (Device d : devices) {
    sim::configure(d, spec);
    sim::reset(d);
  }
  std::vector<double> comm_end(n), compute_end(n);
  std::vector<parallel::Work> works(n);
  parallel::run_ranks(devices, [&](Communicator& world) {
    const Device dev = world.device();
    // Rank r's data is ready at r ms: the collective starts when the last rank is ready.
    sim::timeline(dev).run(sim::Stream::compute, 1e-3 * world.rank());
    Tensor t = ones({1 << 20}, {.device = dev});  // 4 MiB
    const double ready = sim::timeline(dev).now(sim::Stream::compute);
    works[world.rank()] = world.allreduce(t, ReduceOp::sum, /*async=*/true);
    CHECK(sim::timeline(dev).now(sim::Stream::compute) == ready);  // async: no wait
    world.wait(works[world.rank()]);
    comm_end[world.rank()] = sim::timeline(dev).now(sim::Stream::comm);
    compute_end[world.rank()] = sim::timeline(dev).now(sim::Stream::compute);
    CHECK(t.to_vector<float>()[12345] == 4.0f);
  });
  const double fill =
      sim::op_seconds(spec, 0, 4.0 * (1 << 20), MathPrecision::f32, OpClass::elementwise);
  const double expected = 3e-3 + fill + 2.0 * 3 * (5e-6 + 4.0 * (1 << 20) / 4 / 100e9);
  for (int r = 0; r < n; ++r) {
    CHECK(comm_end[r] == doctest::Approx(expected).epsilon(1e-9));
    CHECK(compute_end[r] == comm_end[r]);
  }
}

TEST_CASE("a collective's bytes count towards the next kernel's cold start") {
  // allreduce_ reads and writes its buffer: two tensors' bytes of the eight after which a
  // kernel starts fully cold, on a sim device as in `dlf profile --compare` on the cpu.
  const int64_t numel = 1024;
  SimSpec spec = sim_preset("h100-80gb");
  spec.cold_bytes = 8 * 4.0 * numel;
  spec.efficiency[size_t(OpClass::elementwise)].cold_overhead = 1e-5;
  const auto warm_add_reduce_add = [&](Communicator& world) {
    const Tensor t = ones({numel}, {.device = world.device()});
    (void)(t + t);
    (void)(t + t);  // right after itself: warm
    Tensor sum = ones({numel}, {.device = world.device()});
    world.allreduce(sum);
    (void)(t + t);
  };
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, 2);
  for (Device d : devices) {
    sim::configure(d, spec);
    sim::reset(d);
  }
  std::vector<double> shares(2);
  parallel::run_ranks(devices, [&](Communicator& world) {
    warm_add_reduce_add(world);
    shares[size_t(world.rank())] = sim::cold_starts(world.device()).last_share();
  });
  for (double share : shares) CHECK(share == doctest::Approx(0.25 + 0.125));  // and ones'
  on_ranks(2, [&](Communicator& world) {
    OpClassTimes compare(spec, /*keep_ops=*/true);
    add_observer(&compare);
    warm_add_reduce_add(world);
    remove_observer(&compare);
    CHECK(compare.ops().back().cold == doctest::Approx(0.25 + 0.125));
  });
}

TEST_CASE("host_max: every rank gets the largest vote, on the host") {
  for (int n : kWorldSizes) {
    CAPTURE(n);
    std::vector<uint64_t> got(n);
    on_ranks(n, [&](Communicator& world) {
      got[world.rank()] = world.host_max(uint64_t(world.rank() == n / 2 ? 1000 + n : world.rank()));
    });
    for (uint64_t v : got) CHECK(v == uint64_t(1000 + n));
  }
}

TEST_CASE("watchdog: a rank that never comes to a collective is named, not waited for forever") {
  parallel::set_collective_timeout(0.3);
  std::vector<std::string> errors(3);
  try {
    on_ranks(3, [&](Communicator& world) {
      Tensor t = zeros({256});
      if (world.rank() == 2) {  // hangs far past the timeout
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return;
      }
      world.allreduce(t);
    });
    FAIL("expected the watchdog's dlf::Error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    INFO(msg);
    for (const char* part : {"collective watchdog", "allreduce", "1.00 KiB", "'world'", "3 ranks",
                             "for rank 2", "0.3 s", "DLF_COLLECTIVE_TIMEOUT"})
      CHECK(msg.find(part) != std::string::npos);
  }
  // A recv whose sender never sends names the sender.
  try {
    on_ranks(2, [&](Communicator& world) {
      if (world.rank() == 0) (void)world.recv({4}, DType::f32, 1);
    });
    FAIL("expected the watchdog's dlf::Error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("recv") != std::string::npos);
    CHECK(std::string(e.what()).find("for rank 1") != std::string::npos);
  }
  parallel::set_collective_timeout(600);
}

TEST_CASE("one rank runs on the calling thread, with its thread count; more run on threads") {
  // A thread of its own would open a second OpenMP team beside the caller's (more threads than
  // CPUs: every parallel region of the rank then waits on a futex wake).
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  int threads = 0;
  on_ranks(1, [&](Communicator& world) {
    ran_on = std::this_thread::get_id();
    threads = num_threads();
    CHECK(world.size() == 1);
  });
  CHECK(ran_on == caller);
  CHECK(threads == num_threads());
  std::mutex mutex;
  std::vector<std::thread::id> ids;
  on_ranks(2, [&](Communicator&) {
    std::lock_guard lock(mutex);
    ids.push_back(std::this_thread::get_id());
  });
  REQUIRE(ids.size() == 2);
  CHECK(ids[0] != caller);
  CHECK(ids[1] != caller);
  CHECK(ids[0] != ids[1]);
  // It starts from a fresh default generator, as a thread of its own would, and the caller
  // gets its own back.
  default_generator().manual_seed(77);
  (void)rand({3});
  const uint64_t offset = default_generator().offset();
  on_ranks(1, [](Communicator&) {
    CHECK(default_generator().seed() == 0);
    CHECK(default_generator().offset() == 0);
    (void)rand({5});
  });
  CHECK(default_generator().seed() == 77);
  CHECK(default_generator().offset() == offset);
  // a failing single rank's error reaches the caller as it was
  test::check_error([] { on_ranks(1, [](Communicator&) { throw Error("alone"); }); }, {"alone"});
}

}  // namespace dlf
