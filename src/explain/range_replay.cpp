#include "explain/range_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "explain/replay_graph.h"
#include "explain/what_if.h"

namespace vxperf::explain {
namespace {

// A range's span in `times`: its device rows' first start to last end, or without device rows
// its own host duration. `last` and `first` are the nodes (and time) the span runs between.
struct Span {
  double begin = 0, end = 0;
  ReplayGraph::Node last = 0;
  double length() const { return end - begin; }
};

// `gone`: the rows a what-if took away (a duration edited to 0), which no longer bound the span.
// `times`: a node's time (a replay's, or as measured).
template <typename Times>
Span span_of(const KinetoTrace& t, const TraceRange& r, const Times& times,
             const std::vector<char>* gone = nullptr) {
  Span s;
  if (r.device.empty()) {
    s.begin = times[ReplayGraph::start(r.row)];
    s.end = times[ReplayGraph::end(r.row)];
    s.last = ReplayGraph::end(r.row);
    return s;
  }
  s.begin = std::numeric_limits<double>::infinity();
  s.end = -std::numeric_limits<double>::infinity();
  for (std::uint32_t p : r.device) {
    if (gone != nullptr && (*gone)[p] != 0) continue;
    const double b = times[ReplayGraph::start(p)];
    const double e = std::max(b, times[ReplayGraph::end(p)]);
    s.begin = std::min(s.begin, b);
    if (e > s.end) {
      s.end = e;
      s.last = t.rows[p].end() >= t.rows[p].ts ? ReplayGraph::end(p) : ReplayGraph::start(p);
    }
  }
  if (s.end < s.begin) s.begin = s.end = 0;  // every row gone
  return s;
}

// "transformer call #3 of request 0": which range an error is of.
std::string label(const KinetoTrace& t, const std::vector<TraceRange>& ranges,
                  const TraceRange& r) {
  std::string s(t.str(t.rows[r.row].name));
  if (r.step_index >= 0) s = call_label(s, r.step_index);
  const TraceRange& root = ranges[static_cast<std::size_t>(r.root)];
  if (&root != &r) s += " of " + std::string(t.str(t.rows[root.row].name));
  return s;
}

}  // namespace

RankReplay replay_ranges(const KinetoTrace& t, const std::vector<TraceRange>& ranges,
                         const ReplayRequest& request, std::vector<std::string>& problems) {
  RankReplay out;
  std::vector<std::int32_t> fed_by;
  for (const TraceRange& r : ranges) fed_by.push_back(t.rows[r.row].tid);
  std::sort(fed_by.begin(), fed_by.end());
  fed_by.erase(std::unique(fed_by.begin(), fed_by.end()), fed_by.end());
  ReplayGraph g(t, fed_by);
  out.nodes = static_cast<std::int64_t>(g.node_count());
  out.edges = static_cast<std::int64_t>(g.edge_count());
  out.ranges = static_cast<std::int64_t>(ranges.size());
  if (!g.ok()) {
    problems.push_back(g.problem());
    return out;
  }
  struct Measured {
    const ReplayGraph& g;
    double operator[](ReplayGraph::Node n) const { return g.measured(n); }
  } const measured{g};
  // The measured replay first: each range's spans, error and critical path, after which the
  // binding edges are dropped and its times' storage is the what-ifs' (a what-if that does not
  // apply replays the graph's own weights again rather than keep these times beside them).
  struct Base {
    double was = 0, now = 0, error = 0;
    double by_bound[8] = {};
  };
  std::vector<Base> base(ranges.size());
  ReplayTimes times(g);
  {
    ReplayGraph::Binding binding;
    // The binding edges only for the ranges' paths (a trace without ranges needs none).
    g.replay_into(times, nullptr, ranges.empty() ? nullptr : &binding);
    // A node whose time is not kept is its measured time again (an error of 0).
    times.for_each_kept([&](ReplayGraph::Node n, double at) {
      out.largest_row_error_us =
          std::max(out.largest_row_error_us, std::abs(at - g.measured(n)));
    });
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const TraceRange& r = ranges[i];
      Base& b = base[i];
      const Span now = span_of(t, r, times);
      b.was = span_of(t, r, measured).length();
      b.now = now.length();
      if (b.was > 0) {
        b.error = std::abs(b.now - b.was) / b.was * 100;
      } else if (std::abs(b.now) > 1e-9) {
        b.error = 100;
      }
      if (out.largest_error_range.empty() || b.error > out.largest_error_pct) {
        out.largest_error_pct = b.error;
        out.largest_error_range = label(t, ranges, r);
      }
      g.path_into(now.last, now.begin, times, binding, b.by_bound);
    }
  }
  // A set of edits' weights replayed: each range's predicted span into `per_range`, at least its
  // device-busy bound (per stream, the sum of its rows' edited durations: a stream runs them one
  // at a time); returns the requests' and steps' sum (us).
  std::vector<double> weights;
  std::vector<char> gone(t.rows.size(), 0);
  auto predict = [&](std::vector<double>& per_range) {
    g.replay_into(times, &weights);
    const ReplayTimes& now = times;
    std::fill(gone.begin(), gone.end(), 0);
    g.for_each_run_edge([&](std::uint32_t p, ReplayGraph::EdgeId e) {
      gone[p] = weights[e] == 0 && g.run_weight(p) > 0 ? 1 : 0;
    });
    per_range.resize(ranges.size());
    double total = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const TraceRange& r = ranges[i];
      std::unordered_map<std::int64_t, double> busy;
      double bound = 0;
      for (std::uint32_t p : r.device) {
        const ReplayGraph::EdgeId e = g.run_edge(p);
        if (e == ReplayGraph::kNone) continue;
        const double& b = busy[t.stream(t.rows[p])] += std::max(0.0, weights[e]);
        bound = std::max(bound, b);
      }
      const double span = span_of(t, r, now, &gone).length();
      per_range[i] = std::max(span, r.device.empty() ? 0.0 : bound);
      if (r.root == static_cast<std::int64_t>(i)) total += per_range[i];
    }
    return total;
  };
  double measured_total = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].root == static_cast<std::int64_t>(i)) measured_total += base[i].was;
  }
  // The requests' and steps' sum in seconds, as each what-if's span_s and predicted_s are summed.
  auto seconds = [&](const std::vector<double>& per_range) {
    double sum = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].root == static_cast<std::int64_t>(i)) sum += per_range[i] * 1e-6;
    }
    return sum;
  };
  auto edits_of = [](const WhatIfSpec& w) {
    std::vector<const WhatIfEdit*> out;
    for (const WhatIfEdit& e : w.edits) out.push_back(&e);
    return out;
  };
  // Each what-if against the run as measured.
  const std::size_t k = request.what_ifs.size();
  if (k > 0) g.keep_order();
  std::vector<std::vector<double>> predicted(k);  // per what-if, per range
  std::vector<double> total(k);                   // per what-if: the requests' and steps' (us)
  for (std::size_t w = 0; w < k; ++w) {
    WhatIfResult res;
    res.what_if = request.what_ifs[w].spec;
    what_if_weights(g, t, ranges, edits_of(request.what_ifs[w]), weights, res.why);
    res.applies = res.why.empty();
    total[w] = predict(predicted[w]);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].root == static_cast<std::int64_t>(i)) res.span_s += base[i].was * 1e-6;
    }
    res.predicted_s = seconds(predicted[w]);
    res.gain_s = res.span_s - res.predicted_s;
    out.what_ifs.push_back(std::move(res));
  }
  for (std::size_t w = 0; w < k; ++w) out.ranked.push_back(w);
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [&](std::size_t a, std::size_t b) {
    return out.what_ifs[a].gain_s > out.what_ifs[b].gain_s;
  });

  // Stacked greedily: of the what-ifs left, the one whose edits added to those applied so far
  // gain most (the first in the ranking of equal ones), replayed all together, while one gains
  // more than a nanosecond. A what-if that gains only beside another is not found this way.
  std::vector<std::size_t> left;
  for (std::size_t w : out.ranked) {
    if (out.what_ifs[w].applies) left.push_back(w);
  }
  std::vector<std::vector<double>> stacked;  // per stacked what-if, per range
  if (left.size() >= 2) {
    std::vector<const WhatIfEdit*> applied;
    double before = measured_total;
    double before_s = out.what_ifs[left[0]].span_s;
    std::vector<double> per_range, best_per_range;
    while (!left.empty()) {
      std::size_t best = left.size();
      double best_total = before;
      for (std::size_t j = 0; j < left.size(); ++j) {
        const std::size_t w = left[j];
        double now = total[w];
        if (!applied.empty()) {
          std::vector<const WhatIfEdit*> edits = applied;
          for (const WhatIfEdit& e : request.what_ifs[w].edits) {
            if (std::none_of(edits.begin(), edits.end(),
                             [&](const WhatIfEdit* x) { return x->spec == e.spec; })) {
              edits.push_back(&e);
            }
          }
          std::string why;
          what_if_weights(g, t, ranges, edits, weights, why);
          now = predict(per_range);
        } else {
          per_range = predicted[w];
        }
        if (now < best_total) {
          best = j;
          best_total = now;
          best_per_range.swap(per_range);
        }
      }
      if (best == left.size() || before - best_total <= 1e-3) break;
      const std::size_t w = left[best];
      for (const WhatIfEdit& e : request.what_ifs[w].edits) {
        if (std::none_of(applied.begin(), applied.end(),
                         [&](const WhatIfEdit* x) { return x->spec == e.spec; })) {
          applied.push_back(&e);
        }
      }
      WhatIfResult res;
      res.what_if = request.what_ifs[w].spec;
      res.span_s = before_s;
      res.predicted_s = seconds(best_per_range);
      res.gain_s = res.span_s - res.predicted_s;
      out.stacked.push_back(std::move(res));
      stacked.push_back(best_per_range);
      before = best_total;
      before_s = res.predicted_s;
      left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }

  std::map<TraceRange::Key, ReplayRow> rows;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const TraceRange& r = ranges[i];
    const Base& b = base[i];
    for (const TraceRange::Key& key : r.keys) {
      ReplayRow& row = rows[key];
      if (row.count == 0) {
        row.range = key.range;
        row.kind = key.kind;
        row.step_index = key.step_index;
        row.what_if_s.assign(k, 0);
        row.stacked_s.assign(stacked.size(), 0);
      }
      ++row.count;
      row.span_s += b.was * 1e-6;
      row.replayed_s += b.now * 1e-6;
      row.error_pct = std::max(row.error_pct, b.error);
      for (int x = 0; x < static_cast<int>(Bound::kCount); ++x) {
        if (b.by_bound[x] != 0)
          row.path_s[bound_name(static_cast<Bound>(x))] += b.by_bound[x] * 1e-6;
      }
      for (std::size_t w = 0; w < k; ++w) row.what_if_s[w] += predicted[w][i] * 1e-6;
      for (std::size_t w = 0; w < stacked.size(); ++w) row.stacked_s[w] += stacked[w][i] * 1e-6;
    }
  }
  for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
  return out;
}

}  // namespace vxperf::explain
