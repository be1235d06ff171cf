#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

TEST_CASE("factories make the values they say") {
  check_close(zeros({2, 2}), {0, 0, 0, 0}, {2, 2});
  check_close(full({3}, 2.5, {.dtype = DType::f64}), {2.5, 2.5, 2.5}, {3});
  check_close(arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75}, {4});
  CHECK(arange(5, {.dtype = DType::i64}).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1, 2, 3, 4});
  Tensor b = from_vector<bool>({true, false});
  CHECK(b.dtype() == DType::b8);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false});
}

TEST_CASE("random draws depend only on the seed") {
  Generator g1(42), g2(42);
  Tensor a = randn({1000}, {}, &g1);
  Tensor b = randn({1000}, {}, &g2);
  check_close(a, b, 0, 0);
  // Known values pin the stream across machines and thread counts.
  Generator g3(7);
  std::vector<float> u = rand({3}, {}, &g3).to_vector<float>();
  Generator g4(7);
  set_num_threads(1);
  std::vector<float> v = rand({100000}, {}, &g4).to_vector<float>();
  set_num_threads(2);
  CHECK(u[0] == v[0]);
  CHECK(u[2] == v[2]);
  double mean = 0, sq = 0;
  for (float x : a.to_vector<float>()) mean += x, sq += double(x) * x;
  mean /= 1000;
  CHECK(std::fabs(mean) < 0.1);
  CHECK(std::fabs(sq / 1000 - 1) < 0.1);
  std::vector<int64_t> ints = randint(3, 6, {500}).to_vector<int64_t>();
  for (int64_t i : ints) CHECK((i >= 3 && i < 6));
  // The second draw continues the stream instead of repeating it.
  Generator g5(1);
  CHECK(rand({1}, {}, &g5).item<float>() != rand({1}, {}, &g5).item<float>());
}

