#include <dlf/parallel/mesh.h>
#include <dlf/parallel/tensor_parallel.h>

#include <mutex>

#include "test_util.h"

namespace dlf {
namespace {

using parallel::Communicator;

constexpr int64_t kB = 3, kC = 8, kF = 16;

struct Full {
  Tensor x, g, w1, b1, w2, b2;  // MLP y = gelu(x W1ᵀ + b1) W2ᵀ + b2, upstream gradient g
};

Full make_full() {
  Generator gen(5);
  auto r = [&](const Shape& s) { return randn(s, {.dtype = DType::f64}, &gen); };
  return {r({kB, kC}), r({kB, kC}), r({kF, kC}), r({kF}), r({kC, kF}), r({kC})};
}

}  // namespace

TEST_CASE("mesh: dp x tp x pp groups, tp innermost") {
  const parallel::Layout layout{.dp = 2, .tp = 2, .pp = 2};
  std::vector<std::array<int, 3>> coords(8);
  std::vector<std::array<double, 3>> sums(8);
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 8), [&](Communicator& world) {
    parallel::Mesh mesh(world, layout);
    coords[world.rank()] = {mesh.dp_rank(), mesh.tp_rank(), mesh.pp_rank()};
    std::array<Communicator*, 3> groups = {&mesh.dp(), &mesh.tp(), &mesh.pp()};
    for (int a = 0; a < 3; ++a) {
      Tensor t = full({1}, world.rank(), {.dtype = DType::f64});
      groups[a]->allreduce(t);
      sums[world.rank()][a] = t.item<double>();
    }
  });
  for (int r = 0; r < 8; ++r) {
    CAPTURE(r);
    CHECK(coords[r][1] == r % 2);                    // tp
    CHECK(coords[r][2] == r / 2 % 2);                // pp
    CHECK(coords[r][0] == r / 4);                    // dp
    CHECK(sums[r][1] == (r - r % 2) * 2 + 1);        // tp partner: r ^ 1
    CHECK(sums[r][2] == double(r) + double(r ^ 2));  // pp partner: r ^ 2
    CHECK(sums[r][0] == double(r) + double(r ^ 4));  // dp partner: r ^ 4
  }
  test::check_error(
      [] {
        parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 4), [](Communicator& world) {
          parallel::Mesh mesh(world, {.dp = 1, .tp = 3, .pp = 1});
        });
      },
      {"tp 3 x pp 1 = 3 ranks, but the world has 4"});
}

TEST_CASE("tensor parallel: column then row parallel Linear equal the whole MLP, with gradients") {
  const Full f = make_full();
  // The reference on one device, in f64.
  Tensor x = f.x.detach().requires_grad_();
  Tensor w1 = f.w1.detach().requires_grad_(), b1 = f.b1.detach().requires_grad_();
  Tensor w2 = f.w2.detach().requires_grad_(), b2 = f.b2.detach().requires_grad_();
  const Tensor y = linear(gelu(linear(x, w1, b1)), w2, b2);
  y.backward(f.g);
  for (int n : {1, 2, 4}) {  // one rank: the row-parallel layer is a Linear with its bias fused
    CAPTURE(n);
    std::mutex mutex;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](Communicator& tp) {
      const int r = tp.rank();
      const int64_t k = kF / n;
      parallel::ColumnParallelLinear fc(kC, kF, tp, {.dtype = DType::f64});
      parallel::RowParallelLinear proj(kF, kC, tp, {.dtype = DType::f64});
      {
        autograd::NoGradGuard no_grad;
        fc.weight.copy_(f.w1.narrow(0, r * k, k));
        fc.bias.copy_(f.b1.narrow(0, r * k, k));
        proj.weight.copy_(f.w2.narrow(1, r * k, k));
        proj.bias.copy_(f.b2);
      }
      Tensor xr = f.x.detach().requires_grad_();
      const Tensor yr = proj.forward(gelu(fc.forward(xr)));
      yr.backward(f.g);
      std::lock_guard lock(mutex);
      test::check_close(yr, y, 1e-12, 1e-12);
      test::check_close(xr.grad(), x.grad(), 1e-12, 1e-12);  // f's allreduce in backward
      test::check_close(fc.weight.grad(), w1.grad().narrow(0, r * k, k), 1e-12, 1e-12);
      test::check_close(fc.bias.grad(), b1.grad().narrow(0, r * k, k), 1e-12, 1e-12);
      test::check_close(proj.weight.grad(), w2.grad().narrow(1, r * k, k), 1e-12, 1e-12);
      test::check_close(proj.bias.grad(), b2.grad(), 1e-12, 1e-12);
    });
  }
}

TEST_CASE("tensor parallel: under autocast a row-parallel output is bf16, over one rank or two") {
  for (int n : {1, 2}) {
    CAPTURE(n);
    std::mutex mutex;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](Communicator& tp) {
      parallel::RowParallelLinear proj(kF, kC, tp);
      AutocastGuard bf16(DType::bf16);
      const Tensor y = proj.forward(randn({kB, kF / n}));
      std::lock_guard lock(mutex);
      CHECK(y.dtype() == DType::bf16);  // as nn::Linear gives it, bias and all
    });
  }
}

