// A UNet's convolutions, forward and both backwards, through dlf's dispatch against bare oneDNN
// primitives on the same shapes, timed alternately. The shapes are the ones one training step
// of the model dispatches (recorded by an observer); the bare primitives keep their tensors in
// the layouts oneDNN prefers, as a program written for oneDNN alone would. One JSON line per
// shape and pass, then one per pass and one for all, weighted by how often the step runs each.
//
//   conv_bench [--model unet-small] [--batch 8] [--channels-last] [--precision fp32|bf16]
//              [--threads 2] [--reps 10] [--warmup 2]
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

namespace {

using dnnl::memory;

struct Options {
  std::string model = "unet-small";
  int64_t batch = 8;
  int threads = 2;
  int reps = 10;
  int warmup = 2;
  bool channels_last = false;
  dlf::DType dtype = dlf::DType::f32;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"A UNet's convolutions in dlf against bare oneDNN primitives: JSON lines"};
  app.add_option("--model", o.model, "a unet config")->capture_default_str();
  app.add_option("--batch", o.batch, "images per step")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--reps", o.reps, "timed calls per shape")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  app.add_flag("--channels-last", o.channels_last,
               "dlf's activations channels last (as the UNet runs them), not row-major");
  std::string precision = "fp32";
  app.add_option("--precision", precision, "fp32, or bf16 (both sides' tensors in bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  dlf::bench::parse_or_exit(app, argc, argv);
  o.dtype = precision == "bf16" ? dlf::DType::bf16 : dlf::DType::f32;
  return o;
}

enum class Pass { forward, backward_data, backward_weights };

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::forward:
      return "forward";
    case Pass::backward_data:
      return "backward_data";
    case Pass::backward_weights:
      return "backward_weights";
  }
  return "";
}

// One convolution call as the step dispatched it, and the forward convolution it belongs to.
struct ConvCall {
  Pass pass;
  const dlf::OpDef* op;
  std::vector<dlf::Shape> inputs;  // empty shape: an undefined input (no bias)
  dlf::Attrs attrs;
  int64_t n, c, h, w, o, kh, kw, oh, ow;  // the forward conv: x [n,c,h,w] * w [o,c,kh,kw]
  int64_t stride, padding;
  long calls = 0;

  double flops() const { return 2.0 * double(n * o * c * kh * kw * oh * ow); }
  std::string name() const {
    auto s = [](int64_t v) { return std::to_string(v); };
    return std::string(pass_name(pass)) + " " + s(c) + "->" + s(o) + " " + s(kh) + "x" + s(kw) +
           " s" + s(stride) + " " + s(h) + "x" + s(w) + " N" + s(n) +
           (pass == Pass::forward && !inputs[2].empty() ? " bias" : "");
  }
};

// Records the convolutions of the dispatching thread, by pass and shape.
class ConvRecorder : public dlf::DispatchObserver {
 public:
  ConvRecorder() { dlf::add_observer(this); }
  ~ConvRecorder() override { dlf::remove_observer(this); }

  void on_op(const dlf::OpDef& op, dlf::Inputs in, const dlf::Attrs& a,
             std::span<const dlf::Tensor> out) override {
    ConvCall call;
    if (op.name == "conv2d") {
      call.pass = Pass::forward;
      set_geometry(call, in[0].shape(), in[1].shape(), out[0].shape());
    } else if (op.name == "conv_transpose2d") {  // the data gradient of a conv2d
      call.pass = Pass::backward_data;
      set_geometry(call, out[0].shape(), in[1].shape(), in[0].shape());
    } else if (op.name == "conv2d_weight_grad") {
      call.pass = Pass::backward_weights;
      set_geometry(call, in[0].shape(), out[0].shape(), in[1].shape());
    } else {
      return;
    }
    DLF_CHECK(a.i("groups") == 1 && a.ints("dilation") == dlf::Shape({1, 1}),
              "conv_bench: only ungrouped, undilated convolutions, got ", a.str());
    DLF_CHECK(
        a.ints("stride")[0] == a.ints("stride")[1] && a.ints("padding")[0] == a.ints("padding")[1],
        "conv_bench: only square strides and paddings, got ", a.str());
    call.op = &op;
    for (const dlf::Tensor& t : in) call.inputs.push_back(t.defined() ? t.shape() : dlf::Shape{});
    call.attrs = a;
    call.stride = a.ints("stride")[0];
    call.padding = a.ints("padding")[0];
    ConvCall& seen = calls_.try_emplace(call.name() + " " + a.str(), call).first->second;
    ++seen.calls;
  }

  std::vector<ConvCall> calls() const {
    std::vector<ConvCall> v;
    for (const auto& [key, call] : calls_) v.push_back(call);
    return v;
  }

