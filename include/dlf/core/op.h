// The op record and the one dispatch function every tensor operation passes through.
//
// An op is described once: name, shape/dtype inference (enough for the meta device), the
// host kernel (used by the cpu and sim devices), and its cost (FLOPs and bytes moved).
// Its backward is registered against the same record by autograd/.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/core/tensor.h>
#include <dlf/device/sim_spec.h>

namespace dlf {
namespace sim {
class ColdStarts;
}  // namespace sim

/// An attribute's value.
using AttrValue =
    std::variant<int64_t, double, bool, std::vector<int64_t>, std::string, DType, Device>;

/// Named op attributes (dims, eps, strides, ...), in insertion order.
class Attrs {
 public:
  Attrs() = default;
  /// From name-value pairs.
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}

  void set(std::string name, AttrValue value);  ///< adds or replaces `name`
  bool has(std::string_view name) const;        ///< whether `name` is set
  /// Integer `name`; a dlf::Error if absent or of another type.
  int64_t i(std::string_view name) const { return get<int64_t>(name); }
  /// Double `name`.
  double f(std::string_view name) const { return get<double>(name); }
  /// Bool `name`.
  bool b(std::string_view name) const { return get<bool>(name); }
  /// the integer list `name`
  const std::vector<int64_t>& ints(std::string_view name) const {
    return get<std::vector<int64_t>>(name);
  }
  /// String `name`.
  const std::string& s(std::string_view name) const { return get<std::string>(name); }
  /// Dtype `name`.
  DType dtype(std::string_view name) const { return get<DType>(name); }
  /// Device `name`.
  Device device(std::string_view name) const { return get<Device>(name); }
  /// Every attribute, in the order set.
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  std::string str() const;  ///< "dim=1, keepdim=true"

 private:
  const AttrValue& find(std::string_view name) const;
  template <typename T>
  const T& get(std::string_view name) const {
    const AttrValue& v = find(name);
    if (const T* p = std::get_if<T>(&v)) return *p;
    throw Error("attribute '" + std::string(name) + "' has another type");
  }
  std::vector<std::pair<std::string, AttrValue>> items_;
};

/// What an op costs: the one formula the profiler, the sim clock and benchmarks all use.
struct Cost {
  double flops = 0;          ///< floating-point operations
  double bytes_read = 0;     ///< bytes read from memory
  double bytes_written = 0;  ///< bytes written to memory
  /// The rows a row-wise kernel works through one by one (attention: a query row of each batch
  /// entry and head), each priced KernelEfficiency::row_overhead beyond its FLOPs; 0 for others.
  double rows = 0;
  double bytes() const { return bytes_read + bytes_written; }  ///< read and written
};

/// The arithmetic an op on `dtype` runs in: which peak rate of a sim device it is timed at.
MathPrecision math_precision(DType dtype);

/// A tensor's shape and dtype without its data (what shape inference works on).
struct TensorMeta {
  Shape shape;                                     ///< its sizes
  DType dtype;                                     ///< its element type
  MemoryFormat format = MemoryFormat::contiguous;  ///< how dispatch lays the output out
};

using Inputs = std::span<const Tensor>;  ///< an op's inputs
using Outputs = std::span<Tensor>;       ///< an op's outputs

/// An op: its name and what it does — inference, kernels, views, cost (see docs/adding_an_op.md).
struct OpDef {
  std::string name = {};  ///< unique, as in errors and profiles ("linear")
  /// Output shapes and dtypes from inputs and attrs; validates them (throws dlf::Error).
  std::function<std::vector<TensorMeta>(Inputs, const Attrs&)> infer = {};
  /// Host kernel: fills the freshly allocated outputs, dense in the format infer gave (or updates
  /// input `inplace` when that is set). Used by the cpu and sim devices.
  std::function<void(Inputs, const Attrs&, Outputs)> kernel = {};
  /// For view ops instead of infer + kernel: builds outputs that alias input 0's storage.
  std::function<std::vector<Tensor>(Inputs, const Attrs&)> view = {};
  /// FLOPs and bytes; when absent, bytes of all inputs and outputs and no FLOPs.
  std::function<Cost(Inputs, const Attrs&, std::span<const Tensor> outputs)> cost = {};
  /// When >= 0 the op writes into that input, which is also its only output.
  int inplace = -1;
  /// Inputs the op also writes, besides input `inplace` (adam_update_'s two moments): what a
  /// graph must know is written there.
  std::vector<int> also_writes = {};
  /// A collective (parallel::Communicator's allreduce, ...): its kernel runs on every device,
  /// meta included (it times the link there, moving no bytes), and charges its own clock —
  /// the device's communication stream — so dispatch charges it no compute time. A graph never
  /// drops, merges, folds or repeats one: its peers wait for it.
  bool collective = false;
  /// For ops whose attrs hold state drawn from a random stream when dispatched (dropout's seed
  /// and offset): draws them afresh, as dispatching the op again would. Graph replay calls it.
  std::function<void(Inputs, Attrs&)> redraw = {};
  /// For element-wise ops: the same arithmetic on `n` dense f32 elements, out[i] =
  /// f(in[0][i], in[1][i], ...), the inputs already broadcast to the output. What graph fusion
  /// chains inside one loop (graph::fuse_elementwise).
  std::function<void(std::span<const float* const> in, float* out, int64_t n, const Attrs&)>
      pointwise = {};
};

