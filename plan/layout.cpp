#include <dlf/plan/layout.h>

#include <algorithm>
#include <cstdio>

#include <dlf/models/registry.h>
#include <dlf/plan/host_memory.h>
#include <dlf/train/run.h>

namespace dlf::plan {
namespace {

// A layout given (or implied: ZeRO-2 and -3, one device, a family without a planner): checked
// against the devices and this machine's memory.
parallel::Layout given_layout(const LayoutQuery& q, bool gpt, double available) {
  const int tp = std::max(q.tp, 1), pp = std::max(q.pp, 1);
  DLF_CHECK(q.dp > 0 || q.devices % (tp * pp) == 0, "tp ", tp, " x pp ", pp, " = ", tp * pp,
            " ranks per replica do not divide the ", q.devices, " devices");
  const int dp = q.dp > 0 ? q.dp : q.devices / (tp * pp);
  DLF_CHECK(dp * tp * pp == q.devices, "dp ", dp, " x tp ", tp, " x pp ", pp, " = ", dp * tp * pp,
            " ranks, but there are ", q.devices, " devices");
  const parallel::Layout layout{.dp = dp, .tp = tp, .pp = pp};
  const std::string what = q.model + " as " + train::layout_text(layout);
  const int64_t batch = q.run.global_batch;
  if (gpt && batch % dp == 0) {
    PlanOptions options = q.run;
    options.layout = layout;
    options.micro_batch =
        q.micro_batch > 0 ? q.micro_batch : train::default_micro_batch(layout, batch);
    check_host_fits(host_memory_needed(plan_gpt(options)), what, available);
  } else {
    check_host_fits(host_memory_needed(train::parameter_count(q.model), dp), what, available);
  }
  return layout;
}

}  // namespace

LayoutChoice choose_layout(const LayoutQuery& q) {
  const bool gpt = bool(models::family_of(q.model).gpt);
  const double available = q.host_available > 0 ? q.host_available : available_host_memory();
  if (q.dp > 0 || q.tp > 0 || q.pp > 0 || q.run.zero >= 2 || q.devices == 1 || !gpt)
    return {given_layout(q, gpt, available), "", ""};
  std::vector<Plan> plans = rank_layouts(q.run, q.devices);
  auto host_ok = [&](const Plan& p) { return host_fits(host_memory_needed(p), available); };
  if (q.cpu) {  // simulated speed means nothing here: the most data parallelism that fits
    std::stable_sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
      return a.options.layout.dp > b.options.layout.dp;
    });
  }
  const auto chosen = std::find_if(plans.begin(), plans.end(),
                                   [&](const Plan& p) { return host_ok(p) && (q.cpu || p.fits); });
  LayoutChoice choice;
  auto add = [&choice](const char* format, auto... values) {
    char line[256];
    std::snprintf(line, sizeof line, format, values...);
    choice.table += line;
  };
  if (q.cpu) {
    add("layout of %d cpu ranks (they share this machine's cores: the most data parallelism that "
        "fits its memory, %s available):\n",
        q.devices, format_bytes(available).c_str());
  } else {
    add("layout planned on %d meta devices of %s (predicted step, peak per device, host memory "
        "of the run; %s available):\n",
        q.devices, q.run.spec.name.c_str(), format_bytes(available).c_str());
  }
  for (const Plan& p : plans) {
    const parallel::Layout& l = p.options.layout;
    std::string notes;
    if (!q.cpu && !p.fits) notes += "  does not fit the device";
    if (!host_ok(p)) notes += "  does not fit the host";
    if (&p == &*chosen) notes += "  <- chosen";
    add("  dp %d x tp %d x pp %d  %9.2f ms  %10s  %10s%s\n", l.dp, l.tp, l.pp, p.step_s * 1e3,
        format_bytes(double(p.worst.peak_bytes)).c_str(),
        format_bytes(host_memory_needed(p)).c_str(), notes.c_str());
  }
  if (chosen != plans.end()) {
    choice.layout = chosen->options.layout;
    return choice;
  }
  const auto least = std::min_element(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    return host_memory_needed(a) < host_memory_needed(b);
  });
  choice.refusal =
      host_refusal(host_memory_needed(*least),
                   q.model + " on " + std::to_string(q.devices) + " devices (at best, as " +
                       train::layout_text(least->options.layout) + ")",
                   available);
  if (choice.refusal.empty()) {
    choice.refusal = q.model + " does not fit " + std::to_string(q.devices) + " devices of " +
                     q.run.spec.name +
                     " in any dp x tp x pp layout: use more devices or a smaller --batch";
  }
  return choice;
}

}  // namespace dlf::plan
