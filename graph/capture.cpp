// Capture: a dispatch observer that turns each outermost op into a node. Tensors are told apart
// by their TensorImpl, buffers by their Storage; both maps hold weak references, so a freed
// tensor whose address comes back is not mistaken for the old one.
#include <dlf/graph/capture.h>

#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/abstract_run.h"

namespace dlf::graph {
namespace {

// `shift`: where t's storage starts in v's buffer (a parameter aliased to a slice of one).
bool same_view(const Value& v, const Tensor& t, int64_t shift = 0) {
  return v.shape == t.shape() && v.strides == t.strides() && v.offset == t.offset() + shift &&
         v.dtype == t.dtype();
}

class Recorder final : public DispatchObserver {
 public:
  Recorder(const std::vector<Tensor>& inputs, CaptureMode mode) : mode(mode) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      DLF_CHECK(inputs[i].defined(), "graph capture: input ", i, " is undefined");
      auto known = buffers_.find(inputs[i].storage().get());
      int b = known != buffers_.end() ? known->second.first : -1;
      if (b < 0) {
        b = add_buffer({.kind = BufferKind::argument,
                        .nbytes = inputs[i].storage()->nbytes(),
                        .device = inputs[i].device(),
                        .argument = int64_t(i)},
                       inputs[i].storage());
      }
      g_.arguments.push_back(add_value(inputs[i], b, -1));
    }
  }

