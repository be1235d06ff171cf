#include <dlf/plan/memory_flags.h>

#include <algorithm>

#include <dlf/models/registry.h>
#include <dlf/plan/plan.h>

namespace dlf::plan {

namespace {

// The plan of the query's run with `flags`.
FlagsPlan plan_with(const FlagsQuery& q, const MemoryFlags& flags) {
  FlagsPlan p{.flags = flags};
  if (q.gpt || models::family_of(q.model).gpt) {
    const Plan plan = plan_gpt({.model = q.gpt ? *q.gpt : models::gpt_config(q.model),
                                .layout = q.layout,
                                .spec = q.spec,
                                .global_batch = q.batch,
                                .micro_batch = q.micro_batch,
                                .seq = q.seq,
                                .dtype = q.dtype,
                                .schedule = q.schedule,
                                .virtual_stages = q.virtual_stages,
                                .recompute = flags.recompute,
                                .zero = flags.zero,
                                .offload = flags.offload});
    p.peak_bytes = plan.worst.peak_bytes;
    p.step_s = plan.step_s;
    p.fits = plan.fits;
  } else {
    const ReplicaPlan plan = plan_replica({.model = q.model,
                                           .dp = q.layout.dp,
                                           .spec = q.spec,
                                           .global_batch = q.batch,
                                           .seq = q.seq,
                                           .dtype = q.dtype,
                                           .recompute = flags.recompute,
                                           .zero = flags.zero,
                                           .offload = flags.offload});
    p.peak_bytes = plan.peak_bytes;
    p.step_s = plan.step_s;
    p.fits = plan.fits;
  }
  return p;
}

}  // namespace

std::vector<FlagsPlan> plan_memory_flags(const FlagsQuery& q) {
  const bool gpt = q.gpt || models::family_of(q.model).gpt;
  const bool whole_replicas = q.layout.tp * q.layout.pp == 1;
  if (!gpt && !whole_replicas) return {};
  std::vector<FlagsPlan> plans;
  using autograd::Recompute;
  for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
    for (int zero = 0; zero <= 3; ++zero) {
      if (zero > 0 && q.layout.dp == 1) continue;
      for (Offload offload : {Offload::none, Offload::optimizer, Offload::params}) {
        if (offload == Offload::params && zero < 3) continue;  // ZeRO-3's shards
        plans.push_back(plan_with(q, {recompute, zero, offload}));
      }
    }
  }
  std::stable_sort(plans.begin(), plans.end(), [](const FlagsPlan& a, const FlagsPlan& b) {
    if (a.fits != b.fits) return a.fits;
    return a.fits ? a.step_s < b.step_s : a.peak_bytes < b.peak_bytes;
  });
  return plans;
}

Offload offload_flag(const std::string& name, int zero) {
  const Offload offload = parse_offload(name);
  DLF_CHECK(offload != Offload::params || zero == 3,
            "--offload params keeps ZeRO-3's parameter shards in host memory: it needs --zero 3 "
            "(got --zero ",
            zero, ")");
  return offload;
}

std::string flags_str(const MemoryFlags& f) {
  std::string s = f.recompute == autograd::Recompute::none
                      ? ""
                      : std::string("--recompute ") + autograd::recompute_name(f.recompute);
  if (f.zero > 0) s += std::string(s.empty() ? "" : " ") + "--zero " + std::to_string(f.zero);
  if (f.offload != Offload::none)
    s += std::string(s.empty() ? "" : " ") + "--offload " + offload_name(f.offload);
  return s.empty() ? "none" : s;
}

std::string fitting_flags_hint(const FlagsQuery& q, const MemoryFlags& current) {
  const std::vector<FlagsPlan> plans = plan_memory_flags(q);
  const std::string capacity = format_bytes(double(q.spec.memory_bytes));
  if (plans.empty() || !plans.front().fits) {
    const std::string least = plans.empty()
                                  ? ""
                                  : " (the least, " + flags_str(plans.front().flags) + ", plans " +
                                        format_bytes(double(plans.front().peak_bytes)) + ")";
    return "no --recompute, --zero or --offload makes this layout fit " + capacity + least +
           ": more devices, a smaller batch or a smaller model";
  }
  const FlagsPlan& best = plans.front();
  if (best.flags.recompute == current.recompute && best.flags.zero == current.zero &&
      best.flags.offload == current.offload)
    return "the plan says these flags fit (planned peak " + format_bytes(double(best.peak_bytes)) +
           " of " + capacity + "): the planner missed something here";
  return "planned to fit with " + flags_str(best.flags) + " (peak " +
         format_bytes(double(best.peak_bytes)) + " of " + capacity + ")";
}

}  // namespace dlf::plan
