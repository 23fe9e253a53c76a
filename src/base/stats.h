// Numeric helpers that reproduce Python's statistics exactly enough for records to agree with the
// reference to the last bits: fsum (exactly rounded sum), fmean, stdev, and its percentile rule.
#pragma once

#include <utility>
#include <vector>

namespace vxperf::internal {

// A running exactly rounded sum: value() is math.fsum of everything added so far, whatever the
// order, in a handful of partials (bounded memory for unbounded input).
class ExactSum {
 public:
  void add(double x);
  double value() const;

 private:
  std::vector<double> partials_;
  double special_ = 0.0;
  bool has_special_ = false;
};

// Exactly rounded sum (Shewchuk), as math.fsum.
double fsum(const std::vector<double>& values);
// fsum / n, as statistics.fmean. NaN for no values.
double fmean(const std::vector<double>& values);
// Sample standard deviation, as statistics.stdev; 0 for fewer than two values.
double stdev(const std::vector<double>& values);
// Left-to-right sum, as Python's built-in sum() of floats (3.11).
double plain_sum(const std::vector<double>& values);
// Linear interpolation between closest ranks of sorted values; NaN when empty.
double percentile(const std::vector<double>& sorted, double q);
// The same rule over values in any order, q in [0, 100]; 0 for none. The two closest ranks are put
// in place by selection, not a full sort.
double unsorted_percentile(std::vector<double> values, double q);
// The smallest value whose cumulative weight (`second`), over the values (`first`) in ascending
// order, reaches q percent of the total (q in [0, 100]); unweighted when the weights sum to 0, 0
// for none. Weights that are whole numbers sum exactly in any order: the value the sorted walk
// would find.
double weighted_percentile(std::vector<std::pair<double, double>> values, double q);
// The median of values in any order (the middle two's mean for an even count); NaN when empty.
double median(std::vector<double> values);
// The same, reordering `values` in place (no copy: a caller taking many medians keeps one buffer).
double median_in_place(std::vector<double>& values);
// A loop's ideal step time, as Google's goodput measurement takes it: the mean of the steps at most
// the median plus three median absolute deviations (a compile, a straggling step or a stall left
// out). NaN when empty.
double ideal_step_s(const std::vector<double>& steps);

}  // namespace vxperf::internal
