// The op registry and the dispatch choke point.
#include <dlf/core/autocast.h>
#include <dlf/core/op.h>

#include <dlf/device/device_memory.h>
#include <dlf/device/host.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/threads.h>
#include <dlf/device/trace.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/abstract_run.h"

namespace dlf {

// ---- Attrs ----

void Attrs::set(std::string name, AttrValue value) {
  for (auto& [k, v] : items_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(value));
}

bool Attrs::has(std::string_view name) const {
  return std::any_of(items_.begin(), items_.end(),
                     [&](const auto& kv) { return kv.first == name; });
}

const AttrValue& Attrs::find(std::string_view name) const {
  for (const auto& [k, v] : items_) {
    if (k == name) return v;
  }
  throw Error("missing attribute '" + std::string(name) + "'");
}

std::string Attrs::str() const {
  std::ostringstream os;
  for (size_t i = 0; i < items_.size(); ++i) {
    os << (i ? ", " : "") << items_[i].first << "=";
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<int64_t>>)
            os << shape_str(v);
          else if constexpr (std::is_same_v<V, bool>)
            os << (v ? "true" : "false");
          else if constexpr (std::is_same_v<V, DType>)
            os << dtype_name(v);
          else if constexpr (std::is_same_v<V, Device>)
            os << v.str();
          else
            os << v;
        },
        items_[i].second);
  }
  return os.str();
}

void draw_random_attrs(Generator& g, uint64_t count, Attrs& attrs) {
  attrs.set("seed", static_cast<int64_t>(g.seed()));
  attrs.set("offset", static_cast<int64_t>(g.take(count)));
}

// ---- registry ----

namespace {
struct Registry {
  std::mutex mutex;
  std::deque<OpDef> ops;  // deque: references stay valid as it grows
  std::map<std::string, const OpDef*, std::less<>> by_name;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

const OpDef& register_op(OpDef def) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  DLF_CHECK(!r.by_name.contains(def.name), "op '", def.name, "' is registered twice");
  DLF_CHECK(def.view || (def.infer && def.kernel), "op '", def.name,
            "' needs either a view function or infer + kernel");
  const OpDef& stored = r.ops.emplace_back(std::move(def));
  r.by_name.emplace(stored.name, &stored);
  return stored;
}

const OpDef& find_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_name.find(name);
  DLF_CHECK(it != r.by_name.end(), "unknown op '", name, "'");
  return *it->second;
}

std::vector<const OpDef*> registered_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const OpDef*> out;
  for (const auto& [name, op] : r.by_name) out.push_back(op);
  return out;
}

// ---- observers and hooks ----

namespace {
thread_local std::vector<DispatchObserver*> observers;
thread_local bool abstract = false;  // inside a detail::AbstractRun
AutogradHook autograd_hook = nullptr;
RecomputeHook recompute_hook = nullptr;
}  // namespace

void add_observer(DispatchObserver* observer) { observers.push_back(observer); }
void remove_observer(DispatchObserver* observer) { std::erase(observers, observer); }

detail::AbstractRun::AbstractRun(DispatchObserver& observer) : saved_(std::move(observers)) {
  DLF_CHECK(!abstract, "an abstract run is already under way on this thread");
  observers = {&observer};
  abstract = true;
}

detail::AbstractRun::~AbstractRun() {
  abstract = false;
  observers = std::move(saved_);
}
void set_autograd_hook(AutogradHook hook) { autograd_hook = hook; }
void set_recompute_hook(RecomputeHook hook) { recompute_hook = hook; }

// ---- dispatch ----

MathPrecision math_precision(DType dtype) {
  if (dtype == DType::f64) return MathPrecision::f64;
  if (dtype == DType::bf16) return MathPrecision::bf16;
  return MathPrecision::f32;
}

Cost op_cost(const OpDef& op, Inputs inputs, const Attrs& attrs, std::span<const Tensor> outputs) {
  if (op.cost) return op.cost(inputs, attrs, outputs);
  Cost c;
  if (op.view) return c;  // a view moves no bytes
  for (const Tensor& t : inputs) c.bytes_read += t.defined() ? static_cast<double>(t.nbytes()) : 0;
  for (const Tensor& t : outputs) c.bytes_written += static_cast<double>(t.nbytes());
  return c;
}

