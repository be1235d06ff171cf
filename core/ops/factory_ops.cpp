// Factories: full, arange and the random draws (Philox, so thread-count independent).
#include <dlf/core/factory.h>
#include <dlf/core/op.h>

#include <cmath>
#include <numbers>

#include "core/kernels/convert.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

using elementwise::kPhiloxDraw;
using elementwise::kTranscendental;

std::vector<TensorMeta> meta_from_attrs(Inputs, const Attrs& a) {
  return {{a.ints("shape"), a.dtype("dtype")}};
}

// out[i] = fn(i) for a fresh contiguous output, in parallel.
template <typename Fn>
void fill_indexed(const Tensor& out, Fn fn) {
  kernels::visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.numel();
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; ++i) p[i] = kernels::convert<T>(fn(i));
  });
}

Cost write_only(Inputs, const Attrs&, std::span<const Tensor> out) {
  return {0, 0, static_cast<double>(out[0].nbytes())};
}

const OpDef& full_op = register_op({
    .name = "full",
    .infer = meta_from_attrs,
    .kernel =
        [](Inputs, const Attrs& a, Outputs out) {
          const double v = a.f("value");
          fill_indexed(out[0], [v](int64_t) { return v; });
        },
    .cost = write_only,
});

const OpDef& arange_op = register_op({
    .name = "arange",
    .infer = meta_from_attrs,
    .kernel =
        [](Inputs, const Attrs& a, Outputs out) {
          const double start = a.f("start"), step = a.f("step");
          fill_indexed(out[0], [=](int64_t i) { return start + static_cast<double>(i) * step; });
        },
    .cost = write_only,
});

double uniform01(const std::array<uint32_t, 4>& w) {
  return static_cast<double>((static_cast<uint64_t>(w[0]) << 21) ^ (w[1] >> 11)) * 0x1.0p-53;
}

const OpDef& rand_op = register_op({
    .name = "rand",
    .infer = meta_from_attrs,
    .kernel =
        [](Inputs, const Attrs& a, Outputs out) {
          const uint64_t seed = static_cast<uint64_t>(a.i("seed"));
          const uint64_t offset = static_cast<uint64_t>(a.i("offset"));
          const std::string& dist = a.s("distribution");
          if (dist == "uniform") {
            fill_indexed(out[0], [=](int64_t i) { return uniform01(philox(seed, offset + i)); });
          } else if (dist == "normal") {
            fill_indexed(out[0], [=](int64_t i) {
              auto w = philox(seed, offset + i);
              double u1 = (static_cast<double>(w[2]) + 1.0) * 0x1.0p-32;  // (0, 1]
              double u2 = uniform01(w);
              return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
            });
          } else {
            const int64_t low = a.i("low"), span = a.i("high") - low;
            fill_indexed(out[0], [=](int64_t i) {
              auto w = philox(seed, offset + i);
              uint64_t r = (static_cast<uint64_t>(w[0]) << 32) | w[1];
              return static_cast<double>(low +
                                         static_cast<int64_t>(r % static_cast<uint64_t>(span)));
            });
          }
        },
    .cost =
        [](Inputs in, const Attrs& a, std::span<const Tensor> out) {
          // A Philox draw an element, and a normal one a log, a square root and a cosine more.
          const double per_element =
              kPhiloxDraw + (a.s("distribution") == "normal" ? 3 * kTranscendental : 0);
          Cost c = write_only(in, a, out);
          c.flops = per_element * double(out[0].numel());
          return c;
        },
    .redraw =
        [](Inputs, Attrs& a) {
          draw_random_attrs(default_generator(), static_cast<uint64_t>(numel(a.ints("shape"))), a);
        },
});

Attrs shape_attrs(const Shape& shape, TensorOptions o) {
  for (int64_t d : shape) DLF_CHECK(d >= 0, "negative size in shape ", shape_str(shape));
  return {{"shape", shape}, {"dtype", o.dtype}, {"device", o.device}};
}

Tensor random(const Shape& shape, TensorOptions o, Generator* gen, Attrs extra) {
  Generator& g = gen ? *gen : default_generator();
  Attrs a = shape_attrs(shape, o);
  draw_random_attrs(g, static_cast<uint64_t>(numel(shape)), a);
  for (auto& [k, v] : extra.items()) a.set(k, v);
  return dispatch1(rand_op, {}, std::move(a));
}

}  // namespace

Tensor full(const Shape& shape, double value, TensorOptions o) {
  Attrs a = shape_attrs(shape, o);
  a.set("value", value);
  return dispatch1(full_op, {}, std::move(a));
}
Tensor zeros(const Shape& shape, TensorOptions o) { return full(shape, 0.0, o); }
Tensor ones(const Shape& shape, TensorOptions o) { return full(shape, 1.0, o); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), {t.dtype(), t.device()}); }

Tensor arange(double start, double end, double step, TensorOptions o) {
  DLF_CHECK(step != 0, "arange: step must not be zero");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  Attrs a = shape_attrs({n}, o);
  a.set("start", start);
  a.set("step", step);
  return dispatch1(arange_op, {}, std::move(a));
}
Tensor arange(double end, TensorOptions o) { return arange(0, end, 1, o); }

Tensor rand(const Shape& shape, TensorOptions o, Generator* gen) {
  DLF_CHECK(is_floating(o.dtype), "rand: dtype must be floating, got ", dtype_name(o.dtype));
  return random(shape, o, gen, {{"distribution", std::string("uniform")}});
}

Tensor randn(const Shape& shape, TensorOptions o, Generator* gen) {
  DLF_CHECK(is_floating(o.dtype), "randn: dtype must be floating, got ", dtype_name(o.dtype));
  return random(shape, o, gen, {{"distribution", std::string("normal")}});
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  DLF_CHECK(low < high, "randint: empty range [", low, ", ", high, ")");
  return random(shape, o, gen,
                {{"distribution", std::string("integer")}, {"low", low}, {"high", high}});
}

}  // namespace dlf
