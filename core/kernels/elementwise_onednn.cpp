#include "core/kernels/elementwise_onednn.h"

#include <bit>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/kernels/onednn_util.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {
namespace {

using dnnl::memory;

template <typename PrimitiveDesc>
bool is_reference_kernel(const PrimitiveDesc& pd) {
  return std::string_view(pd.impl_info_str()).starts_with("ref");
}

/// A primitive with the descriptors its memories need, for one layout.
template <typename Primitive, size_t N>
struct Prepared {
  Primitive primitive;
  std::array<memory::desc, N> descs;
};
/// Empty when oneDNN refuses the layout or only has its reference kernel for it.
template <typename Primitive, size_t N>
using MaybePrepared = std::optional<Prepared<Primitive, N>>;

/// The descriptor of `t` seen from `shape` (which it broadcasts to): broadcast dims get size 1,
/// and every size-1 dim the stride a dense layout gives it (stride · size of the next dim).
/// oneDNN 2.6's broadcasting binary kernels misread other strides there: a [4, 1, 3, 3]
/// tensor times a scalar came out wrong when its size-1 dim had a stride past the data.
memory::desc broadcast_desc(const Tensor& t, const Shape& shape) {
  const std::vector<int64_t> byte_strides = broadcast_byte_strides(t, shape);
  const auto elem = static_cast<int64_t>(dtype_size(t.dtype()));
  memory::dims dims(shape.size()), strides(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    dims[d] = byte_strides[d] == 0 ? 1 : shape[d];
    strides[d] = dims[d] > 1            ? byte_strides[d] / elem
                 : d + 1 < shape.size() ? strides[d + 1] * dims[d + 1]
                                        : 1;
  }
  if (dims.empty()) dims = strides = {1};
  return memory::desc(dims, onednn_type(t.dtype()), strides);
}

// Whether the tensors all lie row-major or all channels last: one descriptor (the first's)
// then addresses every one of them.
template <typename... Rest>
bool same_dense_layout(const Tensor& first, const Rest&... rest) {
  if (first.is_contiguous()) return (rest.is_contiguous() && ...);
  return first.is_channels_last() && (rest.is_channels_last() && ...);
}

bool fits(const Tensor& t) {
  return t.dim() <= DNNL_MAX_NDIMS && (onednn_supports(t.dtype()) || t.dtype() == DType::b8);
}

template <typename Primitive, size_t N>
void execute(const Prepared<Primitive, N>& p, const std::array<int, N>& args,
             const std::array<const Tensor*, N>& tensors) {
  std::unordered_map<int, memory> mems;
  for (size_t k = 0; k < N; ++k) {
    mems.emplace(args[k], memory(p.descs[k], cpu::engine(), tensors[k]->raw_data()));
  }
  p.primitive.execute(cpu::stream(), mems);
  cpu::stream().wait();
}

}  // namespace

// oneDNN's element-wise kernels open a parallel region whatever the size; small ones run
// faster in dlf's loops, on the calling thread.
bool worth_onednn(const Tensor& out) { return out.numel() >= kParallelGrain; }

bool onednn_eltwise(dnnl::algorithm alg, float alpha, float beta, const Tensor& x,
                    const Tensor& out) {
  if (!onednn_supports(x.dtype()) || !fits(x) || !same_dense_layout(x, out) || !worth_onednn(out)) {
    return false;
  }
  using Eltwise = MaybePrepared<dnnl::eltwise_forward, 2>;
  const std::string key = "eltwise " + std::to_string(static_cast<int>(alg)) + " " +
                          std::to_string(std::bit_cast<uint32_t>(alpha)) + " " +
                          std::to_string(std::bit_cast<uint32_t>(beta)) + " " + layout_key(x);
  const Eltwise& prepared = cpu::cached<Eltwise>(key, [&]() -> Eltwise {
    const memory::desc md = onednn_desc(x);  // source and destination: one dense layout
    try {
      dnnl::eltwise_forward::primitive_desc pd(
          {dnnl::prop_kind::forward_inference, alg, md, alpha, beta}, cpu::engine());
      if (is_reference_kernel(pd)) return std::nullopt;
      return Prepared<dnnl::eltwise_forward, 2>{dnnl::eltwise_forward(pd), {md, md}};
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  });
  if (!prepared) return false;
  execute(*prepared, {DNNL_ARG_SRC, DNNL_ARG_DST}, {&x, &out});
  return true;
}

bool onednn_binary(dnnl::algorithm alg, const Tensor& src0, const Tensor& src1, const Tensor& dst) {
  if (!onednn_supports(src0.dtype()) || !fits(src1) || !fits(dst) || !worth_onednn(dst)) {
    return false;
  }
  using Binary = MaybePrepared<dnnl::binary, 3>;
  const std::string key = "binary " + std::to_string(static_cast<int>(alg)) + " " +
                          layout_key(src0) + " " + layout_key(src1) + " " + layout_key(dst);
  const Binary& prepared = cpu::cached<Binary>(key, [&]() -> Binary {
    const memory::desc md0 = broadcast_desc(src0, dst.shape());
    if (md0.dims() != onednn_desc(dst).dims()) return std::nullopt;  // src0 is broadcast
    const memory::desc md1 = broadcast_desc(src1, dst.shape());
    const memory::desc mdd = onednn_desc(dst);
    try {
      dnnl::binary::primitive_desc pd({alg, md0, md1, mdd}, cpu::engine());
      if (is_reference_kernel(pd)) return std::nullopt;
      return Prepared<dnnl::binary, 3>{dnnl::binary(pd), {md0, md1, mdd}};
    } catch (const dnnl::error&) {
      return std::nullopt;  // dtypes or layout oneDNN does not implement
    }
  });
  if (!prepared) return false;
  execute(*prepared, {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, {&src0, &src1, &dst});
  return true;
}

}  // namespace dlf::kernels