bool costly_to_recompute(const OpDef& op, Inputs inputs, const Attrs& attrs,
                         std::span<const Tensor> outputs) {
  constexpr double kFlopsPerElement = 16;
  double elements = 0;
  for (const Tensor& t : outputs) elements += static_cast<double>(t.numel());
  return op_cost(op, inputs, attrs, outputs).flops > kFlopsPerElement * elements;
}

double simulated_seconds(const SimSpec& spec, const OpDef& op, const Cost& cost, Inputs inputs,
                         std::span<const Tensor> outputs, sim::ColdStarts* cold_starts) {
  const DType dtype = outputs.empty() ? inputs[0].dtype() : outputs[0].dtype();
  const double bytes = cost.bytes();
  const double cold = cold_starts ? cold_starts->run(op.name, bytes, spec.cold_bytes) : 0;
  return sim::op_seconds(spec, cost.flops, bytes, math_precision(dtype), op_class(op.name),
                         cost.rows, cold);
}

namespace {
Device output_device(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  if (attrs.has("device")) return attrs.device("device");
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (first == nullptr) {
      first = &t;
    } else {
      DLF_CHECK(t.device() == first->device(), op.name, ": inputs are on different devices (",
                first->device().str(), " and ", t.device().str(), "); move them with .to()");
    }
  }
  DLF_CHECK(first != nullptr, op.name, ": needs a 'device' attribute or a defined input");
  return first->device();
}

// "matmul [8, 256, 384] [384, 1152]": what a trace span is called.
std::string span_name(const OpDef& op, Inputs inputs) {
  std::ostringstream name;
  name << op.name;
  for (const Tensor& t : inputs) name << ' ' << (t.defined() ? shape_str(t.shape()) : "-");
  return name.str();
}

// A span's args: the op's FLOPs and bytes.
std::string cost_args(const Cost& c) {
  return detail::concat("\"flops\":", c.flops, ",\"bytes\":", c.bytes());
}

// Advances a sim or meta device's compute stream by the op's roofline time; returns it.
double charge_simulated(Device device, const OpDef& op, Inputs inputs, const Attrs& attrs,
                        std::span<const Tensor> outputs) {
  const Cost c = op_cost(op, inputs, attrs, outputs);
  const double seconds =
      simulated_seconds(sim::spec_of(device), op, c, inputs, outputs, &sim::cold_starts(device));
  const double start = sim::timeline(device).run(sim::Stream::compute, seconds);
  if (trace::enabled()) {
    trace::span(device, sim::Stream::compute, span_name(op, inputs), start, seconds, cost_args(c));
  }
  return seconds;
}

// A copy between a sim or meta device and the host (an op whose input is on another device
// than its output: a copy) goes over the device's host link, on its host stream; returns its
// seconds there (nothing for any other op).
std::optional<double> charge_host_copy(Device device, const OpDef& op, Inputs inputs,
                                       std::span<const Tensor> outputs) {
  if (inputs.empty() || !inputs[0].defined() || outputs.empty()) return std::nullopt;
  const Device from = inputs[0].device();
  const bool up = is_host(from) && !is_host(device);
  const bool down = is_host(device) && !is_host(from);
  if (!up && !down) return std::nullopt;
  const Device side = up ? device : from;
  const double bytes = double(outputs[0].nbytes());
  const double start = sim::host_copy(side, bytes, up);
  sim::cold_starts(side).moved(bytes);
  const double seconds = sim::timeline(side).now(sim::Stream::host) - start;
  if (trace::enabled()) {
    trace::span(side, sim::Stream::host, span_name(op, inputs) + (up ? " to device" : " to host"),
                start, seconds, detail::concat("\"bytes\":", bytes));
  }
  return seconds;
}

// A cpu op's span on the calling thread's track, from `began` (trace::now()) to now, and the
// memory in use after it.
void trace_cpu(Device device, const OpDef& op, Inputs inputs, const Attrs& attrs,
               std::span<const Tensor> outputs, double began) {
  const Cost c = op_cost(op, inputs, attrs, outputs);
  const double end = trace::now();
  trace::span(device, sim::Stream::compute, span_name(op, inputs), began, end - began,
              cost_args(c));
  trace::counter(device, "memory", end, double(allocator_for(device).stats().live_bytes));
}

