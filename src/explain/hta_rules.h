// HTA's small rules, each written once: a kernel's type from its name, the union of intervals,
// numpy's rounding and quantile (docs/EXPLAIN.md, "HTA's definitions").
#pragma once

#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

namespace vxperf::explain {

enum class KernelType { kComputation = 0, kCommunication = 1, kMemory = 2, kOther = 3 };

const char* kernel_type_name(KernelType t);

// HTA's get_kernel_type: COMMUNICATION, MEMORY, COMPUTATION unless excluded, OTHER.
KernelType kernel_type_of(std::string_view name);

struct Interval {
  double begin = 0, end = 0;
};

// Sorts `rows` by begin and merges them: a row begins a new group only when it starts strictly
// after every earlier end, so touching intervals merge.
std::vector<Interval> union_of(std::vector<Interval> rows);
double length(const std::vector<Interval>& u);
// HTA's sweep over unions: each union i adds 1 << i from its begins to its ends, a running sum
// (not a set: a row of negative length leaves it at a value that reads as other types, as in
// HTA); `segment(running, length)` is called for each stretch between consecutive distinct times.
template <typename Segment>
void sweep(const std::vector<std::vector<Interval>>& unions, Segment segment);

// numpy.round(v, decimals): rint(v * 10^d) / 10^d, ties to even.
inline double numpy_round(double v, int decimals) {
  const double scale = decimals == 1 ? 10.0 : 100.0;
  return std::nearbyint(v * scale) / scale;
}

// numpy.percentile's default ("linear") quantile q of `values` (sorted here).
double numpy_quantile(std::vector<double> values, double q);

struct Edge {
  double time;
  int delta;
};
std::vector<Edge> sorted_edges(const std::vector<std::vector<Interval>>& unions);

template <typename Segment>
void sweep(const std::vector<std::vector<Interval>>& unions, Segment segment) {
  const std::vector<Edge> edges = sorted_edges(unions);
  int running = 0;
  for (std::size_t i = 0; i < edges.size();) {
    const double t = edges[i].time;
    while (i < edges.size() && edges[i].time == t) running += edges[i++].delta;
    if (i < edges.size()) segment(running, edges[i].time - t);
  }
}

}  // namespace vxperf::explain
