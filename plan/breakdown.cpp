#include <dlf/autograd/checkpoint.h>
#include <dlf/device/formatted.h>
#include <dlf/plan/breakdown.h>
#include <dlf/plan/plan.h>

#include <algorithm>
#include <vector>

#include "step_meter.h"

namespace dlf::plan {
namespace {

// The compute part of an op the device ran.
StepPart compute_part(std::string_view name) {
  if (autograd::recomputing()) return StepPart::recompute;
  if (name.starts_with("embedding") || name.starts_with("cross_entropy"))
    return StepPart::embedding_loss;
  switch (op_class(name)) {
    case OpClass::matmul:
    case OpClass::conv:
      return StepPart::matmul;
    case OpClass::attention:
    case OpClass::attention_backward:
      return StepPart::attention;
    case OpClass::normalisation:
      return StepPart::normalisation;
    case OpClass::elementwise:
      return StepPart::elementwise;
    case OpClass::optimizer:
      return StepPart::other_compute;
  }
  return StepPart::other_compute;
}

// "EFA (100.0 GB/s a node)": a link for people, the network's bandwidth with it.
std::string link_label(const SimSpec& spec, const std::string& link, bool network) {
  if (!network) return link;
  const bool shared = spec.topology == Topology::torus;
  return formatted("%s (%.1f GB/s a %s)", link.c_str(), spec.network.bandwidth / 1e9,
                   shared ? "node" : "device");
}

// The link a communication part crosses, for people; empty for the others.
std::string part_link(const Plan& plan, StepPart part) {
  const StepBreakdown& b = plan.breakdown;
  const SimSpec& spec = plan.options.spec;
  switch (part) {
    case StepPart::tp_comm:
      return link_label(spec, b.tp_link, b.tp_network);
    case StepPart::pp_p2p:
      return link_label(spec, b.pp_link, b.pp_network);
    case StepPart::dp_comm:
      return link_label(spec, b.dp_link, b.dp_network);
    default:
      return {};
  }
}

// The parts of some time, largest first.
std::vector<StepPart> by_size(const StepBreakdown& b) {
  std::vector<StepPart> parts;
  for (int p = 0; p < kStepParts; ++p)
    if (b.seconds[size_t(p)] > 0) parts.push_back(StepPart(p));
  std::stable_sort(parts.begin(), parts.end(),
                   [&](StepPart x, StepPart y) { return b.at(x) > b.at(y); });
  return parts;
}

}  // namespace

const char* step_part_name(StepPart part) {
  static constexpr std::array<const char*, kStepParts> names = {
      "matmul",    "attention", "normalisation", "element-wise", "embedding+loss", "other compute",
      "recompute", "tp comm",   "pipeline comm", "bubble",       "dp comm",        "optimizer"};
  return names[static_cast<size_t>(part)];
}

double StepBreakdown::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

StepPart StepBreakdown::largest() const {
  return StepPart(std::max_element(seconds.begin(), seconds.end()) - seconds.begin());
}

std::string link_crossed(const SimSpec& spec, int stride, int size, bool* network) {
  const bool nodes = spec.topology == Topology::nodes || spec.topology == Topology::torus;
  const bool across = nodes && int64_t(size - 1) * stride >= spec.node_size;
  if (network) *network = across;
  return across ? spec.network_name : spec.interconnect_name;
}

StepMeter::StepMeter(const parallel::Mesh& mesh, const sim::Timeline& clock)
    : mesh_(mesh),
      clock_(clock),
      lead_(lead()),
      tp_(mesh.tp().seconds()),
      pp_(mesh.pp().seconds()),
      dp_(mesh.dp().seconds()) {
  add_observer(this);
}

void StepMeter::on_op_start(const OpDef&) {
  if (depth_++ == 0) op_start_ = clock_.now(sim::Stream::compute);
}

void StepMeter::on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                      std::span<const Tensor> outputs) {
  if (--depth_ != 0 || op.view) return;
  if (op.collective) {
    const parallel::Communicator* group = &parallel::Communicator::by_handle(attrs.i("group"));
    if (group != &mesh_.tp() && group != &mesh_.pp() && group != &mesh_.dp())
      parts_.seconds[size_t(StepPart::pp_p2p)] += clock_.now(sim::Stream::compute) - op_start_;
    return;
  }
  // the host's ops are not on the device's clock; a copy to or from the device is
  auto on_device = [](const Tensor& t) {
    return t.defined() && t.device().type != DeviceType::cpu;
  };
  if (std::none_of(outputs.begin(), outputs.end(), on_device) &&
      std::none_of(inputs.begin(), inputs.end(), on_device))
    return;
  const size_t part = static_cast<size_t>(compute_part(op.name));
  parts_.seconds[part] += last_charged_seconds();
  const Cost cost = op_cost(op, inputs, attrs, outputs);
  parts_.flops[part] += cost.flops;
  parts_.bytes[part] += cost.bytes();
}