/// Sets attrs "seed" and "offset" to `g`'s next `count` counters: how a random op draws its
/// stream state when dispatched, and how its redraw draws it again.
void draw_random_attrs(Generator& g, uint64_t count, Attrs& attrs);

/// Adds an op to the registry; returns a reference that stays valid for the process.
/// Throws dlf::Error when the name is taken.
const OpDef& register_op(OpDef def);
/// The registered op of that name; throws dlf::Error naming it when unknown.
const OpDef& find_op(std::string_view name);
std::vector<const OpDef*> registered_ops();  ///< every op's definition, by name

/// The choke point: validates, allocates outputs on the inputs' device, runs the kernel
/// (not on meta), and informs the observers (profiler, sim clock, autograd, capture).
std::vector<Tensor> dispatch(const OpDef& op, std::vector<Tensor> inputs, Attrs attrs = {});
/// The first output of dispatch().
Tensor dispatch1(const OpDef& op, std::vector<Tensor> inputs, Attrs attrs = {});
/// dispatch() without autocast, shape inference, allocation or autograd: runs `op` into the
/// `outputs` given (a view op builds them), telling the observers and the device clock and
/// trace as dispatch() does. What a graph executor replays a captured op with.
void launch_op(const OpDef& op, Inputs inputs, const Attrs& attrs, std::vector<Tensor>& outputs);

/// The FLOPs and bytes of an op as dispatched (its cost function's).
Cost op_cost(const OpDef& op, Inputs inputs, const Attrs& attrs, std::span<const Tensor> outputs);
/// Whether an op is worth keeping rather than running again: more than 16 FLOPs an output
/// element by its cost formula (matmuls, convolutions, attention; not element-wise ops,
/// normalisations or copies, whose time is their bytes). Selective activation recompute keeps
/// the outputs of such ops; graph rematerialisation makes again only the others.
bool costly_to_recompute(const OpDef& op, Inputs inputs, const Attrs& attrs,
                         std::span<const Tensor> outputs);
/// The time a sim or meta device of `spec` charges an outermost op of that cost: its roofline
/// time at the peak of the outputs' precision and the efficiency of the op's class, plus the
/// overheads (sim::op_seconds) and, given the device's `cold_starts`, the share of a cold start
/// the op's kernel pays there (which they count: sim::ColdStarts::run).
double simulated_seconds(const SimSpec& spec, const OpDef& op, const Cost& cost, Inputs inputs,
                         std::span<const Tensor> outputs, sim::ColdStarts* cold_starts = nullptr);
/// The seconds a sim or meta device charged the outermost op this thread dispatched last: its
/// kernel's (simulated_seconds) or its copy's over the host link. What a DispatchObserver's
/// on_op reads as that op's simulated time.
double last_charged_seconds();

/// Something that watches every dispatched op (the profiler, the sim clock, graph capture).
/// Observers run on the thread that dispatched the op.
class DispatchObserver {
 public:
  virtual ~DispatchObserver() = default;
  /// Called before the op runs (ops may nest: a composite's inner ops come in between).
  virtual void on_op_start(const OpDef& /*op*/) {}
  /// Called after each op dispatched on this thread, with its inputs and outputs.
  virtual void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                     std::span<const Tensor> outputs) = 0;
};
/// Observers are per thread (one rank, one thread). Remove before destroying them.
void add_observer(DispatchObserver* observer);
void remove_observer(DispatchObserver* observer);  ///< stops `observer`

/// Installed by autograd/: records a node for ops whose inputs require grad.
using AutogradHook = void (*)(const OpDef& op, const std::vector<Tensor>& inputs,
                              const Attrs& attrs, std::vector<Tensor>& outputs);
void set_autograd_hook(AutogradHook hook);  ///< installs autograd's recorder (autograd/ does, once)
/// Installed by autograd/ for selective recompute: asked before an outermost op that is neither a
/// view nor in place runs, with the shapes it will make; when it fills `outputs` with the tensors
/// the first forward made (kept for backward), the op does not run again.
using RecomputeHook = bool (*)(const OpDef& op, const std::vector<Tensor>& inputs,
                               const Attrs& attrs, const std::vector<TensorMeta>& metas,
                               std::vector<Tensor>& outputs);
void set_recompute_hook(RecomputeHook hook);  ///< installs it (autograd/ does, once)

}  // namespace dlf
