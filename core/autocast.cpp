// The autocast table and the casts dispatch makes by it.
#include <dlf/core/autocast.h>
#include <dlf/core/op.h>
#include <dlf/device/cpu_features.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace dlf {
namespace {

struct CachedCast {
  Tensor source;  // held so that its address names it until the cache is dropped
  uint64_t version;
  Tensor cast;
};

struct AutocastState {
  std::optional<DType> dtype;
  int enabling_guards = 0;
  std::unordered_map<const TensorImpl*, CachedCast> parameter_casts;
};
thread_local AutocastState state;

// A parameter's cast is made once per autocast region (and again if it changed in place).
// Only casts recorded by autograd are kept: one made under no-grad would give later uses
// no gradient.
Tensor cast(const Tensor& t, DType to) {
  if (!t.is_leaf() || !t.requires_grad()) return t.to(to);
  const uint64_t version = t.storage()->version();
  auto it = state.parameter_casts.find(t.impl());
  if (it != state.parameter_casts.end() && it->second.version == version &&
      it->second.cast.dtype() == to)
    return it->second.cast;
  Tensor c = t.to(to);
  if (c.requires_grad())
    state.parameter_casts.insert_or_assign(t.impl(), CachedCast{t, version, c});
  return c;
}

bool has_dtype(const Tensor& t, DType dtype) { return t.defined() && t.dtype() == dtype; }

}  // namespace

CastPolicy cast_policy(std::string_view op) {
  static const std::unordered_map<std::string_view, CastPolicy> table = {
      {"matmul", CastPolicy::lower},
      {"linear", CastPolicy::lower},
      {"conv2d", CastPolicy::lower},
      {"conv_transpose2d", CastPolicy::lower},
      {"scaled_dot_product_attention", CastPolicy::lower},
      {"embedding", CastPolicy::lower},
      {"softmax", CastPolicy::f32},
      {"log_softmax", CastPolicy::f32},
      {"layer_norm", CastPolicy::match},
      {"rms_norm", CastPolicy::match},
      {"group_norm", CastPolicy::match},
      {"group_norm_silu", CastPolicy::match},
      {"add", CastPolicy::widest},
      {"sub", CastPolicy::widest},
      {"mul", CastPolicy::widest},
      {"div", CastPolicy::widest},
      {"pow", CastPolicy::widest},
      {"maximum", CastPolicy::widest},
      {"minimum", CastPolicy::widest},
      {"swiglu", CastPolicy::widest},
      {"where", CastPolicy::widest},
      {"cat", CastPolicy::widest},
  };
  auto it = table.find(op);
  return it == table.end() ? CastPolicy::none : it->second;
}

std::optional<DType> autocast_dtype() { return state.dtype; }

bool bf16_computes_in_f32(DType precision, Device device) {
  return precision == DType::bf16 && device.type == DeviceType::cpu && !cpu_has_fast_bf16();
}

std::optional<DType> autocast_for(DType precision, Device device) {
  if (precision != DType::bf16 || bf16_computes_in_f32(precision, device)) return std::nullopt;
  return precision;
}

namespace {
std::optional<DType> checked(std::optional<DType> dtype) {
  DLF_CHECK(!dtype || *dtype == DType::bf16, "autocast: computes in bf16, not ",
            dtype_name(*dtype));
  return dtype;
}
}  // namespace

AutocastGuard::AutocastGuard(std::optional<DType> dtype)
    : previous_(std::exchange(state.dtype, checked(dtype))), enables_(dtype.has_value()) {
  if (enables_) ++state.enabling_guards;
}

AutocastGuard::~AutocastGuard() {
  state.dtype = previous_;
  if (enables_ && --state.enabling_guards == 0) state.parameter_casts.clear();
}

namespace detail {

void apply_autocast(const OpDef& op, std::vector<Tensor>& inputs) {
  if (!state.dtype) return;
  const DType low = *state.dtype;
  switch (cast_policy(op.name)) {
    case CastPolicy::none:
      return;
    case CastPolicy::lower:
      for (Tensor& t : inputs) {
        if (has_dtype(t, DType::f32)) t = cast(t, low);
      }
      return;
    case CastPolicy::f32:
      for (Tensor& t : inputs) {
        if (has_dtype(t, low)) t = t.to(DType::f32);
      }
      return;
    case CastPolicy::match: {
      const DType x = inputs[0].dtype();
      if (x != low && x != DType::f32) return;
      const DType other = x == low ? DType::f32 : low;
      for (size_t i = 1; i < inputs.size(); ++i) {
        if (has_dtype(inputs[i], other)) inputs[i] = cast(inputs[i], x);
      }
      return;
    }
    case CastPolicy::widest: {
      const auto is = [&](DType d) {
        return std::any_of(inputs.begin(), inputs.end(),
                           [&](const Tensor& t) { return has_dtype(t, d); });
      };
      if (!is(low) || !is(DType::f32)) return;
      const bool f32_only_parameters =
          std::all_of(inputs.begin(), inputs.end(), [&](const Tensor& t) {
            return !has_dtype(t, DType::f32) || (t.is_leaf() && t.requires_grad());
          });
      for (Tensor& t : inputs) {
        if (f32_only_parameters && has_dtype(t, DType::f32)) t = cast(t, low);
        if (!f32_only_parameters && has_dtype(t, low)) t = t.to(DType::f32);
      }
      return;
    }
  }
}

}  // namespace detail
}  // namespace dlf
