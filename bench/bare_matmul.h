// A bare oneDNN matmul primitive on dlf's buffers: the baseline dlf's matmul is measured against
// (matmul_bench, suite_bench).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#include <dlf/dlf.h>

namespace dlf::bench {

// A bare oneDNN matmul on dlf's buffers: src [M, K], weights [K, N] (transposed = stored
// [N, K]), optional bias [N] and gelu_tanh post-op, dst [M, N] allocated once.
class BareMatmul {
 public:
  using memory = dnnl::memory;
  BareMatmul(const dlf::Tensor& a, const dlf::Tensor& b, bool transposed_weight,
             const dlf::Tensor& bias, bool gelu)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const memory::dim m = a.size(0), k = a.size(1);
    const memory::dim n = transposed_weight ? b.size(0) : b.size(1);
    const memory::data_type dt =
        a.dtype() == dlf::DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    using tag = memory::format_tag;
    const memory::desc src({m, k}, dt, tag::ab), dst({m, n}, dt, tag::ab);
    const memory::desc weights({k, n}, dt, transposed_weight ? tag::ba : tag::ab);
    const memory::desc bias_md =
        bias.defined() ? memory::desc({1, n}, dt, tag::ab) : memory::desc();
    dnnl::primitive_attr attr;
    if (gelu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc = bias.defined() ? dnnl::matmul::desc(src, weights, bias_md, dst)
                                                   : dnnl::matmul::desc(src, weights, dst);
    matmul_ = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, engine_));
    out_ = dlf::Tensor::empty({m, n}, a.dtype());
    args_ = {{DNNL_ARG_SRC, memory(src, engine_, a.raw_data())},
             {DNNL_ARG_WEIGHTS, memory(weights, engine_, b.raw_data())},
             {DNNL_ARG_DST, memory(dst, engine_, out_.raw_data())}};
    if (bias.defined()) args_.emplace(DNNL_ARG_BIAS, memory(bias_md, engine_, bias.raw_data()));
  }

  void operator()() {
    matmul_.execute(stream_, args_);
    stream_.wait();
  }
  const dlf::Tensor& out() const { return out_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  dlf::Tensor out_;
  std::unordered_map<int, memory> args_;
};

}  // namespace dlf::bench
