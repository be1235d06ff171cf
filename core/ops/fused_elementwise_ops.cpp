// The fused element-wise kernel (the idea of numexpr's blocked virtual machine and of
// Inductor's pointwise loops, without generating code): the output is cut into tiles of
// kTile elements in its memory order; per tile, each input is a pointer into its bytes (dense
// in that order) or gathered into scratch (broadcast, strided), and each member's pointwise
// loop runs from its sources' tiles into the next scratch tile or straight into an output.
#include <dlf/core/ops/fused.h>

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/kernels/strided_loop.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

constexpr int64_t kTile = 1024;  // elements: a member's tile is 4 KiB, a chain's stays in L1/L2

struct Chain {
  std::vector<FusedMember> members;
  std::vector<int64_t> outputs;
  Shape shape;
  int64_t inputs = 0;
};

int64_t index_in(std::string_view text, std::string_view key) {
  int64_t k = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), k);
  DLF_CHECK(error == std::errc() && end == text.data() + text.size() && k >= 0,
            "fused_elementwise: attribute '", key, "' names no member");
  return k;
}

Chain decode(const Attrs& a) {
  Chain c{.members = {},
          .outputs = a.ints("outputs"),
          .shape = a.ints("shape"),
          .inputs = a.i("inputs")};
  const std::string& ops = a.s("ops");
  for (size_t begin = 0; begin <= ops.size();) {
    const size_t end = std::min(ops.find(',', begin), ops.size());
    const OpDef& op = find_op(std::string_view(ops).substr(begin, end - begin));
    DLF_CHECK(bool(op.pointwise), "fused_elementwise: '", op.name, "' is not element-wise");
    c.members.push_back({.op = &op});
    begin = end + 1;
  }
  for (const auto& [key, value] : a.items()) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) continue;
    const std::string_view head = std::string_view(key).substr(0, dot);
    const std::string rest = key.substr(dot + 1);
    const bool sources = head == "in";
    const int64_t k = index_in(sources ? std::string_view(rest) : head, key);
    DLF_CHECK(k < int64_t(c.members.size()), "fused_elementwise: attribute '", key,
              "' names member ", k, " of ", c.members.size());
    if (sources) {
      c.members[size_t(k)].sources = a.ints(key);
    } else {
      c.members[size_t(k)].attrs.set(rest, value);
    }
  }
  for (size_t k = 0; k < c.members.size(); ++k)
    for (int64_t s : c.members[k].sources)
      DLF_CHECK(s >= 0 && s < c.inputs + int64_t(k), "fused_elementwise: member ", k, " ('",
                c.members[k].op->name, "') reads source ", s,
                ", not an input or an earlier member");
  for (int64_t o : c.outputs)
    DLF_CHECK(o >= 0 && o < int64_t(c.members.size()), "fused_elementwise: output ", o, " of ",
              c.members.size(), " members");
  return c;
}

// Each member's own inference on meta tensors: the chain is valid, and makes `shape` in f32.
std::vector<TensorMeta> infer(Inputs in, const Attrs& a) {
  const Chain c = decode(a);
  DLF_CHECK(int64_t(in.size()) == c.inputs, "fused_elementwise: ", in.size(), " inputs, ", c.inputs,
            " expected");
  std::vector<Tensor> made;
  for (const Tensor& t : in) {
    DLF_CHECK(t.defined() && t.dtype() == DType::f32, "fused_elementwise: inputs are f32 tensors");
    made.push_back(Tensor::empty(t.shape(), DType::f32, kMeta));
  }
  for (const FusedMember& m : c.members) {
    std::vector<Tensor> args;
    for (int64_t s : m.sources) args.push_back(made[size_t(s)]);
    const std::vector<TensorMeta> out = m.op->infer(args, m.attrs);
    DLF_CHECK(out.size() == 1 && out[0].shape == c.shape && out[0].dtype == DType::f32,
              "fused_elementwise: member '", m.op->name, "' does not make f32 ",
              shape_str(c.shape));
    made.push_back(Tensor::empty(c.shape, DType::f32, kMeta));
  }
  return std::vector<TensorMeta>(c.outputs.size(),
                                 {c.shape, DType::f32, elementwise::output_format(in, c.shape)});
}

// An input as the tiles read it, walked in the output's memory order.
struct Source {
  const char* base = nullptr;
  Shape shape;                   // coalesced dims, outermost first
  std::vector<int64_t> strides;  // bytes
  bool dense = false;            // element i of the output's order is base + 4 i
};

Source source_of(const Tensor& in, const Tensor& out) {
  std::array<std::vector<int64_t>, 2> strides{kernels::broadcast_byte_strides(out, out.shape()),
                                              kernels::broadcast_byte_strides(in, out.shape())};
  Shape shape = out.shape();
  kernels::detail::order_by_first<2>(shape, strides);
  kernels::detail::coalesce<2>(shape, strides);
  Source s{.base = static_cast<const char*>(in.raw_data()),
           .shape = shape,
           .strides = strides[1],
           .dense = false};
  s.dense = shape.size() == 1 && strides[1][0] == int64_t(sizeof(float));
  return s;
}