// Composite ops dispatch inner ops; only the outermost op is charged to the device clock (its
// cost formula covers the whole op).
thread_local int dispatch_depth = 0;
thread_local double charged_seconds = 0;  // last_charged_seconds()
struct DepthGuard {
  DepthGuard() { ++dispatch_depth; }
  ~DepthGuard() { --dispatch_depth; }
};
}  // namespace

bool detail::running_kernel() { return dispatch_depth > 0; }

double last_charged_seconds() { return charged_seconds; }

void launch_op(const OpDef& op, Inputs inputs, const Attrs& attrs, std::vector<Tensor>& outputs) {
  for (DispatchObserver* o : observers) o->on_op_start(op);
  if (op.view) {
    outputs = op.view(inputs, attrs);
  } else {
    DepthGuard depth;
    const Device device = outputs.empty() ? inputs[0].device() : outputs[0].device();
    const bool traced_cpu = device.type == DeviceType::cpu && dispatch_depth == 1 && !abstract &&
                            !op.collective && trace::enabled();
    const double began = traced_cpu ? trace::now() : 0;
    if ((device.has_data() || op.collective) && !abstract) {
      detail::acquire_kernel_slot();
      detail::apply_num_threads();
      op.kernel(inputs, attrs, outputs);
    }
    if (op.inplace >= 0) outputs[0].storage()->bump_version();
    for (int i : op.also_writes) inputs[size_t(i)].storage()->bump_version();
    if (dispatch_depth == 1 && !abstract && !op.collective) {
      const std::optional<double> copy = charge_host_copy(device, op, inputs, outputs);
      charged_seconds = copy ? *copy
                        : device.type != DeviceType::cpu
                            ? charge_simulated(device, op, inputs, attrs, outputs)
                            : 0;
    } else if (dispatch_depth == 1 && !abstract && device.type != DeviceType::cpu) {
      // A collective charges the comm stream itself; its bytes still pass through the caches.
      sim::cold_starts(device).moved(op_cost(op, inputs, attrs, outputs).bytes());
    }
    if (traced_cpu) trace_cpu(device, op, inputs, attrs, outputs, began);
  }
  for (DispatchObserver* o : observers) o->on_op(op, inputs, attrs, outputs);
}

namespace {
// An abstract run's output: a storage of its size that holds no bytes (torch.compile's fake
// tensors), so that tracing a step takes none of the device's memory.
Tensor without_bytes(const TensorMeta& m, Device device) {
  static const auto borrowed_from_nothing = std::make_shared<int>(0);  // never freed
  auto storage = std::make_shared<Storage>(nullptr, size_t(numel(m.shape)) * dtype_size(m.dtype),
                                           borrowed_from_nothing, device);
  return Tensor(std::move(storage), m.shape, dense_strides(m.shape, m.format), 0, m.dtype);
}
}  // namespace

std::vector<Tensor> dispatch(const OpDef& op, std::vector<Tensor> inputs, Attrs attrs) {
  detail::apply_autocast(op, inputs);  // its casts are ops of their own, dispatched first
  std::vector<Tensor> outputs;
  if (!op.view) {
    const Device device = output_device(op, inputs, attrs);
    std::vector<TensorMeta> metas = op.infer(inputs, attrs);
    if (op.inplace < 0 && recompute_hook != nullptr && !detail::running_kernel() &&
        recompute_hook(op, inputs, attrs, metas, outputs)) {
      if (autograd_hook != nullptr) autograd_hook(op, inputs, attrs, outputs);
      return outputs;
    }
    if (op.inplace >= 0) {
      outputs = {inputs[op.inplace]};
    } else {
      outputs.reserve(metas.size());
      for (const TensorMeta& m : metas)
        outputs.push_back(abstract ? without_bytes(m, device)
                                   : Tensor::empty(m.shape, m.dtype, device, m.format));
    }
  }
  launch_op(op, inputs, attrs, outputs);
  if (autograd_hook != nullptr) autograd_hook(op, inputs, attrs, outputs);
  return outputs;
}

Tensor dispatch1(const OpDef& op, std::vector<Tensor> inputs, Attrs attrs) {
  return dispatch(op, std::move(inputs), std::move(attrs))[0];
}

}  // namespace dlf
