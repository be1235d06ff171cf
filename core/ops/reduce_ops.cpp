// Reductions: sum, mean, max, argmax and var over one or several dims.
#include <dlf/core/op.h>
#include <dlf/core/ops/reduce.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/kernels/convert.h"
#include "core/kernels/reduce_kernel.h"

namespace dlf {
namespace {

// Sums accumulate in double (float for bf16, int64 for integers).
template <typename T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t,
                                     std::conditional_t<std::is_same_v<T, bf16>, float, double>>;

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  return false;
}

template <typename T>
struct SumReducer {
  double scale = 1;  // 1 / count for the mean
  sum_acc_t<T> init() const { return 0; }
  void add(sum_acc_t<T>& a, T v, int64_t) const { a += static_cast<sum_acc_t<T>>(v); }
  // Independent lanes, so that the adds pipeline and vectorise instead of waiting on each other.
  void add_run(sum_acc_t<T>& a, const T* p, int64_t n) const {
    constexpr int64_t kLanes = 16;
    sum_acc_t<T> lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lane[j] += static_cast<sum_acc_t<T>>(p[i + j]);
    }
    for (; i < n; ++i) lane[0] += static_cast<sum_acc_t<T>>(p[i]);
    for (int64_t j = 0; j < kLanes; ++j) a += lane[j];
  }
  void merge(sum_acc_t<T>& a, sum_acc_t<T> b) const { a += b; }
  T finish(sum_acc_t<T> a) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(a);
    return kernels::convert<T>(a * static_cast<sum_acc_t<T>>(scale));
  }
};

// NaN wins, like a value larger than every other.
template <typename A>
bool beats(A candidate, A best) {
  return candidate > best || (is_nan(candidate) && !is_nan(best));
}

template <typename T>
struct MaxReducer {
  using A = kernels::acc_t<T>;
  A init() const {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::lowest();
  }
  void add(A& a, T v, int64_t) const {
    if (beats(static_cast<A>(v), a)) a = v;
  }
  void merge(A& a, A b) const { add(a, b, 0); }
  T finish(A a) const { return kernels::convert<T>(a); }
};

template <typename T>
struct ArgmaxReducer {
  struct Best {
    kernels::acc_t<T> value;
    int64_t index;
  };
  Best init() const { return {0, -1}; }
  void add(Best& a, T v, int64_t pos) const {
    // Positions come in order, so a tie keeps the first index.
    if (a.index < 0 || beats(static_cast<kernels::acc_t<T>>(v), a.value)) a = {v, pos};
  }
  void merge(Best& a, const Best& later) const {
    if (later.index >= 0 && (a.index < 0 || beats(later.value, a.value))) a = later;
  }
  int64_t finish(const Best& a) const { return a.index; }
};

// Welford's running mean and sum of squared deviations; partial runs merge by Chan's rule.
template <typename T>
struct VarReducer {
  using A = sum_acc_t<T>;
  int64_t correction = 1;
  struct Moments {
    int64_t count;
    A mean, m2;
  };
  Moments init() const { return {0, 0, 0}; }
  void add(Moments& m, T v, int64_t) const {
    const A x = static_cast<A>(v);
    m.count += 1;
    const A delta = x - m.mean;
    m.mean += delta / static_cast<A>(m.count);
    m.m2 += delta * (x - m.mean);
  }
  void merge(Moments& a, const Moments& b) const {
    if (b.count == 0) return;
    const int64_t count = a.count + b.count;
    const A delta = b.mean - a.mean, wa = static_cast<A>(a.count), wb = static_cast<A>(b.count);
    a.m2 += b.m2 + delta * delta * wa * wb / static_cast<A>(count);
    a.mean += delta * wb / static_cast<A>(count);
    a.count = count;
  }
  T finish(const Moments& m) const {
    return kernels::convert<T>(m.m2 / static_cast<A>(std::max<int64_t>(m.count - correction, 0)));
  }
};

enum class Dtypes { floating, numeric };

void check_dtype(const char* op, DType t, Dtypes allowed) {
  const bool ok =
      is_floating(t) || (allowed == Dtypes::numeric && (t == DType::i32 || t == DType::i64));
  DLF_CHECK(ok, op, ": dtype ", dtype_name(t), " is not supported (expected ",
            allowed == Dtypes::numeric ? "f32, f64, bf16, i32 or i64" : "f32, f64 or bf16", ")");
}

Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Shape& shape, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) n *= mask[d] ? shape[d] : 1;
  return n;
}

std::vector<bool> mask_of(const char* op, const Tensor& x, const Attrs& a) {
  return kernels::dims_mask(op, x.shape(), a.has("dim") ? Shape{a.i("dim")} : a.ints("dims"));
}

