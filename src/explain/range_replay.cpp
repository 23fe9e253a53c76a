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
Span span_of(const KinetoTrace& t, const TraceRange& r, const std::vector<double>& times,
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
  const ReplayGraph g(t, fed_by);
  out.nodes = static_cast<std::int64_t>(g.graph().node_count());
  out.edges = static_cast<std::int64_t>(g.graph().edge_count());
  out.ranges = static_cast<std::int64_t>(ranges.size());
  if (!g.ok()) {
    problems.push_back(g.problem());
    return out;
  }
  std::vector<std::int64_t> binding;
  const std::vector<double> times = g.replay(nullptr, &binding);
  std::vector<double> measured(g.node_slots());
  for (std::size_t n = 0; n < measured.size(); ++n) {
    measured[n] = g.measured(static_cast<ReplayGraph::Node>(n));
    out.largest_row_error_us = std::max(out.largest_row_error_us, std::abs(times[n] - measured[n]));
  }
  // Each what-if's weights, replay and each range's device-busy bound: per stream, the sum of its
  // rows' edited durations (a stream runs them one at a time).
  std::vector<std::int64_t> run_edge(t.rows.size(), -1);
  for (std::size_t e = 0; e < g.graph().edge_count(); ++e) {
    const PathGraph::Edge& edge = g.graph().edges()[e];
    if (ReplayGraph::kind(edge) == EdgeKind::kRun)
      run_edge[edge.dst / 2] = static_cast<std::int64_t>(e);
  }
  const std::size_t k = request.what_ifs.size();
  std::vector<std::vector<double>> predicted(k);  // per what-if, per range
  for (std::size_t w = 0; w < k; ++w) {
    WhatIfResult res;
    res.what_if = request.what_ifs[w].spec;
    const std::vector<double> weights = what_if_weights(g, t, ranges, request.what_ifs[w], res.why);
    res.applies = res.why.empty();
    const std::vector<double> after = res.applies ? g.replay(&weights) : times;
    std::vector<char> gone(t.rows.size(), 0);
    for (std::size_t p = 0; p < gone.size(); ++p) {
      const std::int64_t e = run_edge[p];
      gone[p] = e >= 0 && weights[e] == 0 && g.graph().edges()[e].weight > 0 ? 1 : 0;
    }
    predicted[w].resize(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const TraceRange& r = ranges[i];
      std::unordered_map<std::int64_t, double> busy;
      double bound = 0;
      for (std::uint32_t p : r.device) {
        if (run_edge[p] < 0) continue;
        const double& b = busy[t.stream(t.rows[p])] += std::max(0.0, weights[run_edge[p]]);
        bound = std::max(bound, b);
      }
      const double span = span_of(t, r, after, &gone).length();
      predicted[w][i] = std::max(span, r.device.empty() ? 0.0 : bound);
      if (r.root == static_cast<std::int64_t>(i)) {
        const double was = span_of(t, r, measured).length();
        res.span_s += was * 1e-6;
        res.predicted_s += predicted[w][i] * 1e-6;
      }
    }
    res.gain_s = res.span_s - res.predicted_s;
    out.what_ifs.push_back(std::move(res));
  }
  for (std::size_t w = 0; w < k; ++w) out.ranked.push_back(w);
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [&](std::size_t a, std::size_t b) {
    return out.what_ifs[a].gain_s > out.what_ifs[b].gain_s;
  });

  std::map<TraceRange::Key, ReplayRow> rows;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const TraceRange& r = ranges[i];
    const Span was = span_of(t, r, measured);
    const Span now = span_of(t, r, times);
    double error = 0;
    if (was.length() > 0) {
      error = std::abs(now.length() - was.length()) / was.length() * 100;
    } else if (std::abs(now.length()) > 1e-9) {
      error = 100;
    }
    if (out.largest_error_range.empty() || error > out.largest_error_pct) {
      out.largest_error_pct = error;
      out.largest_error_range = label(t, ranges, r);
    }
    double by_bound[8] = {};
    g.path_into(now.last, now.begin, times, binding, by_bound);
    for (const TraceRange::Key& key : r.keys) {
      ReplayRow& row = rows[key];
      if (row.count == 0) {
        row.range = key.range;
        row.kind = key.kind;
        row.step_index = key.step_index;
        row.what_if_s.assign(k, 0);
      }
      ++row.count;
      row.span_s += was.length() * 1e-6;
      row.replayed_s += now.length() * 1e-6;
      row.error_pct = std::max(row.error_pct, error);
      for (int b = 0; b < static_cast<int>(Bound::kCount); ++b) {
        if (by_bound[b] != 0) row.path_s[bound_name(static_cast<Bound>(b))] += by_bound[b] * 1e-6;
      }
      for (std::size_t w = 0; w < k; ++w) row.what_if_s[w] += predicted[w][i] * 1e-6;
    }
  }
  for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
  return out;
}

}  // namespace vxperf::explain