PartSeconds StepMeter::stop() {
  remove_observer(this);
  const parallel::CommSeconds tp = mesh_.tp().seconds(), pp = mesh_.pp().seconds(),
                              dp = mesh_.dp().seconds();
  auto own = [](const parallel::CommSeconds& now, const parallel::CommSeconds& start) {
    return (now.exposed - start.exposed) - (now.queued - start.queued);
  };
  parts_.seconds[size_t(StepPart::tp_comm)] += own(tp, tp_);
  parts_.seconds[size_t(StepPart::pp_p2p)] += own(pp, pp_);
  // The clock's lead over the compute stream: the comm stream's (dp's) or the host's.
  const bool comm_last = clock_.now(sim::Stream::comm) >= clock_.now(sim::Stream::host);
  parts_.seconds[size_t(comm_last ? StepPart::dp_comm : StepPart::other_compute)] += lead() - lead_;
  parts_.seconds[size_t(StepPart::dp_comm)] +=
      (dp.exposed - dp_.exposed) + (tp.queued - tp_.queued) + (pp.queued - pp_.queued);
  return parts_;
}

StepBreakdown step_breakdown(const PlanOptions& o, const PartSeconds& busiest, double fill_s,
                             double optimizer_s) {
  const Layout& l = o.layout;
  StepBreakdown b;
  b.seconds = busiest.seconds;
  b.flops = busiest.flops;
  b.bytes = busiest.bytes;
  b.seconds[size_t(StepPart::bubble)] = fill_s;
  b.seconds[size_t(StepPart::optimizer)] = optimizer_s;
  b.tp_link = link_crossed(o.spec, 1, l.tp, &b.tp_network);
  b.pp_link = link_crossed(o.spec, l.tp, l.pp, &b.pp_network);
  b.dp_link = link_crossed(o.spec, l.tp * l.pp, l.dp, &b.dp_network);
  return b;
}

std::string describe_breakdown(const Plan& plan) {
  const StepBreakdown& b = plan.breakdown;
  const double step = b.total();
  std::string s = "  where the step goes:\n";
  for (StepPart part : by_size(b)) {
    const std::string link = part_link(plan, part);
    s += formatted("    %-15s %9.1f ms %5.1f %%%s%s\n", step_part_name(part), b.at(part) * 1e3,
                   100 * b.at(part) / step, link.empty() ? "" : "  over ", link.c_str());
  }
  return s;
}

std::string limit_line(const Plan& plan) {
  const StepBreakdown& b = plan.breakdown;
  const StepPart part = b.largest();
  const double share = 100 * b.at(part) / b.total();
  const size_t p = static_cast<size_t>(part);
  if (is_compute(part)) {
    // the bound its ops reached nearer: the peak FLOP/s of the plan's precision or the memory's
    const SimSpec& spec = plan.options.spec;
    const double compute =
        b.flops[p] / b.seconds[p] / spec.peak_flops(math_precision(plan.options.dtype));
    const double memory = b.bytes[p] / b.seconds[p] / spec.memory_bandwidth;
    return formatted("limited by %s compute: %.0f %% of the step at %.0f %% of %s (MFU %.1f %%)",
                     step_part_name(part), share, 100 * std::max(compute, memory),
                     compute >= memory ? "peak FLOP/s" : "memory bandwidth", 100 * plan.mfu);
  }
  const std::string link = part_link(plan, part);
  switch (part) {
    case StepPart::bubble:
      return formatted(
          "limited by the pipeline bubble (the fill and drain of %d stages, %ld micro-batch%s a "
          "step): %.0f %% of the step",
          plan.options.layout.pp, long(plan.micro_batches), plan.micro_batches == 1 ? "" : "es",
          share);
    case StepPart::optimizer:
      return formatted("limited by the optimizer step: %.0f %% of the step", share);
    default:
      return formatted("limited by the %s of %s over %s: %.0f %% of the step",
                       part == StepPart::pp_p2p ? "sends" : "collectives",
                       part == StepPart::tp_comm  ? "tp"
                       : part == StepPart::pp_p2p ? "the pipeline"
                                                  : "dp",
                       link.c_str(), share);
  }
}

void add_breakdown_fields(JsonLine& line, const Plan& plan) {
  const StepBreakdown& b = plan.breakdown;
  for (int p = 0; p < kStepParts; ++p) {
    std::string name = step_part_name(StepPart(p));
    std::replace_if(
        name.begin(), name.end(), [](char c) { return c == ' ' || c == '-' || c == '+'; }, '_');
    line.add("part_" + name + "_ms", b.seconds[size_t(p)] * 1e3);
  }
  line.add("tp_link", b.tp_link)
      .add("pp_link", b.pp_link)
      .add("dp_link", b.dp_link)
      .add("limited_by", step_part_name(b.largest()))
      .add("limited_share", b.at(b.largest()) / b.total())
      .add("limit", limit_line(plan));
}

}  // namespace dlf::plan