 private:
  static void set_geometry(ConvCall& c, const dlf::Shape& x, const dlf::Shape& w,
                           const dlf::Shape& y) {
    c.n = x[0], c.c = x[1], c.h = x[2], c.w = x[3];
    c.o = w[0], c.kh = w[2], c.kw = w[3];
    c.oh = y[2], c.ow = y[3];
  }
  std::map<std::string, ConvCall> calls_;
};

// The call as a bare oneDNN primitive, its tensors in the layouts it chose, filled from the
// same values as dlf's.
class BareConv {
 public:
  BareConv(const ConvCall& c, const std::vector<dlf::Tensor>& in)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = memory::format_tag;
    const auto type =
        in[0].dtype() == dlf::DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    auto any = [&](const memory::dims& d) { return memory::desc(d, type, tag::any); };
    const memory::dims src{c.n, c.c, c.h, c.w}, weights{c.o, c.c, c.kh, c.kw},
        dst{c.n, c.o, c.oh, c.ow};
    const memory::dims strides{c.stride, c.stride}, pad{c.padding, c.padding};
    const memory::dims pad_r{(c.oh - 1) * c.stride + c.kh - c.h - c.padding,
                             (c.ow - 1) * c.stride + c.kw - c.w - c.padding};
    const bool bias = c.pass == Pass::forward && in[2].defined();
    const dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any(src),
         any(weights), bias ? any({c.o}) : memory::desc(), any(dst), strides, pad, pad_r},
        engine_);
    switch (c.pass) {
      case Pass::forward:
        primitive_ = dnnl::convolution_forward(fwd);
        add_input(DNNL_ARG_SRC, in[0], fwd.src_desc(), tag::nchw);
        add_input(DNNL_ARG_WEIGHTS, in[1], fwd.weights_desc(), tag::oihw);
        if (bias) add_input(DNNL_ARG_BIAS, in[2], fwd.bias_desc(), tag::x);
        add_output(DNNL_ARG_DST, fwd.dst_desc(), dst, tag::nchw);
        break;
      case Pass::backward_data: {  // dlf's inputs: gradient [n,o,oh,ow], weight [o,c,kh,kw]
        const dnnl::convolution_backward_data::primitive_desc pd(
            {dnnl::algorithm::convolution_direct, any(src), any(weights), any(dst), strides, pad,
             pad_r},
            engine_, fwd);
        primitive_ = dnnl::convolution_backward_data(pd);
        add_input(DNNL_ARG_DIFF_DST, in[0], pd.diff_dst_desc(), tag::nchw);
        add_input(DNNL_ARG_WEIGHTS, in[1], pd.weights_desc(), tag::oihw);
        add_output(DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), src, tag::nchw);
        break;
      }
      case Pass::backward_weights: {  // dlf's inputs: x [n,c,h,w], gradient [n,o,oh,ow]
        const dnnl::convolution_backward_weights::primitive_desc pd(
            {dnnl::algorithm::convolution_direct, any(src), any(weights), any(dst), strides, pad,
             pad_r},
            engine_, fwd);
        primitive_ = dnnl::convolution_backward_weights(pd);
        add_input(DNNL_ARG_SRC, in[0], pd.src_desc(), tag::nchw);
        add_input(DNNL_ARG_DIFF_DST, in[1], pd.diff_dst_desc(), tag::nchw);
        add_output(DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(), weights, tag::oihw);
        break;
      }
    }
  }

  void operator()() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

  // The result in dlf's plain layout.
  dlf::Tensor result() {
    dlf::Tensor t = dlf::Tensor::empty(out_plain_.dims(), dlf::DType::f32);
    memory plain(out_plain_, engine_, t.raw_data());
    dnnl::reorder(args_.at(out_arg_), plain).execute(stream_, args_.at(out_arg_), plain);
    stream_.wait();
    return t;
  }

 private:
  void add_input(int arg, const dlf::Tensor& t, const memory::desc& inner,
                 memory::format_tag user) {
    const dlf::Tensor c = t.contiguous();
    memory plain(memory::desc(inner.dims(), inner.data_type(), user), engine_, c.raw_data());
    memory m(inner, engine_);
    dnnl::reorder(plain, m).execute(stream_, plain, m);
    stream_.wait();
    args_.emplace(arg, m);
  }
  void add_output(int arg, const memory::desc& inner, const memory::dims& dims,
                  memory::format_tag user) {
    memory m(inner, engine_);
    std::memset(m.get_data_handle(), 0, inner.get_size());
    args_.emplace(arg, m);
    out_arg_ = arg;
    out_plain_ = memory::desc(dims, memory::data_type::f32, user);
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, memory> args_;
  int out_arg_ = 0;
  memory::desc out_plain_;
};