TEST_CASE("views share storage and read the right elements") {
  Tensor x = arange(24, {.dtype = DType::f64}).view({2, 3, 4});
  SUBCASE("permute and transpose") {
    Tensor p = x.permute({2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(!p.is_contiguous());
    CHECK(p.storage() == x.storage());
    // p[i][j][k] = x[j][k][i] = 12j + 4k + i
    check_close(p.select(0, 1).select(0, 1), {13, 17, 21}, {3});
    check_close(x.transpose(0, 2).contiguous().view({-1}).slice(0, 0, 4), {0, 12, 4, 16}, {4});
  }
  SUBCASE("slice with a step, narrow and select") {
    check_close(x.slice(2, 1, 4, 2).select(0, 0), {1, 3, 5, 7, 9, 11}, {3, 2});
    check_close(x.narrow(1, 2, 1).squeeze(1), {8, 9, 10, 11, 20, 21, 22, 23}, {2, 4});
    check_close(x.select(-1, -1), {3, 7, 11, 15, 19, 23}, {2, 3});
    check_close(x.slice(0, -1, 100).flatten().slice(0, 0, 2), {12, 13}, {2});
  }
  SUBCASE("expand broadcasts with zero strides") {
    Tensor col = from_vector<double>({1, 2}, {2, 1});
    Tensor e = col.expand({2, 3});
    CHECK(e.strides() == Shape{1, 0});
    check_close(e, {1, 1, 1, 2, 2, 2}, {2, 3});
    check_close(from_vector<double>({5}).expand({2, 2, -1}), {5, 5, 5, 5}, {2, 2, 1});
  }
  SUBCASE("view, reshape, squeeze, unsqueeze") {
    CHECK(x.unsqueeze(0).shape() == Shape{1, 2, 3, 4});
    CHECK(x.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
    CHECK(x.unsqueeze(1).squeeze().shape() == Shape{2, 3, 4});
    Tensor t = x.transpose(1, 2);  // [2, 4, 3], not viewable as [8, 3]... but [2, 12] needs a copy
    check_error([&] { t.view({2, 12}); }, {"[2, 4, 3]", "reshape"});
    Tensor r = t.reshape({2, 12});
    CHECK(r.storage() != x.storage());
    check_close(r.select(0, 0).slice(0, 0, 4), {0, 4, 8, 1}, {4});
    // Splitting a dim of a permuted tensor stays a view.
    Tensor s = x.permute({2, 0, 1}).view({2, 2, 2, 3});
    CHECK(s.storage() == x.storage());
    check_close(s.select(0, 1).select(0, 0).select(0, 0), {2, 6, 10}, {3});
  }
  SUBCASE("views of views keep the offset") {
    Tensor v = x.select(0, 1).select(0, 2);
    CHECK(v.offset() == 20);
    check_close(v, {20, 21, 22, 23}, {4});
  }
}

TEST_CASE("copies and conversions") {
  Tensor x = from_vector<float>({1.5f, -2.25f, 3.0f, 0.1f}, {2, 2});
  check_close(x.to(DType::f64), {1.5, -2.25, 3.0, 0.1}, {2, 2}, 1e-7);
  CHECK(x.to(DType::i64).to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3, 0});
  CHECK(x.to(DType::b8).to_vector<bool>() == std::vector<bool>{true, true, true, true});
  // bf16 keeps 8 bits of mantissa: 0.1 becomes 0.10009765625.
  check_close(x.to(DType::bf16), {1.5, -2.25, 3.0, 0.10009765625}, {2, 2}, 0);
  Tensor c = x.clone();
  CHECK(c.storage() != x.storage());
  Tensor t = x.transpose(0, 1);
  check_close(t.contiguous(), {1.5, 3.0, -2.25, 0.1}, {2, 2});
  CHECK(x.contiguous().is_same(x));
  SUBCASE("copy_ writes through a strided view and broadcasts") {
    Tensor z = zeros({3, 4});
    z.slice(1, 0, 4, 2).copy_(from_vector<double>({7, 8}));
    check_close(z.select(0, 2), {7, 0, 8, 0}, {4});
    uint64_t v = z.storage()->version();
    z.copy_(ones({4}));
    CHECK(z.storage()->version() == v + 1);
    check_close(z, std::vector<double>(12, 1.0), {3, 4});
  }
  SUBCASE("a cast keeps a one-channel channels-last tensor channels last, as a conv needs") {
    // [N, 1, H, W] is contiguous in both layouts; its strides say which one the ops after
    // the cast work in (autocast's bf16 copy of a UNet's input image).
    const Tensor image = randn({2, 1, 3, 4}).contiguous(MemoryFormat::channels_last);
    REQUIRE(image.strides() == Shape{12, 1, 4, 1});
    const Tensor low = image.to(DType::bf16);
    CHECK(low.strides() == image.strides());
    CHECK(low.memory_format() == MemoryFormat::channels_last);
    CHECK(randn({2, 1, 3, 4}).to(DType::bf16).strides() == Shape{12, 12, 4, 1});
  }
}

TEST_CASE("meta tensors have shapes but no data") {
  Tensor m = zeros({1000, 1000}, {.device = kMeta});
  CHECK(m.device() == kMeta);
  CHECK(m.storage()->data() == nullptr);
  Tensor t = m.transpose(0, 1).contiguous();
  CHECK(t.shape() == Shape{1000, 1000});
  check_error([&] { m.select(0, 0).select(0, 0).item<float>(); }, {"meta"});
  check_error([&] { m.to(kCPU); }, {"meta", "no data"});
  CHECK(allocator_for(kMeta).stats().peak_bytes >= 2 * 4000000);
}

TEST_CASE("large host blocks are reused after they are freed; the counters see only live bytes") {
  Allocator& cpu = allocator_for(kCPU);
  const int64_t live = cpu.stats().live_bytes;
  const int64_t n = (3 << 20) + 7 * 16384 + 1;              // a size no other test frees
  void* first = Tensor::empty({n}, DType::f32).raw_data();  // ~12 MiB, freed at once
  CHECK(cpu.stats().live_bytes == live);
  Tensor again = Tensor::empty({n}, DType::f32);
  CHECK(again.raw_data() == first);
  CHECK(cpu.stats().live_bytes == live + 4 * n);
  Tensor other = Tensor::empty({n}, DType::f32);  // the cached block is taken: a new one
  CHECK(other.raw_data() != first);
}

TEST_CASE("bad input names the shapes") {
  check_error([] { broadcast_shapes({2, 3}, {4, 3}); }, {"[2, 3]", "[4, 3]", "broadcast"});
  check_error([] { zeros({2, 3}).view({4, 2}); }, {"[4, 2]", "[2, 3]"});
  check_error([] { zeros({2, 3}).permute({0, 0}); }, {"repeats"});
  check_error([] { zeros({2, 3}).narrow(1, 2, 2); }, {"out of bounds", "[2, 3]"});
  check_error([] { zeros({2, 3}).select(0, 5); }, {"out of range", "[2, 3]"});
  check_error([] { zeros({2, 3}).size(2); }, {"out of range"});
  check_error([] { zeros({2, 3}).expand({3, 3}); }, {"[2, 3]", "[3, 3]"});
  check_error([] { zeros({2}).data<double>(); }, {"f64", "f32"});
  check_error([] { Device::parse("gpu"); }, {"gpu"});
}

TEST_CASE("printing is readable") {
  CHECK(from_vector<float>({1, 2.5f}, {1, 2}).str() == "tensor([[1.0000, 2.5000]], dtype=f32)");
  CHECK(from_vector<int64_t>({3}, {}).str() == "tensor(3, dtype=i64)");
  CHECK(zeros({2}, {.device = kMeta}).str() == "tensor(shape=[2], dtype=f32, device=meta)");
  std::string big = arange(5000).str();
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.size() < 200);
}

TEST_CASE("tensor: size() of a scalar is an error, not a read past its shape") {
  const Tensor s = full({}, 3.0);
  dlf::test::check_error([&] { (void)s.size(0); }, {"size(0) of a scalar"});
  CHECK(full({2, 5}, 1.0).size(-1) == 5);
}

TEST_CASE("tensor: math as methods, and sin(t) by argument-dependent lookup, as in PyTorch") {
  const Tensor p = from_vector<double>({1, 2, 3}), y = from_vector<double>({0, 2, 5});
  CHECK((p - y).pow(2).mean().item<double>() == doctest::Approx(5.0 / 3));  // (1 + 0 + 4) / 3
  CHECK(sin(p).to_vector<double>() == p.sin().to_vector<double>());         // dlf::sin found by ADL
  CHECK(p.square().sum().item<double>() == 14);
  CHECK(p.matmul(y).item<double>() == 19);
  CHECK(p.clamp(1.5, 2.5).to_vector<double>() == std::vector<double>{1.5, 2, 2.5});
  CHECK(p.neg().abs().max().item<double>() == 3);
  CHECK(p.softmax(0).sum().item<double>() == doctest::Approx(1));
  const Tensor m = arange(0, 6, 1, {.dtype = DType::f64}).view({2, 3});
  CHECK(m.sum({1}).to_vector<double>() == std::vector<double>{3, 12});
  CHECK(m.argmax(1).to_vector<int64_t>() == std::vector<int64_t>{2, 2});
}

TEST_CASE("tensor: t[i] and t.index({...}) are Python's indexing, as views") {
  const Tensor t = arange(0, 24, 1, {.dtype = DType::f64}).view({2, 3, 4});
  CHECK(t[1].shape() == Shape{3, 4});
  CHECK(t[1][2][3].item<double>() == 23);
  CHECK(t[-1][0][0].item<double>() == 12);
  // t[0, 1:3] -> [2, 4]; t[:, -1, ::2] -> [2, 2]; t[1, :, 1] -> [3]
  const Tensor a = t.index({0, Slice{1, 3}});
  CHECK(a.shape() == Shape{2, 4});
  CHECK(a.to_vector<double>() == std::vector<double>{4, 5, 6, 7, 8, 9, 10, 11});
  const Tensor b = t.index({Slice{}, -1, Slice{.step = 2}});
  CHECK(b.to_vector<double>() == std::vector<double>{8, 10, 20, 22});
  CHECK(t.index({1, Slice{}, 1}).to_vector<double>() == std::vector<double>{13, 17, 21});
  CHECK(t.index({1, Slice{}, 1}).storage() == t.storage());  // a view
  dlf::test::check_error([&] { (void)t.index({0, 0, 0, 0}); }, {"4 indices", "[2, 3, 4]"});
  dlf::test::check_error([&] { (void)t[2]; }, {"select", "out of range"});
  dlf::test::check_error([&] { (void)t.index({Slice{.step = -1}}); }, {"step must be positive"});
}
