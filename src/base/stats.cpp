#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vxperf::internal {

void ExactSum::add(double x) {
  // Shewchuk's algorithm with non-overlapping partials, as CPython's math.fsum.
  if (!std::isfinite(x)) {
    special_ = has_special_ ? special_ + x : x;
    has_special_ = true;
    return;
  }
  std::size_t i = 0;
  for (double y : partials_) {
    if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
    double hi = x + y;
    double lo = y - (hi - x);
    if (lo != 0.0) partials_[i++] = lo;
    x = hi;
  }
  partials_.resize(i);
  partials_.push_back(x);
}

double ExactSum::value() const {
  if (has_special_) return special_;
  if (partials_.empty()) return 0.0;
  // Sum from the top, correcting the final rounding as CPython does.
  std::size_t n = partials_.size();
  double hi = partials_[--n];
  double lo = 0.0;
  while (n > 0) {
    double x = hi;
    double y = partials_[--n];
    hi = x + y;
    double yr = hi - x;
    lo = y - yr;
    if (lo != 0.0) break;
  }
  if (n > 0 && ((lo < 0.0 && partials_[n - 1] < 0.0) || (lo > 0.0 && partials_[n - 1] > 0.0))) {
    double y = lo * 2.0;
    double x = hi + y;
    double yr = x - hi;
    if (y == yr) hi = x;
  }
  return hi;
}

double fsum(const std::vector<double>& values) {
  ExactSum sum;
  for (double x : values) sum.add(x);
  return sum.value();
}

double fmean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return fsum(values) / static_cast<double>(values.size());
}

double stdev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  double mean = fmean(values);
  std::vector<double> squares;
  squares.reserve(values.size());
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) {
    squares.push_back((v - mean) * (v - mean));
    deviations.push_back(v - mean);
  }
  // Corrects for the rounding of the mean, as the two-pass formula with compensation does.
  double correction = fsum(deviations);
  double ss = fsum(squares) - correction * correction / static_cast<double>(values.size());
  if (ss < 0.0) ss = 0.0;
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

double plain_sum(const std::vector<double>& values) {
  double total = 0.0;
  for (double v : values) total += v;
  return total;
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (sorted.size() == 1) return sorted[0];
  double pos = static_cast<double>(sorted.size() - 1) * q / 100.0;
  auto low = static_cast<std::size_t>(pos);
  std::size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (pos - static_cast<double>(low));
}

double median(std::vector<double> values) { return median_in_place(values); }

double median_in_place(std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(),
                                         values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

double ideal_step_s(const std::vector<double>& steps) {
  if (steps.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double mid = median(steps);
  std::vector<double> deviations;
  deviations.reserve(steps.size());
  for (double s : steps) deviations.push_back(std::fabs(s - mid));
  const double limit = mid + 3.0 * median(std::move(deviations));
  double sum = 0.0;
  std::size_t kept = 0;
  for (double s : steps) {
    if (s <= limit) {
      sum += s;
      ++kept;
    }
  }
  return sum / static_cast<double>(kept);  // the median itself is always kept
}

double unsorted_percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  // The rule reads only the two closest ranks: each put in its place by selection, not a full
  // sort (a million requests' sort, twice, was a tenth of the time). Their position as the rule
  // computes it.
  double pos = static_cast<double>(values.size() - 1) * q / 100.0;
  auto low = values.begin() + static_cast<std::ptrdiff_t>(pos);
  std::nth_element(values.begin(), low, values.end());
  if (low + 1 != values.end()) std::iter_swap(low + 1, std::min_element(low + 1, values.end()));
  return percentile(values, q);
}

// Found by selection, not by a full sort (the run's and every rank's two sorts were a tenth of a
// report's time, all of it after the parse): each pass splits the range that holds it into
// values below, equal to and above a pivot, summing the weights as it goes, and keeps the part the
// value is in (one pass over half the range, on average, where a selection of its middle and a sum
// over half were several). The weights are step counts, whole numbers: their sums are exact in any
// order, so the selection finds the value the sorted walk would.
double weighted_percentile(std::vector<std::pair<double, double>> values, double q) {
  if (values.empty()) return 0;
  double total = 0;
  for (const auto& v : values) total += v.second;
  if (total <= 0) {
    std::vector<double> plain;
    plain.reserve(values.size());
    for (const auto& v : values) plain.push_back(v.first);
    return unsorted_percentile(std::move(plain), q);
  }
  double target = q / 100.0 * total;
  auto first = values.begin(), last = values.end();
  double before = 0;  // the weight of every value below `first`
  while (first != last) {
    // The median of the first, middle and last values: a sorted or reversed range splits evenly.
    double a = first->first, b = first[(last - first) / 2].first, c = (last - 1)->first;
    double pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
    // [first, low) below the pivot, [low, it) equal to it, [high, last) above it.
    auto low = first, it = first, high = last;
    double below = 0, equal = 0;
    while (it != high) {
      if (it->first < pivot) {
        below += it->second;
        std::iter_swap(low++, it++);
      } else if (pivot < it->first) {
        std::iter_swap(it, --high);
      } else {
        equal += it->second;
        ++it;
      }
    }
    if (before + below >= target) {
      last = low;
    } else if (before + below + equal >= target) {
      return pivot;
    } else {
      before += below + equal;
      first = high;
    }
  }
  // Not reached by rounding: the largest value.
  return std::max_element(values.begin(), values.end())->first;
}

}  // namespace vxperf::internal
