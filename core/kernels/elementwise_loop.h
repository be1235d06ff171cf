// The loop behind every element-wise op that oneDNN does not run: out = fn(in...), with the
// inputs broadcast to out's shape and any strides; contiguous runs get a loop that vectorises.
#pragma once
#include <array>
#include <tuple>
#include <utility>

#include <dlf/core/op.h>

#include "core/kernels/convert.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {

/// out[i] = fn(in[0][i], in[1][i], ...). Out and In are the stored types; fn takes and returns
/// compute types (acc_t: float for bf16), and its result is converted to Out.
template <typename Out, typename... In, typename Fn>
void map_elements(const Tensor& out, Inputs in, Fn fn) {
  constexpr size_t N = sizeof...(In) + 1;
  StridedOperands<N> ops;
  ops.base[0] = static_cast<char*>(out.raw_data());
  ops.byte_strides[0] = broadcast_byte_strides(out, out.shape());
  for (size_t k = 1; k < N; ++k) {
    ops.base[k] = static_cast<char*>(in[k - 1].raw_data());
    ops.byte_strides[k] = broadcast_byte_strides(in[k - 1], out.shape());
  }
  constexpr std::array<int64_t, N> kDense{sizeof(Out), sizeof(In)...};
  auto body = [&]<size_t... K>(std::index_sequence<K...>, const std::array<char*, N>& p,
                               const std::array<int64_t, N>& s, int64_t n) {
    if (s == kDense) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const std::tuple<const In*...> x{reinterpret_cast<const In*>(p[K + 1])...};
      for (int64_t i = 0; i < n; ++i) {
        o[i] = convert<Out>(fn(static_cast<acc_t<In>>(std::get<K>(x)[i])...));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = convert<Out>(
            fn(static_cast<acc_t<In>>(*reinterpret_cast<const In*>(p[K + 1] + i * s[K + 1]))...));
      }
    }
  };
  strided_for<N>(out.shape(), std::move(ops),
                 [&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
                   body(std::index_sequence_for<In...>{}, p, s, n);
                 });
}

}  // namespace dlf::kernels