  void on_op_start(const OpDef&) override { ++depth_; }

  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    if (--depth_ > 0) return;  // inside a composite op: its kernel runs it again on replay
    std::vector<int> written = op.also_writes;
    if (op.inplace >= 0) written.push_back(op.inplace);
    for (int i : written)
      DLF_CHECK(!aliases_.contains(inputs[size_t(i)].storage().get()), "graph capture: '", op.name,
                "' writes in place a parameter whose reads a gathered value stands for (ZeRO-3)");
    Node node{.op = &op, .attrs = attrs, .inputs = {}, .outputs = {}};
    for (const Tensor& t : inputs) node.inputs.push_back(t.defined() ? value_of(t) : -1);
    const int n = int(g_.nodes.size());
    for (const Tensor& t : outputs) {
      int b;
      int64_t shift = 0;
      if (op.view || op.inplace >= 0) {
        // The input's bytes, which an aliased parameter's value has elsewhere.
        const size_t k = op.view ? 0 : size_t(op.inplace);
        const Value& in = g_.values[size_t(node.inputs[k])];
        b = in.buffer;
        shift = in.offset - inputs[k].offset();
      } else {
        b = add_buffer(
            {.kind = BufferKind::arena, .nbytes = t.storage()->nbytes(), .device = t.device()},
            t.storage());
      }
      node.outputs.push_back(add_value(t, b, n, shift));
    }
    g_.nodes.push_back(std::move(node));
  }

  // The op whose output `t` is, for an error message.
  std::string made_by(const Tensor& t) const {
    auto it = values_.find(t.impl());
    if (it == values_.end()) return "a tensor made outside the step's ops";
    const Value& v = g_.values[it->second.value];
    if (v.producer < 0 && g_.buffers[v.buffer].kind == BufferKind::argument)
      return "input " + std::to_string(g_.buffers[v.buffer].argument) + " of the step";
    if (v.producer < 0) return "a tensor from outside the step";
    return "the output of '" + g_.nodes[g_.values[it->second.value].producer].op->name + "'";
  }

  Graph finish(const std::vector<Tensor>& results) {
    for (size_t i = 0; i < results.size(); ++i) {
      DLF_CHECK(results[i].defined(), "graph capture: result ", i, " of the step is undefined");
      const int v = value_of(results[i]);
      escape(v);
      g_.outputs.push_back(v);
    }
    std::set<const TensorImpl*> bound;
    for (const auto& [param_value, p] : externals_) {
      if (!p.requires_grad() || !bound.insert(p.impl()).second) continue;
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      auto it = values_.find(grad.impl());
      if (it == values_.end() || g_.values[it->second.value].producer < 0) continue;
      escape(it->second.value);
      g_.grads.push_back({.param = p, .param_value = param_value, .value = it->second.value});
    }
    return std::move(g_);
  }

  void alias(const Tensor& param, const Tensor& value) {
    DLF_CHECK(param.is_contiguous() && param.offset() == 0 &&
                  param.nbytes() == param.storage()->nbytes() && value.shape() == param.shape() &&
                  value.dtype() == param.dtype() && value.is_contiguous(),
              "graph capture: a parameter ", shape_str(param.shape()),
              " must own its whole storage, and the value read for it must have its shape, "
              "dtype and layout (got ",
              dtype_name(value.dtype()), shape_str(value.shape()), ")");
    DLF_CHECK(made_in_step(value), "graph capture: the value read for a parameter ",
              shape_str(param.shape()), " must be made by the step's ops");
    aliases_[param.storage().get()] = value_of(value);
  }
  void unalias(const Tensor& param) { aliases_.erase(param.storage().get()); }
  bool aliased(const Tensor& param) const { return aliases_.contains(param.storage().get()); }

  const CaptureMode mode;  // how the step runs while recorded

 private:
  struct Seen {
    int value;
    std::weak_ptr<Storage> storage;
    int64_t shift;  // where its storage starts in its value's buffer (see same_view)
  };

  int add_buffer(Buffer b, const std::shared_ptr<Storage>& storage) {
    const int id = int(g_.buffers.size());
    if (b.kind == BufferKind::external) b.storage = storage;
    g_.buffers.push_back(std::move(b));
    buffer_values_.emplace_back();
    buffers_[storage.get()] = {id, storage};
    return id;
  }

  int add_value(const Tensor& t, int buffer, int producer, int64_t shift = 0) {
    const int id = int(g_.values.size());
    g_.values.push_back({.shape = t.shape(),
                         .strides = t.strides(),
                         .offset = t.offset() + shift,
                         .dtype = t.dtype(),
                         .buffer = buffer,
                         .producer = producer});
    buffer_values_[size_t(buffer)].push_back(id);
    values_[t.impl()] = {id, t.storage(), shift};
    return id;
  }

  int buffer_of(const Tensor& t) {
    auto it = buffers_.find(t.storage().get());
    if (it != buffers_.end() && it->second.second.lock() == t.storage()) return it->second.first;
    return add_buffer(
        {.kind = BufferKind::external, .nbytes = t.storage()->nbytes(), .device = t.device()},
        t.storage());
  }

  bool made_in_step(const Tensor& t) const {
    auto it = values_.find(t.impl());
    return it != values_.end() && g_.values[it->second.value].producer >= 0;
  }

  int value_of(const Tensor& t) {
    if (auto a = aliases_.find(t.storage().get()); a != aliases_.end()) {
      const Value& whole = g_.values[size_t(a->second)];
      DLF_CHECK(t.dtype() == whole.dtype, "graph capture: a ", dtype_name(t.dtype()), " view of a ",
                dtype_name(whole.dtype), " parameter a gathered value stands for");
      if (t.shape() == whole.shape && t.strides() == whole.strides && t.offset() == 0)
        return a->second;
      // Another view of the parameter's bytes (a transpose autograd saved): that view of the
      // value standing for them, whose bytes are laid out as the parameter's.
      Value view = whole;
      view.shape = t.shape();
      view.strides = t.strides();
      view.offset = whole.offset + t.offset();
      view.producer = -1;
      const int id = int(g_.values.size());
      g_.values.push_back(std::move(view));
      buffer_values_[size_t(whole.buffer)].push_back(id);
      return id;
    }
    auto it = values_.find(t.impl());
    if (it != values_.end() && it->second.storage.lock() == t.storage() &&
        same_view(g_.values[it->second.value], t, it->second.shift))
      return it->second.value;
    const int b = buffer_of(t);
    // A tensor made outside dispatch over a buffer the step wrote (a detach(), an autograd
    // function's identity output) is the latest value of that view: the same SSA value, so
    // passes see the producer it reads.
    if (g_.buffers[b].kind != BufferKind::external && g_.buffers[b].kind != BufferKind::argument) {
      const std::vector<int>& of_buffer = buffer_values_[size_t(b)];
      for (auto v = of_buffer.rbegin(); v != of_buffer.rend(); ++v) {
        if (g_.values[*v].producer >= 0 && same_view(g_.values[*v], t)) return *v;
      }
    }
    if (g_.buffers[b].kind == BufferKind::external) {
      // A gradient the step itself made and set (a sharded optimizer's piece of one) is fine.
      DLF_CHECK(!t.requires_grad() || !t.grad().defined() || made_in_step(t.grad()),
                "graph capture: a parameter ", shape_str(t.shape()),
                " already has a gradient when the step starts; clear gradients (zero_grad) "
                "before a captured step: a graph computes them, it does not add to old ones");
      externals_.emplace_back(int(g_.values.size()), t);
    }
    return add_value(t, b, -1);
  }

  // A value the step hands out: its bytes must outlive the run, so not in the arena.
  void escape(int v) {
    Buffer& b = g_.buffers[g_.values[v].buffer];
    if (b.kind == BufferKind::arena) b.kind = BufferKind::output;
  }

  Graph g_;
  int depth_ = 0;
  std::unordered_map<const TensorImpl*, Seen> values_;
  std::unordered_map<const Storage*, std::pair<int, std::weak_ptr<Storage>>> buffers_;
  std::vector<std::vector<int>> buffer_values_;    // by buffer: its values, in order
  std::vector<std::pair<int, Tensor>> externals_;  // reads from outside, for their gradients
  // Parameters' storages whose reads read a value of the step instead (alias_in_capture)
  std::unordered_map<const Storage*, int> aliases_;
};