// Both implementations must compute the same thing, or the timing means nothing. In bf16 the
// two may round their f32 sums at different points: a few bf16 steps (2^-8 each) apart.
void check_same(const dlf::Tensor& got, const dlf::Tensor& expected, const std::string& name) {
  const float tolerance = got.dtype() == dlf::DType::bf16 ? 2e-2f : 1e-3f;
  std::vector<float> g = got.to(dlf::DType::f32).contiguous().to_vector<float>(),
                     e = expected.to_vector<float>();
  DLF_CHECK(g.size() == e.size(), name, ": dlf and oneDNN give different sizes");
  for (size_t i = 0; i < g.size(); ++i) {
    DLF_CHECK(std::fabs(g[i] - e[i]) <= tolerance * (1 + std::fabs(e[i])), name,
              ": dlf and oneDNN differ at element ", i, ": ", g[i], " vs ", e[i]);
  }
}

// Step time and FLOPs of a set of calls, each weighted by how often the step runs it.
struct Total {
  double dlf_ms = 0, onednn_ms = 0, flops = 0;
};

// One line; `timing` (dlf's spread) for a single call, none for a sum.
void report(const std::string& case_name, const Options& o, const Total& t,
            const dlf::bench::Timing* timing = nullptr) {
  const double dlf_gflops = t.flops / (t.dlf_ms * 1e6),
               onednn_gflops = t.flops / (t.onednn_ms * 1e6);
  dlf::bench::JsonLine line;
  line.add("bench", "conv").add("case", case_name).add("impl", "dlf").add("threads", o.threads);
  line.add("metric", "gflops").add("value", dlf_gflops).add("unit", "GFLOP/s");
  if (timing) {
    dlf::bench::add_timing(line, *timing);
  } else {
    line.add("step_ms", t.dlf_ms).add("baseline_step_ms", t.onednn_ms);
  }
  line.add("baseline_impl", "onednn").add("baseline", onednn_gflops);
  line.add("ratio", dlf_gflops / onednn_gflops);
  line.print();
}

std::vector<ConvCall> record_step(const Options& o) {
  const dlf::models::UNetConfig config = dlf::models::unet_config(o.model);
  dlf::models::UNet model(config);
  dlf::models::DDPM ddpm;
  dlf::Generator gen(1234);
  const int64_t s = config.image;
  const dlf::Tensor x0 = dlf::randn({o.batch, config.channels, s, s}, {}, &gen);
  const dlf::Tensor noise = dlf::randn({o.batch, config.channels, s, s}, {}, &gen);
  const dlf::Tensor t = dlf::randint(0, ddpm.steps(), {o.batch}, {.dtype = dlf::DType::i64}, &gen);
  ConvRecorder recorder;
  ddpm.loss(model, x0, noise, t).backward();
  return recorder.calls();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  dlf::set_num_threads(o.threads);
  dlf::Generator gen(1);
  std::map<std::string, Total> totals;  // by pass, and "all"
  for (const ConvCall& call : record_step(o)) {
    std::vector<dlf::Tensor> in;
    for (const dlf::Shape& s : call.inputs)
      in.push_back(s.empty() ? dlf::Tensor() : dlf::randn(s, {}, &gen).to(o.dtype));
    if (o.channels_last) {  // the activations: all but conv2d's weight and bias
      for (size_t i = 0; i < in.size(); ++i) {
        const bool weight = call.pass != Pass::backward_weights && i > 0;
        if (!weight) in[i] = in[i].contiguous(dlf::MemoryFormat::channels_last);
      }
    }
    BareConv bare(call, in);
    bare();
    const std::string name = o.model + " " + call.name() +
                             (o.channels_last ? " channels-last" : "") +
                             (o.dtype == dlf::DType::bf16 ? " bf16" : "");
    check_same(dlf::dispatch1(*call.op, in, call.attrs), bare.result(), name);
    const auto [dlf_t, onednn_t] = dlf::bench::time_alternating(
        [&] { dlf::dispatch1(*call.op, in, call.attrs); }, bare, o.warmup, o.reps);
    const Total one{dlf_t.median_ms, onednn_t.median_ms, call.flops()};
    report(name + " x" + std::to_string(call.calls), o, one, &dlf_t);
    for (const std::string& key : {std::string(pass_name(call.pass)), std::string("all")}) {
      Total& t = totals[key];
      t.dlf_ms += one.dlf_ms * double(call.calls);
      t.onednn_ms += one.onednn_ms * double(call.calls);
      t.flops += one.flops * double(call.calls);
    }
  }
  for (const auto& [key, t] : totals) {
    report(o.model + " B" + std::to_string(o.batch) + " step's convs" +
               (o.channels_last ? " (channels last)" : "") +
               (o.dtype == dlf::DType::bf16 ? " bf16: " : ": ") + key,
           o, t);
  }
}
