// f32 / bf16 matrix products through cached oneDNN matmul primitives (bias, activation and
// residual add fused as the bias argument, an eltwise and a binary post-op — a sum post-op when
// the residual is dst's own bytes; f32 accumulation for bf16).
#include <omp.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/kernels/dtype_dispatch.h"
#include "core/kernels/linalg_gemm.h"
#include "core/kernels/onednn_util.h"
#include "core/kernels/strided_loop.h"

namespace dlf::kernels {
namespace {

using dnnl::memory;

// One matmul argument: the strided layout it arrives in, and whether it is first copied into a
// packed buffer: dense, for layouts oneDNN misreads (zero strides) or would only take through
// its slow reference kernel (no unit stride in the matrix); with padded rows, for weights whose
// rows lie a multiple of 4 KiB apart (padded_row_stride).
struct MatmulArg {
  Shape dims, strides;  // empty when the argument is absent
  bool packed = false;
  Shape packed_strides = {};    // the copy's layout: dense, or with padded rows (padded_row_stride)
  int64_t packed_elements = 0;  // the copy's buffer: up to the last element its layout reaches
  memory::desc used = {};       // the layout the primitive reads

  bool present() const { return !dims.empty(); }
};

struct MatmulPlan {
  dnnl::matmul matmul;
  std::array<MatmulArg, 3> args;  // src, weights, bias
  memory::desc dst;
  int residual_arg = 0;  // the execute argument of the residual add's post-op, when there is one
};

constexpr std::array<int, 3> kArgIds = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS};

memory::desc strided_desc(const Shape& dims, const Shape& strides, DType dtype) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), onednn_type(dtype),
                      memory::dims(strides.begin(), strides.end()));
}

memory::desc used_desc(const MatmulArg& arg, DType dtype) {
  return strided_desc(arg.dims, arg.packed ? arg.packed_strides : arg.strides, dtype);
}

// Packs `arg` densely, or with its rows `row_stride` elements apart.
void pack(MatmulArg& arg, int64_t row_stride = 0) {
  arg.packed = true;
  arg.packed_strides = contiguous_strides(arg.dims);
  const size_t rows = arg.dims.size() - 2;
  if (row_stride > 0) {
    arg.packed_strides[rows] = row_stride;
    for (size_t d = rows; d-- > 0;)
      arg.packed_strides[d] = arg.packed_strides[d + 1] * arg.dims[d + 1];
  }
  arg.packed_elements = 1;
  for (size_t d = 0; d < arg.dims.size(); ++d)
    arg.packed_elements += (arg.dims[d] - 1) * arg.packed_strides[d];
}

// The row stride to copy the weights argument with, 64 bytes (twice that when once would land on
// a multiple of 4 KiB again) more than its row, when its rows lie a multiple of 4 KiB apart
// (0 otherwise): oneDNN's kernels walk the matrix down its columns, all of its rows then map to
// the same cache sets, and a product with N = 3072 (GPT-2's MLP) ran at half the rate of one
// with N = 2304 (1024 x 768 @ 768 x 3072 f32, 2 threads: 125 GFLOP/s, and 227 with the rows 64
// bytes further apart). Only for rows of 1 KiB and more, in products of 256 rows and more,
// which the copy costs little.
int64_t padded_row_stride(const MatmulArg& arg, const GemmProblem& p) {
  const size_t r = arg.dims.size();
  const int64_t size = static_cast<int64_t>(dtype_size(p.dtype));
  for (size_t d = 0; d + 2 < r; ++d)
    if (arg.dims[d] != 1) return 0;  // batched weights: left as they are
  const bool aliasing = arg.strides[r - 1] == 1 && arg.dims[r - 2] > 1 &&
                        arg.dims[r - 1] * size >= 1024 && arg.strides[r - 2] * size % 4096 == 0;
  if (!aliasing || p.rows() * p.batch() < 256) return 0;
  const int64_t pad = 64 / size, stride = arg.dims[r - 1] + pad;
  return stride * size % 4096 == 0 ? stride + pad : stride;
}

bool is_dense(const MatmulArg& arg) { return arg.strides == contiguous_strides(arg.dims); }

// No zero stride, and the smaller stride of the matrix dims is 1 (size-1 dims aside).
bool reads_in_place(const MatmulArg& arg) {
  int64_t min_matrix_stride = 1;
  bool first = true;
  for (size_t d = 0; d < arg.dims.size(); ++d) {
    if (arg.dims[d] == 1) continue;
    if (arg.strides[d] == 0) return false;
    if (d + 2 >= arg.dims.size()) {
      min_matrix_stride = first ? arg.strides[d] : std::min(min_matrix_stride, arg.strides[d]);
      first = false;
    }
  }
  return min_matrix_stride == 1;
}

// The bias [cols] as a [1, ..., 1, cols] tensor of dst's rank.
MatmulArg bias_arg(const GemmProblem& p) {
  Shape dims(p.dst.rank(), 1), strides(p.dst.rank(), p.cols() * p.bias_stride);
  dims.back() = p.cols();
  strides.back() = p.bias_stride;
  return {dims, strides};
}

dnnl::algorithm eltwise_algorithm(Activation activation) {
  switch (activation) {
    case Activation::relu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::gelu_tanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::gelu_erf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::none:
      break;
  }
  throw Error("linear: no eltwise algorithm for activation none");
}

