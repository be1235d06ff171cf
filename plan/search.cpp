#include <dlf/plan/search.h>

#include <algorithm>
#include <tuple>

#include <dlf/plan/host_memory.h>
#include <dlf/plan/memory_flags.h>

namespace dlf::plan {
namespace {

using autograd::Recompute;

// How much a plan saves memory at the cost of time: the tie-break (less first).
int saving(const PlanOptions& o) {
  const int recompute = o.recompute == Recompute::none        ? 0
                        : o.recompute == Recompute::selective ? 1
                                                              : 2;
  return recompute * 100 + o.zero * 10 + static_cast<int>(o.offload);
}

// The layouts of the devices that divide the model and the batch, as rank_layouts() has them.
std::vector<parallel::Layout> layouts(const SearchOptions& s) {
  const PlanOptions& o = s.run;
  std::vector<parallel::Layout> all;
  for (int tp = 1; tp <= s.devices; ++tp) {
    for (int pp = 1; tp * pp <= s.devices; ++pp) {
      const parallel::Layout l{.dp = s.devices / (tp * pp), .tp = tp, .pp = pp};
      if (l.devices() != s.devices || o.model.heads % tp != 0 ||
          pp * o.virtual_stages > o.model.layers + 1 || o.global_batch % l.dp != 0)
        continue;
      if (o.schedule == PipelineSchedule::interleaved && pp < 2) continue;
      all.push_back(l);
    }
  }
  return all;
}

// The micro-batches a replica's rows split into that the schedule can run, smallest first.
std::vector<int64_t> micro_batches(const PlanOptions& o, const parallel::Layout& l) {
  const int64_t rows = o.global_batch / l.dp;
  std::vector<int64_t> all;
  for (int64_t micro = 1; micro <= rows; ++micro) {
    if (rows % micro != 0) continue;
    try {
      parallel::check_schedule(o.schedule, o.virtual_stages, l.pp, rows / micro);
    } catch (const Error&) {
      continue;
    }
    all.push_back(micro);
  }
  return all;
}

// The memory flags of a layout: ZeRO needs dp > 1, offloaded parameters ZeRO-3.
std::vector<MemoryFlags> zero_and_offload(const parallel::Layout& l) {
  std::vector<MemoryFlags> all;
  for (int zero = 0; zero <= (l.dp > 1 ? 3 : 0); ++zero)
    for (Offload offload : {Offload::none, Offload::optimizer, Offload::params})
      if (offload != Offload::params || zero == 3)
        all.push_back({.zero = zero, .offload = offload});
  return all;
}

PlanOptions configured(const PlanOptions& run, const parallel::Layout& l, int64_t micro,
                       Recompute recompute, const MemoryFlags& flags) {
  PlanOptions o = run;
  o.layout = l;
  o.micro_batch = micro;
  o.recompute = recompute;
  o.zero = flags.zero;
  o.offload = flags.offload;
  return o;
}

constexpr Recompute kRecomputes[] = {Recompute::none, Recompute::selective, Recompute::full};

bool allowed(const SearchOptions& s, const PlanOptions& o) { return !s.allowed || s.allowed(o); }

// Whether `p` fits the devices with memory_share of their memory.
bool fits(const SearchOptions& s, const Plan& p) {
  const double memory = double(s.run.spec.memory_bytes);
  return p.fits && (memory == 0 || s.memory_share >= 1 ||
                    double(p.worst.peak_bytes) <= s.memory_share * memory);
}

}  // namespace

std::vector<PlanOptions> configurations(const SearchOptions& s) {
  DLF_CHECK(s.run.global_batch > 0, "search: the global batch must be set");
  std::vector<PlanOptions> all;
  for (const parallel::Layout& l : layouts(s))
    for (int64_t micro : micro_batches(s.run, l))
      for (Recompute recompute : kRecomputes)
        for (const MemoryFlags& flags : zero_and_offload(l))
          if (PlanOptions o = configured(s.run, l, micro, recompute, flags); allowed(s, o))
            all.push_back(std::move(o));
  return all;
}

bool better(const Plan& a, const Plan& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.fits && a.step_s != b.step_s) return a.step_s < b.step_s;
  if (!a.fits && a.worst.peak_bytes != b.worst.peak_bytes)
    return a.worst.peak_bytes < b.worst.peak_bytes;
  const PlanOptions &x = a.options, &y = b.options;
  return std::make_tuple(saving(x), x.layout.tp, x.layout.pp, -x.micro_batch) <
         std::make_tuple(saving(y), y.layout.tp, y.layout.pp, -y.micro_batch);
}

