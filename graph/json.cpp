// save() and load(): cereal's JSON archives over mirror records of the IR (ops by name, attrs
// tagged by type), the external bytes in a safetensors file beside the JSON.
#include <dlf/core/safetensors.h>
#include <dlf/device/atomic_file.h>
#include <dlf/graph/io.h>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <fstream>
#include <sstream>

#include "graph/meta_of.h"

namespace dlf::graph {
namespace {

struct AttrRecord {
  std::string name, type;
  AttrValue value;

  template <class Archive>
  void save(Archive& ar) const {
    ar(cereal::make_nvp("name", name), cereal::make_nvp("type", type));
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, DType>)
            ar(cereal::make_nvp("value", std::string(dtype_name(v))));
          else if constexpr (std::is_same_v<V, Device>)
            ar(cereal::make_nvp("value", v.str()));
          else
            ar(cereal::make_nvp("value", v));
        },
        value);
  }
  template <class Archive>
  void load(Archive& ar) {
    ar(cereal::make_nvp("name", name), cereal::make_nvp("type", type));
    auto read = [&]<typename T>(T v) {
      ar(cereal::make_nvp("value", v));
      return v;
    };
    if (type == "int")
      value = read(int64_t{});
    else if (type == "float")
      value = read(double{});
    else if (type == "bool")
      value = read(bool{});
    else if (type == "ints")
      value = read(std::vector<int64_t>{});
    else if (type == "string")
      value = read(std::string{});
    else if (type == "dtype")
      value = parse_dtype(read(std::string{}));
    else if (type == "device")
      value = Device::parse(read(std::string{}));
    else
      throw Error("graph: attribute '" + name + "' has an unknown type '" + type + "'");
  }
};

const char* type_of(const AttrValue& v) {
  static const char* names[] = {"int", "float", "bool", "ints", "string", "dtype", "device"};
  return names[v.index()];
}

struct NodeRecord {
  std::string op;
  std::vector<AttrRecord> attrs;
  std::vector<int> inputs, outputs;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(op), CEREAL_NVP(attrs), CEREAL_NVP(inputs), CEREAL_NVP(outputs));
  }
};

struct ValueRecord {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  std::string dtype;
  int buffer = -1;  // a value's producer is not kept: the nodes' outputs say it
  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(shape), CEREAL_NVP(strides), CEREAL_NVP(offset), CEREAL_NVP(dtype),
       CEREAL_NVP(buffer));
  }
};

struct BufferRecord {
  std::string kind, device;
  uint64_t nbytes = 0;
  int64_t argument = -1, offset = -1;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(kind), CEREAL_NVP(device), CEREAL_NVP(nbytes), CEREAL_NVP(argument),
       CEREAL_NVP(offset));
  }
};

struct GradRecord {
  int param = -1, grad = -1;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(param), CEREAL_NVP(grad));
  }
};

struct GraphRecord {
  int version = 1;
  std::vector<BufferRecord> buffers;
  std::vector<ValueRecord> values;
  std::vector<NodeRecord> nodes;
  std::vector<int> arguments, outputs;
  std::vector<GradRecord> grads;
  uint64_t arena_bytes = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(version), CEREAL_NVP(buffers), CEREAL_NVP(values), CEREAL_NVP(nodes),
       CEREAL_NVP(arguments), CEREAL_NVP(outputs), CEREAL_NVP(grads), CEREAL_NVP(arena_bytes));
  }
};

BufferKind parse_kind(const std::string& s) {
  for (BufferKind k :
       {BufferKind::external, BufferKind::argument, BufferKind::arena, BufferKind::output})
    if (kind_name(k) == s) return k;
  throw Error("graph: unknown buffer kind '" + s + "'");
}

// The bytes of an external buffer as a tensor over all of them, in the dtype of a value on it.
Tensor whole_buffer(const Graph& g, size_t b) {
  for (const Value& v : g.values) {
    if (v.buffer != int(b)) continue;
    const size_t size = dtype_size(v.dtype);
    DLF_CHECK(g.buffers[b].nbytes % size == 0, "graph: external buffer ", b, " of ",
              g.buffers[b].nbytes, " bytes does not hold whole ", dtype_name(v.dtype), "s");
    const int64_t n = int64_t(g.buffers[b].nbytes / size);
    return Tensor(g.buffers[b].storage, {n}, {1}, 0, v.dtype);
  }
  throw Error("graph: external buffer " + std::to_string(b) + " holds no value");
}

