#include <dlf/train/report_axis.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <dlf/error.h>

namespace dlf::train {

AxisTicks axis_ticks(double lo, double hi, int count, bool whole) {
  DLF_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo < hi && count > 0,
            "axis_ticks: expected finite lo < hi and a positive count, got [", lo, ", ", hi,
            "] and ", count);
  // step = mantissa x 10^power, the mantissa the 1, 2, 5 or 10 nearest the raw one on a log scale
  const double raw = (hi - lo) / count;
  int power = int(std::floor(std::log10(raw)));
  const double error = raw / std::pow(10.0, power);
  int mantissa = error >= std::sqrt(50.0)   ? 10
                 : error >= std::sqrt(10.0) ? 5
                 : error >= std::sqrt(2.0)  ? 2
                                            : 1;
  if (mantissa == 10) mantissa = 1, ++power;
  if (whole && power < 0) mantissa = 1, power = 0;
  // A tick is i x step, computed as i x mantissa / 10^-power below 1 (0.1 is not exact, 10 is).
  const double scale = std::pow(10.0, std::abs(power));
  auto tick = [&](double i) { return power < 0 ? i * mantissa / scale : i * mantissa * scale; };
  const double step = tick(1);
  constexpr double kSlack = 1e-9;  // lo or hi a multiple of the step up to rounding
  const auto first = int64_t(std::floor(lo / step + kSlack)),
             last = int64_t(std::ceil(hi / step - kSlack));
  AxisTicks ticks;
  for (int64_t i = first; i <= last; ++i) {
    ticks.values.push_back(tick(double(i)));
    char label[64];
    std::snprintf(label, sizeof label, "%.*f", std::max(0, -power), ticks.values.back());
    ticks.labels.push_back(label);
  }
  return ticks;
}

}  // namespace dlf::train