TEST_CASE("tensor parallel: a gathered column-parallel output is the whole layer's") {
  const Full f = make_full();
  Tensor x = f.x.detach().requires_grad_();
  Tensor w1 = f.w1.detach().requires_grad_();
  const Tensor y = linear(x, w1);
  Tensor g = randn(y.shape(), {.dtype = DType::f64});
  y.backward(g);
  std::mutex mutex;
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 4), [&](Communicator& tp) {
    const int r = tp.rank();
    parallel::ColumnParallelLinear fc(kC, kF, tp, {.bias = false, .dtype = DType::f64}, true);
    {
      autograd::NoGradGuard no_grad;
      fc.weight.copy_(f.w1.narrow(0, r * 4, 4));
    }
    Tensor xr = f.x.detach().requires_grad_();
    const Tensor yr = fc.forward(xr);
    yr.backward(g);
    std::lock_guard lock(mutex);
    test::check_close(yr, y, 1e-12, 1e-12);
    test::check_close(xr.grad(), x.grad(), 1e-12, 1e-12);
    test::check_close(fc.weight.grad(), w1.grad().narrow(0, r * 4, 4), 1e-12, 1e-12);
  });
  test::check_error(
      [] {
        parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 3), [](Communicator& tp) {
          parallel::ColumnParallelLinear fc(kC, kF, tp);
        });
      },
      {"ColumnParallelLinear: 16 features do not split over 3 tensor-parallel ranks"});
}

}  // namespace dlf

namespace dlf {

TEST_CASE("vocabulary parallel: embedding and cross-entropy equal the whole vocabulary's") {
  constexpr int64_t V = 12, C = 5, N = 7;
  Generator gen(9);
  const Tensor table = randn({V, C}, {.dtype = DType::f64}, &gen);
  const Tensor ids = from_vector<int64_t>({0, 11, 3, 6, 6, 9, 2}, {N});
  const Tensor logits = randn({N, V}, {.dtype = DType::f64}, &gen) * 3.0;
  const Tensor g = randn({N, C}, {.dtype = DType::f64}, &gen);
  // Whole-vocabulary references.
  Tensor w = table.detach().requires_grad_();
  embedding(w, ids).backward(g);
  Tensor l = logits.detach().requires_grad_();
  const Tensor loss = cross_entropy(l, ids);
  loss.backward();
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    std::mutex mutex;
    parallel::run_ranks(parallel::devices_of(DeviceType::cpu, n), [&](Communicator& tp) {
      const int64_t rows = V / n, first = tp.rank() * rows;
      parallel::VocabParallelEmbedding emb(V, C, tp, DType::f64);
      CHECK(emb.first_row() == first);
      {
        autograd::NoGradGuard no_grad;
        emb.weight.copy_(table.narrow(0, first, rows));
      }
      const Tensor e = emb.forward(ids);
      e.backward(g);
      Tensor lr = logits.narrow(1, first, rows).contiguous().requires_grad_();
      const Tensor lossr = parallel::vocab_parallel_cross_entropy(lr, ids, tp);
      lossr.backward();
      std::lock_guard lock(mutex);
      test::check_close(e, embedding(table, ids), 1e-12, 1e-12);
      test::check_close(emb.weight.grad(), w.grad().narrow(0, first, rows), 1e-12, 1e-12);
      CHECK(lossr.item<double>() == doctest::Approx(loss.item<double>()).epsilon(1e-12));
      test::check_close(lr.grad(), l.grad().narrow(1, first, rows), 1e-12, 1e-12);
    });
  }
}

TEST_CASE("vocabulary parallel: bf16 logits give the f32 cross-entropy, as one device's") {
  constexpr int64_t V = 4096, N = 6;
  Generator gen(4);
  const Tensor logits = (randn({N, V}, {}, &gen) * 4.0).to(DType::bf16);
  const Tensor ids = from_vector<int64_t>({0, 4095, 17, 2048, 999, 5}, {N});
  const double want = cross_entropy(logits.to(DType::f32), ids).item<double>();
  std::mutex mutex;
  parallel::run_ranks(parallel::devices_of(DeviceType::cpu, 2), [&](Communicator& tp) {
    const int64_t rows = V / 2;
    Tensor mine = logits.narrow(1, tp.rank() * rows, rows).contiguous().requires_grad_();
    const Tensor loss = parallel::vocab_parallel_cross_entropy(mine, ids, tp);
    loss.backward();
    std::lock_guard lock(mutex);
    CHECK(loss.dtype() == DType::f32);
    CHECK(loss.item<double>() == doctest::Approx(want).epsilon(1e-6));
    CHECK(mine.grad().dtype() == DType::bf16);
  });
}

}  // namespace dlf