std::string buffer_name(size_t b) { return "buffer." + std::to_string(b); }

// Whether `v` lies within its buffer's bytes.
bool fits(const Value& v, const Buffer& b) {
  if (v.shape.size() != v.strides.size() || v.offset < 0) return false;
  int64_t last = v.offset;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] < 0 || v.strides[d] < 0) return false;
    if (v.shape[d] == 0) return true;  // no element
    last += (v.shape[d] - 1) * v.strides[d];
  }
  return uint64_t(last + 1) * dtype_size(v.dtype) <= b.nbytes;
}

// What a loaded graph must hold before it runs — its kernels trust it: every value within its
// buffer, each node's outputs what its op makes of its inputs (inference on meta tensors), every
// reference in range. A dlf::Error names the file and the first thing wrong.
void check_loaded(const Graph& g, const std::string& path) {
  const auto bad = [&](const std::string& what) { throw Error("graph: '" + path + "': " + what); };
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!fits(g.values[v], g.buffers[g.values[v].buffer]))
      bad("value " + std::to_string(v) + " does not lie within its buffer");
  for (const Buffer& b : g.buffers)
    if (b.kind == BufferKind::argument && (b.argument < 0 || b.argument >= int(g.arguments.size())))
      bad("a buffer is input " + std::to_string(b.argument) + " of " +
          std::to_string(g.arguments.size()));
  auto meta = [&](int v) { return v < 0 ? Tensor() : meta_of(g.values[v]); };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const std::string where = "node " + std::to_string(n) + " ('" + node.op->name + "')";
    std::vector<Tensor> in;
    for (int v : node.inputs) in.push_back(meta(v));
    std::vector<std::pair<Shape, DType>> made;
    try {
      if (node.op->view) {
        for (const Tensor& t : node.op->view(in, node.attrs))
          made.emplace_back(t.shape(), t.dtype());
      } else {
        for (const TensorMeta& m : node.op->infer(in, node.attrs))
          made.emplace_back(m.shape, m.dtype);
      }
    } catch (const Error& e) {
      bad(where + " does not run on its inputs: " + e.what());
    }
    bool same = made.size() == node.outputs.size();
    for (size_t i = 0; same && i < made.size(); ++i)
      same = made[i].first == g.values[node.outputs[i]].shape &&
             made[i].second == g.values[node.outputs[i]].dtype;
    if (!same) bad(where + "'s outputs are not what its op makes of its inputs");
  }
  for (const GradBinding& b : g.grads)
    if (g.buffers[g.values[b.param_value].buffer].kind != BufferKind::external)
      bad("a gradient's parameter is not one of the graph's external tensors");
}

}  // namespace

void save(const Graph& g, const std::string& path) {
  GraphRecord r;
  r.arena_bytes = g.arena_bytes;
  NamedTensors bytes;
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    const Buffer& buf = g.buffers[b];
    r.buffers.push_back({.kind = kind_name(buf.kind),
                         .device = buf.device.str(),
                         .nbytes = buf.nbytes,
                         .argument = buf.argument,
                         .offset = buf.offset});
    if (buf.kind == BufferKind::external) bytes.emplace_back(buffer_name(b), whole_buffer(g, b));
  }
  for (const Value& v : g.values)
    r.values.push_back({v.shape, v.strides, v.offset, dtype_name(v.dtype), v.buffer});
  for (const Node& n : g.nodes) {
    NodeRecord node{.op = n.op->name, .attrs = {}, .inputs = n.inputs, .outputs = n.outputs};
    for (const auto& [name, value] : n.attrs.items())
      node.attrs.push_back({name, type_of(value), value});
    r.nodes.push_back(std::move(node));
  }
  r.arguments = g.arguments;
  r.outputs = g.outputs;
  for (const GradBinding& b : g.grads) r.grads.push_back({b.param_value, b.value});
  std::ostringstream os;
  {
    cereal::JSONOutputArchive archive(os);
    archive(cereal::make_nvp("graph", r));
  }
  save_safetensors(path + ".safetensors", bytes);
  replace_file(path, "graph", os.str());
}