thread_local Recorder* recording = nullptr;

void refuse_host_read(const Tensor& t) {
  throw Error(
      "graph capture: the step reads or writes values on the host (data(), item(), "
      "to_vector()) of " +
      recording->made_by(t) + ", shape " + shape_str(t.shape()) +
      "; what it does next would depend on data a graph cannot replay: keep that "
      "computation in tensor ops, or read the value after the step");
}

// Observes and refuses host reads while alive, even when the step throws.
struct Recording {
  explicit Recording(Recorder& r) : recorder(r) {
    DLF_CHECK(recording == nullptr, "graph capture: already capturing on this thread");
    add_observer(&recorder);
    recording = &recorder;
    detail::set_host_read_hook(refuse_host_read);
  }
  ~Recording() {
    detail::set_host_read_hook(nullptr);
    recording = nullptr;
    remove_observer(&recorder);
  }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  Recorder& recorder;
};

}  // namespace

StepFn backward_step(std::function<Tensor(const std::vector<Tensor>& batch)> loss,
                     std::function<void()> after) {
  return [loss = std::move(loss), after = std::move(after)](const std::vector<Tensor>& batch) {
    const Tensor l = loss(batch);
    l.backward();
    if (after) after();
    return std::vector<Tensor>{l};
  };
}

Capture capture(const StepFn& step, const std::vector<Tensor>& inputs, CaptureMode mode) {
  Recorder recorder(inputs, mode);
  std::vector<Tensor> results;
  Generator& random = default_generator();
  const uint64_t drawn = random.offset();
  {
    Recording on(recorder);
    std::optional<detail::AbstractRun> abstract;
    if (mode == CaptureMode::abstract) abstract.emplace(recorder);
    results = step(inputs);
  }
  Graph g = recorder.finish(results);
  if (mode == CaptureMode::abstract) {
    for (const GradBinding& b : g.grads) b.param.set_grad(Tensor());
    random.set_offset(drawn);
  }
  return {.graph = std::move(g), .results = std::move(results)};
}

std::optional<CaptureMode> capturing() {
  return recording ? std::optional(recording->mode) : std::nullopt;
}

void alias_in_capture(const Tensor& param, const Tensor& value) {
  if (recording) recording->alias(param, value);
}

void unalias_in_capture(const Tensor& param) {
  if (recording) recording->unalias(param);
}

bool aliased_in_capture(const Tensor& param) { return recording && recording->aliased(param); }

}  // namespace dlf::graph