SearchResult search(const SearchOptions& s) {
  SearchResult result;
  const std::vector<parallel::Layout> all_layouts = layouts(s);
  DLF_CHECK(std::ranges::any_of(all_layouts,
                                [&](const auto& l) { return !micro_batches(s.run, l).empty(); }),
            "no dp x tp x pp layout of ", s.devices, " devices divides ", s.run.model.name, " (",
            s.run.model.heads, " heads, ", s.run.model.layers, " layers) and a batch of ",
            s.run.global_batch);
  result.candidates = int64_t(configurations(s).size());
  StageCache cache;
  bool planned_any = false;
  std::vector<Plan> fitting;  // estimated to fit, and the host's memory with them
  // Every allowed ZeRO stage and offload of one layout, micro-batch and recompute: whether any
  // fits, or nothing when none is allowed.
  auto plan_all = [&](const parallel::Layout& l, int64_t micro,
                      Recompute recompute) -> std::optional<bool> {
    std::optional<bool> any_fits;
    for (const MemoryFlags& flags : zero_and_offload(l)) {
      PlanOptions o = configured(s.run, l, micro, recompute, flags);
      if (!allowed(s, o)) continue;
      o.estimate = true;
      Plan p = plan_gpt(o, &cache);
      ++result.planned;
      const bool fit = fits(s, p);
      any_fits = any_fits.value_or(false) || fit;
      if (!planned_any || p.worst.peak_bytes < result.least.worst.peak_bytes) result.least = p;
      planned_any = true;
      const bool host = s.host_available <= 0 || host_fits(host_memory_needed(p), s.host_available);
      if (fit && host) fitting.push_back(std::move(p));
    }
    return any_fits;
  };
  for (const parallel::Layout& l : all_layouts) {
    const std::vector<int64_t> micros = micro_batches(s.run, l);
    if (micros.empty()) continue;
    const int64_t whole = s.run.global_batch / l.dp;  // one micro-batch: nothing accumulated
    // the smaller micro-batches a less saving recompute may still fit, and the whole replica's
    size_t limit = micros.size();
    bool whole_may = micros.back() == whole;
    // (a configuration not allowed tells nothing: it neither fits nor bounds)
    for (auto r = std::rbegin(kRecomputes); r != std::rend(kRecomputes); ++r) {
      for (size_t i = 0; i < limit; ++i) {
        if (micros[i] == whole) continue;
        if (plan_all(l, micros[i], *r) == false) {
          limit = i;
          break;
        }
      }
      whole_may = whole_may && plan_all(l, whole, *r) != false;
    }
  }
  // The estimates chose; whole stages confirm, best first, until one fits.
  auto confirmed = [&](const Plan& estimate) {
    PlanOptions o = estimate.options;
    o.estimate = false;
    return plan_gpt(o, &cache);
  };
  std::sort(fitting.begin(), fitting.end(), better);
  for (const Plan& estimate : fitting) {
    Plan p = confirmed(estimate);
    if (fits(s, p) &&
        (s.host_available <= 0 || host_fits(host_memory_needed(p), s.host_available))) {
      result.best = std::move(p);
      break;
    }
  }
  if (planned_any) result.least = confirmed(result.least);
  result.stage_runs = cache.runs_made();
  return result;
}

std::string configuration_flags(const Plan& p) {
  const PlanOptions& o = p.options;
  const std::string flags = flags_str({o.recompute, o.zero, o.offload});
  return "--tp " + std::to_string(o.layout.tp) + " --pp " + std::to_string(o.layout.pp) +
         (flags == "none" ? "" : " " + flags) + " --micro-batch " + std::to_string(o.micro_batch);
}

}  // namespace dlf::plan