// infer for every reduction: the attrs hold `dims` (or argmax's single `dim`) and `keepdim`.
std::function<std::vector<TensorMeta>(Inputs, const Attrs&)> reduction_infer(const char* name,
                                                                             Dtypes allowed,
                                                                             bool needs_elements,
                                                                             bool index_output) {
  return [=](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
    const Tensor& x = in[0];
    check_dtype(name, x.dtype(), allowed);
    std::vector<bool> mask = mask_of(name, x, a);
    DLF_CHECK(!needs_elements || reduced_count(x.shape(), mask) > 0, name,
              ": cannot reduce over no elements (input shape ", shape_str(x.shape()), ")");
    return {
        {reduced_shape(x.shape(), mask, a.b("keepdim")), index_output ? DType::i64 : x.dtype()}};
  };
}

std::function<Cost(Inputs, const Attrs&, std::span<const Tensor>)> flops_per_element(double f) {
  return [f](Inputs in, const Attrs&, std::span<const Tensor> out) {
    return kernels::io_cost(in, out, f);
  };
}

// Runs make_reducer(TypeTag<T>, count) over the op's dims for input dtypes in `visit`.
template <typename Visit, typename MakeReducer>
void run_reduction(const char* op, Inputs in, const Attrs& a, Outputs out, Visit visit,
                   MakeReducer make_reducer) {
  const Tensor& x = in[0];
  std::vector<bool> mask = mask_of(op, x, a);
  const int64_t count = reduced_count(x.shape(), mask);
  visit(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto reducer = make_reducer(tag, count);
    using Out = decltype(reducer.finish(reducer.init()));
    kernels::reduce<T>(x, mask, out[0].data<Out>(), reducer);
  });
}

const auto visit_numeric = [](DType t, auto&& fn) {
  if (t == DType::i32) return fn(kernels::TypeTag<int32_t>{});
  if (t == DType::i64) return fn(kernels::TypeTag<int64_t>{});
  return kernels::visit_floating(t, "reduce", fn);
};
const auto visit_floating = [](DType t, auto&& fn) { kernels::visit_floating(t, "reduce", fn); };

const OpDef& sum_op = register_op({
    .name = "sum",
    .infer = reduction_infer("sum", Dtypes::numeric, false, false),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          run_reduction("sum", in, a, out, visit_numeric, [](auto tag, int64_t) {
            return SumReducer<typename decltype(tag)::type>{};
          });
        },
    .cost = flops_per_element(1),
});

const OpDef& mean_op = register_op({
    .name = "mean",
    .infer = reduction_infer("mean", Dtypes::floating, false, false),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          run_reduction("mean", in, a, out, visit_floating, [](auto tag, int64_t count) {
            return SumReducer<typename decltype(tag)::type>{1.0 / static_cast<double>(count)};
          });
        },
    .cost = flops_per_element(1),
});

const OpDef& max_op = register_op({
    .name = "max",
    .infer = reduction_infer("max", Dtypes::numeric, true, false),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          run_reduction("max", in, a, out, visit_numeric, [](auto tag, int64_t) {
            return MaxReducer<typename decltype(tag)::type>{};
          });
        },
    .cost = flops_per_element(1),
});

const OpDef& argmax_op = register_op({
    .name = "argmax",
    .infer = reduction_infer("argmax", Dtypes::numeric, true, true),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          run_reduction("argmax", in, a, out, visit_numeric, [](auto tag, int64_t) {
            return ArgmaxReducer<typename decltype(tag)::type>{};
          });
        },
    .cost = flops_per_element(1),
});

const OpDef& var_op = register_op({
    .name = "var",
    .infer = reduction_infer("var", Dtypes::floating, false, false),
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          run_reduction("var", in, a, out, visit_floating, [&a](auto tag, int64_t) {
            return VarReducer<typename decltype(tag)::type>{a.i("correction")};
          });
        },
    .cost = flops_per_element(5),
});

Attrs reduce_attrs(const Shape& dims, bool keepdim) {
  return {{"dims", dims}, {"keepdim", AttrValue(keepdim)}};
}

}  // namespace

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  return dispatch1(sum_op, {x}, reduce_attrs(dims, keepdim));
}
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  return dispatch1(mean_op, {x}, reduce_attrs(dims, keepdim));
}
Tensor max(const Tensor& x, const Shape& dims, bool keepdim) {
  return dispatch1(max_op, {x}, reduce_attrs(dims, keepdim));
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return dispatch1(argmax_op, {x}, {{"dim", dim}, {"keepdim", AttrValue(keepdim)}});
}
Tensor var(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  DLF_CHECK(correction >= 0, "var: correction must be >= 0, got ", correction);
  Attrs a = reduce_attrs(dims, keepdim);
  a.set("correction", correction);
  return dispatch1(var_op, {x}, std::move(a));
}

}  // namespace dlf
