#include <dlf/plan/run_choice.h>

#include <dlf/device/formatted.h>
#include <dlf/plan/host_memory.h>
#include <dlf/plan/search.h>
#include <dlf/train/trainer.h>

namespace dlf::plan {
namespace {

// Whether `o` keeps what the command line gave of `run`.
bool keeps(const PlanOptions& o, const PlanOptions& run, int64_t micro_batch, const GivenFlags& g) {
  return (!g.recompute || o.recompute == run.recompute) && (!g.zero || o.zero == run.zero) &&
         (!g.offload || o.offload == run.offload) &&
         (!g.micro_batch || o.micro_batch == micro_batch);
}

// A configuration the search picks for a run keeps this share of the device's memory at most:
// a run's peak agrees with its plan to within 5 %, and one planned to the last byte may not fit.
constexpr double kSearchedShare = 0.95;

}  // namespace

RunChoice choose_run(const LayoutQuery& q, const GivenFlags& given) {
  RunChoice choice{.layout = choose_layout(q),
                   .flags = {q.run.recompute, q.run.zero, q.run.offload},
                   .micro_batch = q.micro_batch};
  const bool planned = !choice.layout.table.empty();
  if (choice.layout.refusal.empty() || !planned || q.cpu) return choice;
  const SearchResult found = search(
      {.run = q.run,
       .devices = q.devices,
       .allowed = [&](const PlanOptions& o) { return keeps(o, q.run, q.micro_batch, given); },
       .memory_share = kSearchedShare,
       .host_available = q.host_available > 0 ? q.host_available : available_host_memory()});
  if (!found.best) return choice;
  const Plan& best = *found.best;
  const PlanOptions& o = best.options;
  choice.flags = {o.recompute, o.zero, o.offload};
  choice.micro_batch = o.micro_batch;
  choice.searched = true;
  choice.layout.layout = o.layout;
  choice.layout.refusal.clear();
  choice.layout.table =
      formatted(
          "chosen: %s, %s --micro-batch %lld (peak %s of %s, step %.2f ms): no layout fits "
          "with the memory flags given; this is the fastest of the %lld configurations "
          "that keep them (layouts x --recompute, --zero, --offload x --micro-batch) with "
          "5 %% of the device's memory to spare and room on the host\n",
          train::layout_text(o.layout).c_str(), flags_str(choice.flags).c_str(),
          static_cast<long long>(o.micro_batch),
          format_bytes(double(best.worst.peak_bytes)).c_str(),
          format_bytes(double(q.run.spec.memory_bytes)).c_str(), best.step_s * 1e3,
          static_cast<long long>(found.candidates)) +
      choice.layout.table;
  return choice;
}

std::string out_of_memory_hint(const OutOfMemoryRun& r) {
  const FlagsQuery& q = r.query;
  const parallel::Layout& l = q.layout;
  const std::string hint = fitting_flags_hint(q, r.flags);
  if (r.compile) return hint;
  return hint + compiled_fit_hint(q.spec, q.model, q.batch / l.dp, q.seq, r.precision,
                                  {.dp = l.dp,
                                   .zero = l.dp > 1 ? r.flags.zero : 0,
                                   .tp = l.tp,
                                   .pp = l.pp,
                                   .micro_batch = q.micro_batch,
                                   .schedule = q.schedule,
                                   .virtual_stages = q.virtual_stages,
                                   .bucket_bytes = r.bucket_bytes,
                                   .reduce_in_bf16 = r.reduce_in_bf16},
                                  r.flags.recompute != autograd::Recompute::none ||
                                      r.flags.offload != Offload::none);
}

}  // namespace dlf::plan
