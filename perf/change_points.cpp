#include <dlf/error.h>
#include <dlf/perf/change_points.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace dlf::perf {
namespace {

// Sides of at least this many points are compared with Welch's test (each its own variance: a
// segment that mixes two levels does not hide the change next to it); shorter ones pooled.
constexpr double kWelchPoints = 5;

double mean_of(const std::vector<double>& x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
}

// The continued fraction of the regularised incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < kTiny ? kTiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      const double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      d = 1 / (std::abs(d) < kTiny ? kTiny : d);
      c = 1 + num / c;
      if (std::abs(c) < kTiny) c = kTiny;
      h *= d * c;
      if (odd && std::abs(d * c - 1) < 1e-15) return h;
    }
  }
  return h;
}

// I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// Sums of |x_i - x_j| over rectangles of index pairs, from one table of prefix sums.
class DistanceSums {
 public:
  DistanceSums(const std::vector<double>& x, size_t begin, size_t end) : n_(end - begin + 1) {
    sums_.assign(n_ * n_, 0.0);
    for (size_t i = 1; i < n_; ++i)
      for (size_t j = 1; j < n_; ++j)
        at(i, j) = std::abs(x[begin + i - 1] - x[begin + j - 1]) + at(i - 1, j) + at(i, j - 1) -
                   at(i - 1, j - 1);
  }
  // The sum over i in [r0, r1), j in [c0, c1) (offsets from the segment's start).
  double sum(size_t r0, size_t r1, size_t c0, size_t c1) const {
    return at(r1, c1) - at(r0, c1) - at(r1, c0) + at(r0, c0);
  }

 private:
  double& at(size_t i, size_t j) { return sums_[i * n_ + j]; }
  double at(size_t i, size_t j) const { return sums_[i * n_ + j]; }
  size_t n_;
  std::vector<double> sums_;
};

// Q of a split at `tau` of a segment of `length` points.
double energy(const DistanceSums& d, size_t tau, size_t length) {
  const double n = double(tau), m = double(length - tau);
  const double between = d.sum(0, tau, tau, length);
  const double within_left = d.sum(0, tau, 0, tau) / 2,
               within_right = d.sum(tau, length, tau, length) / 2;
  double e = 2 * between / (n * m);
  if (n > 1) e -= within_left / (n * (n - 1) / 2);
  if (m > 1) e -= within_right / (m * (m - 1) / 2);
  return n * m / (n + m) * e;
}

std::vector<double> slice(const std::vector<double>& x, size_t begin, size_t end) {
  return {x.begin() + std::ptrdiff_t(begin), x.begin() + std::ptrdiff_t(end)};
}

// Whether a change may fall between point i - 1 and point i: between groups only.
bool splits_at(const std::vector<size_t>& groups, size_t i) {
  return groups.empty() || groups[i - 1] != groups[i];
}

// The split at `tau` of [begin, end), tested as the best of the segment's possible splits: the
// t-test's p-value corrected for that many tries (Sidak), which keeps the false-alarm rate of a
// stationary segment near max_p rather than many times it.
ChangePoint assess(const std::vector<double>& x, const std::vector<size_t>& groups, size_t begin,
                   size_t tau, size_t end) {
  const std::vector<double> before = slice(x, begin, tau), after = slice(x, tau, end);
  double tries = 0;
  for (size_t i = begin + 1; i < end; ++i) tries += splits_at(groups, i);
  return {.index = tau,
          .p_value = -std::expm1(tries * std::log1p(-t_test(before, after))),
          .mean_before = mean_of(before),
          .mean_after = mean_of(after),
          .points_before = before.size(),
          .points_after = after.size()};
}

bool passes(const ChangePoint& c, const ChangePointOptions& o) {
  return c.p_value < o.max_p && std::abs(c.change()) >= o.min_change;
}

}  // namespace

double student_t_two_sided(double t, double df) {
  if (!std::isfinite(t)) return 0;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double t_test(const std::vector<double>& a, const std::vector<double>& b) {
  const double na = double(a.size()), nb = double(b.size());
  if (a.empty() || b.empty() || na + nb < 3) return 1;
  const double ma = mean_of(a), mb = mean_of(b);
  double sa = 0, sb = 0;  // squared deviations
  for (double v : a) sa += (v - ma) * (v - ma);
  for (double v : b) sb += (v - mb) * (v - mb);
  if (sa + sb == 0) return ma == mb ? 1 : 0;
  if (na >= kWelchPoints && nb >= kWelchPoints) {  // Welch: each side's own variance
    const double va = sa / (na - 1) / na, vb = sb / (nb - 1) / nb;
    const double df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
    return student_t_two_sided((ma - mb) / std::sqrt(va + vb), df);
  }
  // Pooled: a short side borrows the other side's spread, where its own estimate (of a degree
  // of freedom or two) would make chance look like a change.
  const double df = na + nb - 2;
  return student_t_two_sided((ma - mb) / std::sqrt((sa + sb) / df * (1 / na + 1 / nb)), df);
}

double energy_statistic(const std::vector<double>& x, size_t tau) {
  DLF_CHECK(tau > 0 && tau < x.size(), "energy_statistic: split ", tau,
            " is not inside a series of ", x.size(), " points");
  return energy(DistanceSums(x, 0, x.size()), tau, x.size());
}

std::vector<ChangePoint> e_divisive(const std::vector<double>& x, const ChangePointOptions& o,
                                    const std::vector<size_t>& groups) {
  for (double v : x) DLF_CHECK(std::isfinite(v), "e_divisive: the series has a non-finite value");
  DLF_CHECK(groups.empty() || groups.size() == x.size(), "e_divisive: ", groups.size(),
            " groups for ", x.size(), " points");
  std::vector<size_t> bounds = {0, x.size()};
  for (;;) {
    std::optional<ChangePoint> best;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const size_t begin = bounds[s], end = bounds[s + 1];
      if (end - begin < 3) continue;
      const DistanceSums d(x, begin, end);
      size_t tau = 0;
      double q = -INFINITY;
      for (size_t t = 1; t < end - begin; ++t) {
        if (!splits_at(groups, begin + t)) continue;
        const double e = energy(d, t, end - begin);
        if (e > q) q = e, tau = t;
      }
      if (tau == 0) continue;  // one group: nothing to split
      const ChangePoint c = assess(x, groups, begin, begin + tau, end);
      if (passes(c, o) && (!best || c.p_value < best->p_value)) best = c;
    }
    if (!best) break;
    bounds.insert(std::upper_bound(bounds.begin(), bounds.end(), best->index), best->index);
  }
  // Each point against its final neighbours; one that no longer passes goes, and so on.
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (size_t i = 1; i + 1 < bounds.size(); ++i) {
      if (passes(assess(x, groups, bounds[i - 1], bounds[i], bounds[i + 1]), o)) continue;
      bounds.erase(bounds.begin() + std::ptrdiff_t(i));
      dropped = true;
      break;
    }
  }
  std::vector<ChangePoint> out;
  for (size_t i = 1; i + 1 < bounds.size(); ++i)
    out.push_back(assess(x, groups, bounds[i - 1], bounds[i], bounds[i + 1]));
  return out;
}

}  // namespace dlf::perf