// The primitive for the plan's current packing choice; nullopt when oneDNN refuses it.
std::optional<dnnl::matmul::primitive_desc> matmul_desc(const GemmProblem& p, MatmulPlan& plan) {
  for (MatmulArg& arg : plan.args) {
    if (arg.present()) arg.used = used_desc(arg, p.dtype);
  }
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (p.activation != Activation::none)
    ops.append_eltwise(1.f, eltwise_algorithm(p.activation), 0.f, 0.f);
  if (p.residual == p.dst.data) {  // dst holds it: a sum into dst, as the kernels allow
    ops.append_sum(1.f);
  } else if (p.residual != nullptr) {
    plan.residual_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) | DNNL_ARG_SRC_1;
    ops.append_binary(dnnl::algorithm::binary_add, plan.dst);
  }
  attr.set_post_ops(ops);
  const auto& args = plan.args;
  try {
    const dnnl::matmul::desc desc =
        p.bias != nullptr ? dnnl::matmul::desc(args[0].used, args[1].used, args[2].used, plan.dst)
                          : dnnl::matmul::desc(args[0].used, args[1].used, plan.dst);
    return dnnl::matmul::primitive_desc(desc, attr, cpu::engine());
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

bool is_reference_impl(const dnnl::matmul::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).starts_with("ref");
}

MatmulPlan make_plan(const GemmProblem& p) {
  MatmulPlan plan;
  plan.args[0] = {p.a.dims, p.a.strides};
  plan.args[1] = {p.b.dims, p.b.strides};
  if (p.bias != nullptr) plan.args[2] = bias_arg(p);
  plan.dst = strided_desc(p.dst.dims, p.dst.strides, p.dtype);
  for (MatmulArg& arg : plan.args)
    if (arg.present() && !reads_in_place(arg)) pack(arg);
  if (MatmulArg& w = plan.args[1]; !w.packed) {
    if (const int64_t stride = padded_row_stride(w, p); stride > 0) pack(w, stride);
  }
  auto pd = matmul_desc(p, plan);
  if (!pd || is_reference_impl(*pd)) {
    for (MatmulArg& arg : plan.args) {
      arg.packed = false;
      if (arg.present() && !is_dense(arg)) pack(arg);
    }
    pd = matmul_desc(p, plan);
  }
  DLF_CHECK(pd.has_value(), "matmul: oneDNN has no ", dtype_name(p.dtype), " matmul for ",
            shape_str(p.a.dims), " @ ", shape_str(p.b.dims));
  plan.matmul = dnnl::matmul(*pd);
  return plan;
}

// Copies a strided argument into `out`, a buffer in its packed layout.
void copy_packed(const void* src, const MatmulArg& arg, const Tensor& out) {
  const int64_t size = static_cast<int64_t>(dtype_size(out.dtype()));
  StridedOperands<2> ops{
      {static_cast<char*>(out.raw_data()), static_cast<char*>(const_cast<void*>(src))},
      {arg.packed_strides, arg.strides}};
  for (auto& strides : ops.byte_strides) {
    for (int64_t& s : strides) s *= size;
  }
  auto copy = [&](auto tag) {
    using E = typename decltype(tag)::type;
    strided_for<2>(arg.dims, ops,
                   [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
                     for (int64_t i = 0; i < n; ++i) {
                       *reinterpret_cast<E*>(p[0] + i * s[0]) =
                           *reinterpret_cast<const E*>(p[1] + i * s[1]);
                     }
                   });
  };
  if (size == 2) {
    copy(TypeTag<uint16_t>{});
  } else {
    copy(TypeTag<uint32_t>{});
  }
}

void append_layout(std::string& key, const Shape& dims, const Shape& strides) {
  key += shape_str(dims);
  key += shape_str(strides);
}

// Everything the primitive depends on, including the thread count oneDNN blocks for.
std::string plan_key(const GemmProblem& p) {
  std::string key = "matmul:";
  key += dtype_name(p.dtype);
  append_layout(key, p.a.dims, p.a.strides);
  append_layout(key, p.b.dims, p.b.strides);
  key += shape_str(p.dst.dims);
  if (p.bias != nullptr) key += "bias" + std::to_string(p.bias_stride);
  key += ":act" + std::to_string(static_cast<int>(p.activation));
  if (p.residual != nullptr) key += p.residual == p.dst.data ? ":sum" : ":residual";
  key += ":t" + std::to_string(omp_get_max_threads());
  return key;
}

}  // namespace

void onednn_gemm(const GemmProblem& p) {
  const MatmulPlan& plan = cpu::cached<MatmulPlan>(plan_key(p), [&] { return make_plan(p); });
  dnnl::stream& stream = cpu::stream();
  const std::array<const void*, 3> data = {p.a.data, p.b.data, p.bias};
  std::unordered_map<int, memory> args;
  std::array<Tensor, 3> packed;  // packed copies, alive until the primitive has run
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const MatmulArg& arg = plan.args[i];
    if (!arg.present()) continue;
    void* ptr = const_cast<void*>(data[i]);
    if (arg.packed) {
      packed[i] = Tensor::empty({arg.packed_elements}, p.dtype, kCPU);
      copy_packed(data[i], arg, packed[i]);
      ptr = packed[i].raw_data();
    }
    args.emplace(kArgIds[i], memory(arg.used, cpu::engine(), ptr));
  }
  args.emplace(DNNL_ARG_DST, memory(plan.dst, cpu::engine(), p.dst.data));
  if (p.residual != nullptr && p.residual != p.dst.data)
    args.emplace(plan.residual_arg, memory(plan.dst, cpu::engine(), const_cast<void*>(p.residual)));
  plan.matmul.execute(stream, args);
  stream.wait();
}

}  // namespace dlf::kernels
