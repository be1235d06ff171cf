// The MPI backend. ctest runs this binary under mpirun (2 and 4 processes): every process runs
// every test case, each case one run_mpi_rank, and checks its own rank's results against the
// sequential rank-order references (every rank can make every rank's input).
#include <dlf/parallel/mpi.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <numeric>

#include "parallel/collective_reference.h"
#include "test_util.h"

namespace dlf {
namespace {

using parallel::Communicator;
using parallel::ReduceOp;
using test::input_of;
using test::kNumel;
using test::reference;
using test::require_equal;

// Runs `fn` as this process's rank. A rank that fails unexpectedly (a failed REQUIRE, an
// exception) ends the job: its peers would wait for it in their next collective.
void on_mpi(const std::function<void(Communicator&)>& fn, Device device = kCPU) {
  try {
    parallel::run_mpi_rank(device, fn);
  } catch (...) {
    std::cout.flush();  // doctest's report of the failure
    std::fprintf(stderr, "rank %d failed; ending the job\n", parallel::mpi_world_rank());
    parallel::mpi_abort(1);
  }
}

std::vector<double> concat_inputs(int n, DType dtype) {
  std::vector<double> all;
  for (int r = 0; r < n; ++r) {
    const std::vector<double> v = input_of(r, dtype).to_vector<double>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

std::vector<double> first(const std::vector<double>& v, int64_t count, int64_t from = 0) {
  return std::vector<double>(v.begin() + from, v.begin() + from + count);
}

// Rank 1 fails while rank 0 waits for it in an allreduce.
void fail_on_rank_1(Communicator& world) {
  if (world.rank() == 1) throw Error("boom");
  Tensor t = zeros({3});
  world.allreduce(t);
}

const DType kReducible[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::max};

}  // namespace

TEST_CASE("the world is the job's processes") {
  CHECK(parallel::launched_by_mpi());
  on_mpi([](Communicator& world) {
    CHECK(world.size() == parallel::mpi_world_size());
    CHECK(world.rank() == parallel::mpi_world_rank());
    CHECK(world.name() == "world");
    CHECK(world.device() == kCPU);
  });
}

TEST_CASE("allreduce: sum, avg and max equal the rank-order reference bit for bit") {
  on_mpi([](Communicator& world) {
    const int n = world.size(), r = world.rank();
    for (DType dtype : kReducible) {
      for (ReduceOp op : kOps) {
        if (op == ReduceOp::avg && !is_floating(dtype)) continue;
        CAPTURE(dtype_name(dtype));
        CAPTURE(int(op));
        const std::vector<double> expected = reference(n, dtype, op);
        Tensor t = input_of(r, dtype);  // 1001 elements: parts of different sizes
        world.allreduce(t, op);
        require_equal(t, expected);
        Tensor few = input_of(r, dtype).narrow(0, 0, 3).clone();  // some ranks' parts empty
        world.allreduce(few, op);
        require_equal(few, first(expected, 3));
      }
    }
  });
}

TEST_CASE("allgather, reduce_scatter and broadcast against sequential references") {
  on_mpi([](Communicator& world) {
    const int n = world.size(), r = world.rank();
    for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8}) {
      CAPTURE(dtype_name(dtype));
      Tensor gathered = world.allgather(input_of(r, dtype).reshape({kNumel, 1}));
      CHECK(shape_str(gathered.shape()) == shape_str({kNumel * n, 1}));
      require_equal(gathered, concat_inputs(n, dtype));

      Tensor b = input_of(r, dtype);
      world.broadcast(b, n - 1);
      require_equal(b, input_of(n - 1, dtype).to_vector<double>());

      if (dtype == DType::b8) continue;  // bool tensors cannot be reduced
      for (ReduceOp op : kOps) {
        if (op == ReduceOp::avg && !is_floating(dtype)) continue;
        CAPTURE(int(op));
        Tensor whole = input_of(r, dtype).narrow(0, 0, 10 * n).reshape({n, 10});
        Tensor mine = world.reduce_scatter(whole, op);
        CHECK(shape_str(mine.shape()) == shape_str({1, 10}));
        require_equal(mine, first(reference(n, dtype, op), 10, 10 * r));
      }
    }
  });
}

TEST_CASE("send/recv around a ring arrive in order; a message that does not fit is refused") {
  on_mpi([](Communicator& world) {
    const int n = world.size(), r = world.rank();
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    // Every rank sends before it receives: send returns once the data is copied out, even for
    // a message too large for MPI to send eagerly (4 MiB).
    world.send(input_of(r, DType::f64), next);
    world.send(full({2}, r, {.dtype = DType::f64}), next);
    world.send(full({1 << 20}, r), next);
    require_equal(world.recv({kNumel}, DType::f64, prev),
                  input_of(prev, DType::f64).to_vector<double>());
    CHECK(world.recv({2}, DType::f64, prev).to_vector<double>() ==
          std::vector<double>{double(prev), double(prev)});
    CHECK(world.recv({1 << 20}, DType::f32, prev).to_vector<double>() ==
          std::vector<double>(1 << 20, prev));

    world.send(zeros({2}), next);
    world.send(full({3}, 7), next);
    test::check_error([&] { (void)world.recv({3}, DType::f32, prev); },
                      {"recv on group 'world': rank " + std::to_string(prev) +
                       " sent [2] f32, this rank expects [3] f32"});
    // the refused message is gone: the next one comes next
    CHECK(world.recv({3}, DType::f32, prev).to_vector<double>() == std::vector<double>{7, 7, 7});
    world.barrier();
  });
}

TEST_CASE("split orders each group by key; collectives run within the group") {
  on_mpi([](Communicator& world) {
    const int n = world.size(), r = world.rank();
    // Odd and even ranks, in reverse order of rank: group rank 0 is the highest world rank.
    std::unique_ptr<Communicator> group = world.split(r % 2, -r, "parity");
    std::vector<int> members;
    for (int q = n - 1; q >= 0; --q) {
      if (q % 2 == r % 2) members.push_back(q);
    }
    const int index = int(std::find(members.begin(), members.end(), r) - members.begin());
    CHECK(group->name() == "parity");
    CHECK(group->size() == int(members.size()));
    CHECK(group->rank() == index);

    Tensor t = input_of(r, DType::f32);
    group->allreduce(t);
    require_equal(t, reference(members, DType::f32, ReduceOp::sum));  // added in group order
    std::vector<double> ranks_in_order(members.begin(), members.end());
    require_equal(group->allgather(full({1}, r, {.dtype = DType::f64})), ranks_in_order);
    if (group->size() > 1) {  // a ring within the group, by group rank
      const int size = group->size();
      group->send(full({1}, r), (index + 1) % size);
      const Tensor from = group->recv({1}, DType::f32, (index + size - 1) % size);
      CHECK(from.item<double>() == members[(index + size - 1) % size]);
    }
  });
}

TEST_CASE("ranks that disagree on a collective's tensor all get the same dlf::Error") {
  on_mpi([](Communicator& world) {
    const int n = world.size(), r = world.rank();
    const std::string last = std::to_string(n - 1);
    Tensor t = zeros({r == n - 1 ? 4 : 5});
    test::check_error([&] { world.allreduce(t); },
                      {"allreduce on group 'world': ranks disagree",
                       "rank 0 has [5] f32, rank " + last + " has [4] f32"});
    test::check_error(
        [&] { world.allgather(zeros({3}, {.dtype = r == n - 1 ? DType::f64 : DType::f32})); },
        {"allgather on group 'world': ranks disagree",
         "rank 0 has [3] f32, rank " + last + " has [3] f64"});
    test::check_error([&] { world.reduce_scatter(zeros({n + 1})); },
                      {"reduce_scatter on group 'world'",
                       "must divide into " + std::to_string(n) + " equal parts"});
    Tensor ints = zeros({3}, {.dtype = DType::i64});
    test::check_error([&] { world.allreduce(ints, ReduceOp::avg); },
                      {"avg needs a floating dtype"});
    // Every rank threw at the same point: they are still in step.
    Tensor after = ones({3});
    world.allreduce(after);
    CHECK(after.to_vector<double>() == std::vector<double>(3, n));
  });
}

TEST_CASE("on sim devices a collective starts at the group's latest ready time") {
  const int n = parallel::mpi_world_size(), rank = parallel::mpi_world_rank();
  SimSpec spec = sim_preset("h100-80gb");
  spec.interconnect = {100e9, 5e-6};
  const Device dev{DeviceType::sim, rank};  // rank i on sim:i, as run_ranks places them
  sim::configure(dev, spec);
  sim::reset(dev);
  on_mpi(
      [&](Communicator& world) {
        // Rank r's data is ready at r ms: the collective starts when the last rank is ready.
        sim::timeline(dev).run(sim::Stream::compute, 1e-3 * world.rank());
        Tensor t = ones({1 << 20}, {.device = dev});  // 4 MiB
        const double ready = sim::timeline(dev).now(sim::Stream::compute);
        const parallel::Work work = world.allreduce(t, ReduceOp::sum, /*async=*/true);
        CHECK(sim::timeline(dev).now(sim::Stream::compute) == ready);  // async: no wait
        world.wait(work);
        CHECK(t.to_vector<float>()[12345] == float(n));

        const double fill =
            sim::op_seconds(spec, 0, 4.0 * (1 << 20), MathPrecision::f32, OpClass::elementwise);
        CHECK(work.start.time == 1e-3 * (n - 1) + fill);  // the last rank's ready time
        const double expected =
            1e-3 * (n - 1) + fill + 2.0 * (n - 1) * (5e-6 + 4.0 * (1 << 20) / n / 100e9);
        CHECK(work.done.time == doctest::Approx(expected).epsilon(1e-9));
        CHECK(sim::timeline(dev).now(sim::Stream::comm) == work.done.time);
        CHECK(sim::timeline(dev).now(sim::Stream::compute) == work.done.time);
      },
      dev);
}

TEST_CASE("on meta devices collectives move no data but run the clock") {
  const int rank = parallel::mpi_world_rank();
  const Device dev{DeviceType::meta, rank};
  SimSpec spec = sim_preset("h100-80gb");
  spec.interconnect = {100e9, 5e-6};
  sim::configure(dev, spec);
  sim::reset(dev);
  on_mpi(
      [&](Communicator& world) {
        const int n = world.size();
        sim::Timeline& clock = sim::timeline(dev);
        clock.run(sim::Stream::compute, 1e-3 * world.rank());
        Tensor t = Tensor::empty({1 << 20}, DType::f32, dev);
        const parallel::Work work = world.allreduce(t);
        CHECK(work.start.time == 1e-3 * (n - 1));
        std::vector<int> devices(n);  // rank i on meta:i
        std::iota(devices.begin(), devices.end(), 0);
        CHECK(work.done.time ==
              work.start.time + sim::collective_seconds(spec, sim::Collective::allreduce,
                                                        4.0 * (1 << 20), devices));
        // A message leaves when the sender is ready and arrives over the link of the pair.
        if (world.rank() < 2) {
          const int pair[] = {0, 1};
          const double message =
              sim::collective_seconds(spec, sim::Collective::send_recv, 4096, pair);
          const double sent = work.done.time + 2e-3;
          if (world.rank() == 0) {
            clock.run(sim::Stream::compute, 2e-3);
            world.send(Tensor::empty({1024}, DType::f32, dev), 1);
          } else {
            (void)world.recv({1024}, DType::f32, 0);
          }
          CHECK(clock.now(sim::Stream::comm) == sent + message);
        }
      },
      dev);
}

// Each run alone (ctest does: they end the job).
TEST_CASE("a failing rank ends the job" * doctest::skip()) {
  try {
    parallel::run_mpi_rank(kCPU, fail_on_rank_1);
  } catch (const Error& e) {  // the caller prints the error; mpi_abort ends both processes
    std::fprintf(stderr, "rank %d: %s\n", parallel::mpi_world_rank(), e.what());
    parallel::mpi_abort(3);
  }
}

// Rank 1 stops itself (SIGSTOP, as a frozen process would); rank 0's allreduce gives up at the
// watchdog's deadline naming rank 1, and mpi_abort ends the job, the stopped process included.
TEST_CASE("a stopped rank is named by the watchdog" * doctest::skip()) {
  parallel::set_collective_timeout(1);
  try {
    parallel::run_mpi_rank(kCPU, [](parallel::Communicator& world) {
      Tensor t = zeros({16});
      world.allreduce(t);  // both are here once
      if (world.rank() == 1) std::raise(SIGSTOP);
      world.allreduce(t);
    });
  } catch (const Error& e) {
    const std::string msg = e.what();
    std::fprintf(stderr, "rank %d: %s\n", parallel::mpi_world_rank(), e.what());
    const bool named =
        msg.find("allreduce") != std::string::npos && msg.find("for rank 1") != std::string::npos;
    parallel::mpi_abort(named ? 4 : 5);
  }
}

TEST_CASE("a failing rank that exits without mpi_abort ends the job at exit" * doctest::skip()) {
  parallel::run_mpi_rank(kCPU, fail_on_rank_1);  // doctest catches the error; main returns
}

}  // namespace dlf
