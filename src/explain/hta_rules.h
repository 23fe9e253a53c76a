// HTA's small rules, each written once: a kernel's type from its name, the union of intervals,
// numpy's rounding and quantile (docs/EXPLAIN.md, "HTA's definitions").
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vxperf::explain {

enum class KernelType { kComputation = 0, kCommunication = 1, kMemory = 2, kOther = 3 };

const char* kernel_type_name(KernelType t);

// ^ProfilerStep#\d+ under re.match: a profiler step's name (W1).
bool is_step_string(std::string_view s);

// HTA's get_kernel_type: COMMUNICATION, MEMORY, COMPUTATION unless excluded, OTHER.
KernelType kernel_type_of(std::string_view name);

// HTA's is_memory_kernel: ^(hip)?Memcpy, ^(hip)?Memset or ^dma under re.match.
bool is_memory_name(std::string_view name);

// HTA's shorten_name: a memory name, or one with neither '<' nor '(', as it is; else "->" taken
// out, every <...> and (...) dropped with what they hold (a '>' or ')' without its opener drops
// everything before it), and the last space-separated part kept: "void at::foo<float>(int)" is
// "at::foo".
std::string shorten_name(std::string_view name);

struct Interval {
  double begin = 0, end = 0;
};

// HTA's union of intervals fed in order of begin: an interval begins a new group only when it
// starts strictly after every earlier end (the running maximum, as HTA's cummax: it differs from
// the group's own end only for intervals of negative length), so touching intervals merge.
class UnionBuilder {
 public:
  void add(double begin, double end) {
    if (!started_ || begin > latest_end_) {
      ++count_;
      if (keep_) groups_.push_back({begin, end});
      latest_end_ = started_ ? std::max(latest_end_, end) : end;
    } else {
      if (keep_) groups_.back().end = std::max(groups_.back().end, end);
      latest_end_ = std::max(latest_end_, end);
    }
    started_ = true;
  }
  // Until called, the groups are only counted; then made afresh (add the same intervals again)
  // in a vector of exactly that size.
  void reserve() {
    groups_.reserve(count_);
    keep_ = true;
    started_ = false;
    count_ = 0;
  }
  std::vector<Interval> take() { return std::move(groups_); }

 private:
  std::vector<Interval> groups_;
  std::size_t count_ = 0;
  double latest_end_ = 0;
  bool started_ = false, keep_ = false;
};

// Sorts `rows` by begin (stably) and merges them.
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
// Every union's begins and ends, sorted by time.
std::vector<Edge> sorted_edges(const std::vector<std::vector<Interval>>& unions);

template <typename Segment>
void sweep(const std::vector<std::vector<Interval>>& unions, Segment segment) {
  // A union without intervals of negative length lists its begins and ends in time order: the
  // unions are then merged as they are read, with no list of their edges made.
  bool ordered = true;
  for (const auto& u : unions) {
    for (std::size_t i = 0; ordered && i < u.size(); ++i) {
      ordered = u[i].end >= u[i].begin && (i == 0 || u[i].begin >= u[i - 1].end);
    }
  }
  int running = 0;
  if (!ordered) {
    const std::vector<Edge> edges = sorted_edges(unions);
    for (std::size_t i = 0; i < edges.size();) {
      const double t = edges[i].time;
      while (i < edges.size() && edges[i].time == t) running += edges[i++].delta;
      if (i < edges.size()) segment(running, edges[i].time - t);
    }
    return;
  }
  // Cursor k of a union: edge k (even: the begin of interval k/2, odd: its end).
  std::vector<std::size_t> at(unions.size(), 0);
  auto time_of = [&](std::size_t u) {
    const Interval& i = unions[u][at[u] / 2];
    return at[u] % 2 == 0 ? i.begin : i.end;
  };
  auto next_time = [&](double& t) {
    bool any = false;
    for (std::size_t u = 0; u < unions.size(); ++u) {
      if (at[u] < 2 * unions[u].size() && (!any || time_of(u) < t)) {
        t = time_of(u);
        any = true;
      }
    }
    return any;
  };
  double t = 0;
  bool more = next_time(t);
  while (more) {
    for (std::size_t u = 0; u < unions.size(); ++u) {
      while (at[u] < 2 * unions[u].size() && time_of(u) == t) {
        running += (at[u] % 2 == 0 ? 1 : -1) * (1 << u);
        ++at[u];
      }
    }
    double next = 0;
    more = next_time(next);
    if (more) segment(running, next - t);
    t = next;
  }
}

}  // namespace vxperf::explain