Graph load(const std::string& path) {
  std::ifstream in(path);
  DLF_CHECK(in.good(), "graph: cannot open '", path, "'");
  GraphRecord r;
  try {
    cereal::JSONInputArchive archive(in);
    archive(cereal::make_nvp("graph", r));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("graph: '" + path + "' is not a saved graph: " + e.what());
  }
  DLF_CHECK(r.version == 1, "graph: '", path, "' has version ", r.version, ", this dlf reads 1");
  const Safetensors bytes = load_safetensors(path + ".safetensors");
  Graph g;
  g.arena_bytes = r.arena_bytes;
  for (size_t b = 0; b < r.buffers.size(); ++b) {
    const BufferRecord& br = r.buffers[b];
    Buffer buf{.kind = parse_kind(br.kind),
               .nbytes = br.nbytes,
               .device = Device::parse(br.device),
               .argument = br.argument,
               .offset = br.offset,
               .storage = nullptr};
    if (buf.kind == BufferKind::external) {
      const Tensor* t = nullptr;
      for (const auto& [name, tensor] : bytes.tensors)
        if (name == buffer_name(b)) t = &tensor;
      DLF_CHECK(t != nullptr && t->nbytes() == buf.nbytes, "graph: '", path,
                ".safetensors' lacks the ", buf.nbytes, " bytes of ", buffer_name(b));
      Tensor host = t->to(buf.device);
      buf.storage =
          std::make_shared<Storage>(host.raw_data(), buf.nbytes, host.storage(), buf.device);
    }
    g.buffers.push_back(std::move(buf));
  }
  // A reference to a value; -1 (an undefined tensor) only where `optional`.
  const auto check_value = [&](int v, bool optional = false) {
    DLF_CHECK(v >= (optional ? -1 : 0) && v < int(r.values.size()), "graph: '", path,
              "' refers to value ", v, " of ", r.values.size());
    return v;
  };
  for (const ValueRecord& v : r.values) {
    DLF_CHECK(v.buffer >= 0 && v.buffer < int(g.buffers.size()), "graph: '", path,
              "' puts a value in buffer ", v.buffer, " of ", g.buffers.size());
    g.values.push_back({.shape = v.shape,
                        .strides = v.strides,
                        .offset = v.offset,
                        .dtype = parse_dtype(v.dtype),
                        .buffer = v.buffer});
  }
  for (const NodeRecord& n : r.nodes) {
    Node node{.op = &find_op(n.op), .attrs = {}, .inputs = {}, .outputs = {}};
    // A group is a live object of the process that captured the step, named by a handle.
    DLF_CHECK(!node.op->collective, "graph: '", path, "' holds a collective (", n.op,
              "): a step with collectives runs only in the process that captured it");
    for (const AttrRecord& a : n.attrs) node.attrs.set(a.name, a.value);
    for (int v : n.inputs) node.inputs.push_back(check_value(v, true));
    for (int v : n.outputs) node.outputs.push_back(check_value(v));
    g.nodes.push_back(std::move(node));
  }
  for (int v : r.arguments) g.arguments.push_back(check_value(v));
  for (int v : r.outputs) g.outputs.push_back(check_value(v));
  for (const GradRecord& gr : r.grads)
    g.grads.push_back(
        {.param = {}, .param_value = check_value(gr.param), .value = check_value(gr.grad)});
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].outputs) g.values[size_t(v)].producer = int(n);
  check_loaded(g, path);
  for (GradBinding& b : g.grads) {
    const Value& p = g.values[size_t(b.param_value)];
    b.param = Tensor(g.buffers[p.buffer].storage, p.shape, p.strides, p.offset, p.dtype);
  }
  return g;
}

}  // namespace dlf::graph
