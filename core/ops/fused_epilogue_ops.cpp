// matmul_add, linear_add and conv2d_add: the product's kernel adds `other` as it writes its
// output (oneDNN's binary post-op; a sum post-op into the output when other is there already, or
// for a convolution, copied there first), so the sum costs no pass over memory of its own. Where
// oneDNN does not run the product (an f64 convolution, activations not channels last) the base
// op's kernel runs and the add follows in one loop.
#include <dlf/core/ops/fused.h>

#include "core/kernels/conv_geometry.h"
#include "core/kernels/conv_onednn.h"
#include "core/kernels/elementwise_loop.h"
#include "core/kernels/onednn_util.h"
#include "core/kernels/strided_copy.h"
#include "core/ops/linalg_common.h"

namespace dlf {
namespace {

// Runs base(in) + other into out when its kernel can fuse the add; false when it cannot.
using FusedKernel = bool (*)(Inputs in, const Attrs& attrs, const Tensor& other, const Tensor& out);

struct Epilogue {
  const char* base;
  size_t inputs;  // the base op's
  FusedKernel fused;
};

bool gemm_add(kernels::GemmProblem p, const Tensor& other) {
  // The product's dst is contiguous: so is the residual it reads beside it.
  const Tensor dense = kernels::dense_in(other, MemoryFormat::contiguous);
  p.residual = dense.raw_data();
  kernels::run_gemm(p);
  return true;
}

const Epilogue kEpilogues[] = {
    {"matmul", 2,
     [](Inputs in, const Attrs&, const Tensor& other, const Tensor& out) {
       return gemm_add(matmul_problem(in, out), other);
     }},
    {"linear", 3,
     [](Inputs in, const Attrs& attrs, const Tensor& other, const Tensor& out) {
       return gemm_add(linear_problem(in, attrs, out), other);
     }},
    {"conv2d", 3,
     [](Inputs in, const Attrs& attrs, const Tensor& other, const Tensor& out) {
       const Tensor& x = in[0];
       if (!kernels::onednn_supports(x.dtype()) || !x.is_channels_last() ||
           !out.is_channels_last() || other.strides() != out.strides())
         return false;
       kernels::conv2d_onednn(kernels::conv_geometry(x, in[1], attrs, false), x, in[1], in[2], out,
                              "conv2d|" + attrs.str(), other);
       return true;
     }},
    // Not conv_transpose2d (backward's input gradient of a convolution): oneDNN 2.6 runs a 1x1
    // deconvolution with a sum post-op 25x slower than without (unet-small's step, 57 ms a call).
};

// out += other, element by element in any layouts.
void add_into(const Tensor& out, const Tensor& other) {
  kernels::visit_floating(out.dtype(), "add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Tensor operands[] = {out, other};
    kernels::map_elements<T, T, T>(out, operands, [](auto a, auto b) { return a + b; });
  });
}

OpDef make_op(const Epilogue& e) {
  const std::string name = std::string(e.base) + "_add";
  // The base op is looked up when used: it may register after this one.
  return {
      .name = name,
      .infer =
          [e, name](Inputs in, const Attrs& attrs) {
            DLF_CHECK(in.size() == e.inputs + 1, name, ": takes ", e.inputs + 1, " inputs, got ",
                      in.size());
            std::vector<TensorMeta> out = find_op(e.base).infer(in.first(e.inputs), attrs);
            const Tensor& other = in[e.inputs];
            DLF_CHECK(
                other.defined() && other.shape() == out[0].shape && other.dtype() == out[0].dtype,
                name, ": the added tensor must be ", dtype_name(out[0].dtype),
                shape_str(out[0].shape), " as the product, got ",
                other.defined() ? dtype_name(other.dtype()) + shape_str(other.shape())
                                : std::string("an undefined tensor"));
            return out;
          },
      .kernel =
          [e](Inputs in, const Attrs& attrs, Outputs out) {
            const Tensor& other = in[e.inputs];
            if (e.fused(in.first(e.inputs), attrs, other, out[0])) return;
            // The base kernel writes the output first: an added tensor in its bytes (a memory
            // plan's in-place reuse) is kept aside.
            Tensor kept = other;
            if (other.raw_data() == out[0].raw_data()) {
              kept = Tensor::empty(other.shape(), other.dtype(), other.device());
              kernels::strided_copy(kept, other);
            }
            find_op(e.base).kernel(in.first(e.inputs), attrs, out);
            add_into(out[0], kept);
          },
      .cost =
          [e](Inputs in, const Attrs& attrs, std::span<const Tensor> out) {
            Cost c = op_cost(find_op(e.base), in.first(e.inputs), attrs, out);
            c.flops += double(out[0].numel());
            c.bytes_read += double(in[e.inputs].nbytes());
            return c;
          },
  };
}

// Registered before any graph loads from JSON, which finds ops by name.
[[maybe_unused]] const bool registered = [] {
  for (const Epilogue& e : kEpilogues) register_op(make_op(e));
  return true;
}();

}  // namespace

int added_input(const OpDef& op) {
  for (const Epilogue& e : kEpilogues)
    if (op.name == std::string(e.base) + "_add") return int(e.inputs);
  return -1;
}

const OpDef* epilogue_add_op(const OpDef& base) {
  for (const Epilogue& e : kEpilogues)
    if (base.name == e.base) return &find_op(base.name + "_add");
  return nullptr;
}

}  // namespace dlf