// dst[0, n) = elements [start, start + n) of `s` in the output's order.
void gather(const Source& s, int64_t start, int64_t n, float* dst) {
  const int64_t rank = int64_t(s.shape.size()), inner = s.shape.back();
  const int64_t step = s.strides.back();
  for (int64_t done = 0; done < n;) {
    int64_t rest = (start + done) / inner;
    const int64_t col = (start + done) % inner;
    const char* p = s.base + col * step;
    for (int64_t d = rank - 2; d >= 0; --d) {
      p += rest % s.shape[size_t(d)] * s.strides[size_t(d)];
      rest /= s.shape[size_t(d)];
    }
    const int64_t run = std::min(inner - col, n - done);
    float* o = dst + done;
    if (step == 0) {
      std::fill(o, o + run, *reinterpret_cast<const float*>(p));
    } else if (step == int64_t(sizeof(float))) {
      std::memcpy(o, p, size_t(run) * sizeof(float));
    } else {
      for (int64_t i = 0; i < run; ++i) o[i] = *reinterpret_cast<const float*>(p + i * step);
    }
    done += run;
  }
}

void kernel(Inputs in, const Attrs& a, Outputs out) {
  const Chain c = decode(a);
  const int64_t total = numel(c.shape);
  if (total == 0) return;
  for (const Tensor& o : out)
    DLF_CHECK(o.strides() == out[0].strides(), "fused_elementwise: outputs differ in layout");
  std::vector<Source> sources;
  for (const Tensor& t : in) sources.push_back(source_of(t, out[0]));
  // Scratch tiles: one per gathered input, one per member that no output receives.
  std::vector<int64_t> slot(sources.size() + c.members.size(), -1);
  std::vector<float*> written(c.members.size(), nullptr);
  for (size_t j = 0; j < c.outputs.size(); ++j)
    written[size_t(c.outputs[j])] = static_cast<float*>(out[j].raw_data());
  int64_t slots = 0;
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].dense) slot[i] = slots++;
  for (size_t k = 0; k < c.members.size(); ++k)
    if (!written[k]) slot[sources.size() + k] = slots++;
  const int64_t tiles = (total + kTile - 1) / kTile;
#pragma omp parallel if (total >= kernels::kParallelGrain && omp_get_max_threads() > 1)
  {
    std::vector<float> scratch(size_t(slots * kTile));
    std::vector<const float*> at(slot.size());
    std::vector<const float*> args;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t start = t * kTile, n = std::min(kTile, total - start);
      for (size_t i = 0; i < sources.size(); ++i) {
        if (sources[i].dense) {
          at[i] = reinterpret_cast<const float*>(sources[i].base) + start;
        } else {
          float* tile = scratch.data() + slot[i] * kTile;
          gather(sources[i], start, n, tile);
          at[i] = tile;
        }
      }
      for (size_t k = 0; k < c.members.size(); ++k) {
        const FusedMember& m = c.members[k];
        float* dst =
            written[k] ? written[k] + start : scratch.data() + slot[sources.size() + k] * kTile;
        args.clear();
        for (int64_t s : m.sources) args.push_back(at[size_t(s)]);
        m.op->pointwise(args, dst, n, m.attrs);
        at[sources.size() + k] = dst;
      }
    }
  }
}

Cost cost(Inputs in, const Attrs& a, std::span<const Tensor> out) {
  Cost c{.flops = a.f("flops")};
  for (const Tensor& t : in) c.bytes_read += double(t.numel()) * sizeof(float);
  for (const Tensor& t : out) c.bytes_written += double(t.numel()) * sizeof(float);
  return c;
}

}  // namespace

const OpDef& fused_elementwise_op() {
  static const OpDef& op = register_op({
      .name = "fused_elementwise",
      .infer = infer,
      .kernel = kernel,
      .cost = cost,
  });
  return op;
}

Attrs fused_attrs(const std::vector<FusedMember>& members, const std::vector<int64_t>& outputs,
                  const Shape& shape, int64_t inputs, double flops) {
  Attrs a;
  std::string ops;
  for (const FusedMember& m : members) ops += (ops.empty() ? "" : ",") + m.op->name;
  a.set("ops", ops);
  a.set("inputs", inputs);
  a.set("shape", shape);
  a.set("outputs", outputs);
  a.set("flops", flops);
  for (size_t k = 0; k < members.size(); ++k) {
    a.set("in." + std::to_string(k), members[k].sources);
    for (const auto& [name, value] : members[k].attrs.items())
      a.set(std::to_string(k) + "." + name, value);
  }
  return a;
}

namespace {
// Registered at load, so that a saved fused graph loads in a process that has fused nothing.
[[maybe_unused]] const OpDef& registered = fused_elementwise_op();
}  // namespace

}  // namespace dlf
