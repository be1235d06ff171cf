#include <dlf/error.h>
#include <dlf/perf/compare.h>

namespace dlf::perf {

std::string verdict_of(const RatioEstimate& r, double min_change) {
  if (r.low > 1 && r.ratio >= 1 + min_change) return "slower";
  if (r.high < 1 && r.ratio <= 1 - min_change) return "faster";
  return "same";
}

std::vector<CaseComparison> compare_builds(
    const std::filesystem::path& build_a, const std::filesystem::path& build_b,
    const std::vector<SuiteCase>& cases, const CompareOptions& o,
    const std::function<void(const std::string&)>& progress) {
  DLF_CHECK(o.rounds >= 2, "a comparison needs at least 2 rounds (--rounds)");
  DLF_CHECK(o.metric == "time" || o.metric == "cpu_time", "no metric '", o.metric,
            "' to decide on (time or cpu_time)");
  std::vector<CaseComparison> out;
  std::vector<const SuiteCase*> compared;
  for (const SuiteCase& c : cases) {
    if (c.peak) continue;
    std::string why_not = cannot_run(build_a, c, o.run);
    if (why_not.empty()) why_not = cannot_run(build_b, c, o.run);
    if (!why_not.empty()) {
      if (progress) progress("left out: " + c.name + ": " + why_not);
      continue;
    }
    out.emplace_back().case_name = c.name;
    compared.push_back(&c);
  }
  RunOptions run_b = o.run;
  for (const auto& [key, value] : o.env_b) run_b.env[key] = value;
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t i = 0; i < compared.size(); ++i) {
      CaseComparison& c = out[i];
      for (int side : round % 2 == 0 ? std::vector{0, 1} : std::vector{1, 0}) {
        const CaseResults r =
            run_case(side == 0 ? build_a : build_b, *compared[i], side == 0 ? o.run : run_b);
        (side == 0 ? c.a_time : c.b_time).push_back(r.time.value);
        (side == 0 ? c.a_cpu : c.b_cpu).push_back(r.cpu_time.value);
      }
    }
    if (progress)
      progress("round " + std::to_string(round + 1) + " of " + std::to_string(o.rounds));
  }
  for (CaseComparison& c : out) {
    c.time = paired_ratio(c.a_time, c.b_time, o.confidence);
    c.cpu_time = paired_ratio(c.a_cpu, c.b_cpu, o.confidence);
    c.verdict = verdict_of(o.metric == "time" ? c.time : c.cpu_time, o.min_change);
  }
  return out;
}

}  // namespace dlf::perf
