// `vxperf explain --json`: HTA's numbers under the keys docs/EXPLAIN.md lists, per rank and
// summed over ranks, and the waterfall. A whole number is written as one (HTA's sums are).
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "explain/explain_fields.h"
#include "schema/json.h"
#include "vxperf/explain.h"

namespace vxperf::explain {
namespace {

using internal::Json;

Json number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return static_cast<std::int64_t>(v);
  }
  return v;
}

Json number(const std::optional<double>& v) { return v ? number(*v) : Json(nullptr); }

// One of HTA's tables' rows as an object, its fields() in order, every double through number().
struct NumbersWriter {
  Json j = Json::object();
  template <class T>
  void operator()(const char* key, const T& v) {
    if constexpr (std::is_same_v<T, std::string> || std::is_integral_v<T>) {
      j[key] = v;
    } else {
      j[key] = number(v);
    }
  }
};

template <class T>
Json numbers_json(const T& row) {
  NumbersWriter w;
  fields(w, const_cast<T&>(row));  // fields() walks by reference; the writer only reads
  return std::move(w.j);
}

Json waterfall_json(const WaterfallRow& w) {
  Json j;
  j["range"] = w.range;
  j["kind"] = w.kind;
  if (w.step_index >= 0) j["step_index"] = w.step_index;
  j["count"] = w.count;
  j["host_s"] = w.host_s;
  j["span_s"] = w.span_s;
  j["ideal_s"] = number(w.ideal_s);
  j["kernel_excess_s"] = w.kernel_excess_s;
  j["exposed_comm_s"] = w.exposed_comm_s;
  j["memory_s"] = w.memory_s;
  j["other_s"] = w.other_s;
  j["idle_host_wait_s"] = w.idle_host_wait_s;
  j["idle_kernel_wait_s"] = w.idle_kernel_wait_s;
  j["idle_other_s"] = w.idle_other_s;
  j["flops"] = number(w.flops);
  j["mfu"] = number(w.mfu);
  return j;
}

// A rank's "replay" (only with --replay or --what-if): the graph's size, the largest error of a
// replayed span, each waterfall row replayed with its critical path and what-ifs, the what-ifs'
// totals in the order asked, ranked and stacked.
Json replay_json(const RankReplay& r) {
  Json j;
  j["nodes"] = r.nodes;
  j["edges"] = r.edges;
  j["ranges"] = r.ranges;
  j["largest_row_error_us"] = r.largest_row_error_us;
  j["largest_error_pct"] = r.largest_error_pct;
  j["largest_error_range"] = r.largest_error_range;
  auto results = [](const std::vector<WhatIfResult>& list, bool applies) {
    Json a = Json::array();
    for (const WhatIfResult& w : list) {
      Json o;
      o["what_if"] = w.what_if;
      if (applies) o["applies"] = w.applies;
      if (!w.applies) o["why"] = w.why;
      o["span_s"] = w.span_s;
      o["predicted_s"] = w.predicted_s;
      o["gain_s"] = w.gain_s;
      a.push_back(o);
    }
    return a;
  };
  j["what_ifs"] = results(r.what_ifs, true);
  Json ranked = Json::array();
  for (std::size_t i : r.ranked) ranked.push_back(r.what_ifs[i].what_if);
  j["ranked"] = ranked;
  if (!r.what_ifs.empty()) j["stacked"] = results(r.stacked, false);
  Json rows = Json::array();
  for (const ReplayRow& w : r.rows) {
    Json o;
    o["range"] = w.range;
    o["kind"] = w.kind;
    if (w.step_index >= 0) o["step_index"] = w.step_index;
    o["count"] = w.count;
    o["span_s"] = w.span_s;
    o["replayed_s"] = w.replayed_s;
    o["error_pct"] = w.error_pct;
    Json path = Json::object();
    for (const auto& [bound, s] : w.path_s) path[bound] = s;
    o["critical_path_s"] = path;
    Json predicted = Json::object();
    for (std::size_t i = 0; i < w.what_if_s.size() && i < r.what_ifs.size(); ++i) {
      predicted[r.what_ifs[i].what_if] = w.what_if_s[i];
    }
    o["what_if_s"] = predicted;
    if (!r.what_ifs.empty()) o["stacked_s"] = w.stacked_s;
    rows.push_back(o);
  }
  j["rows"] = rows;
  return j;
}

// A rank's "critical_path" (only with --critical-path), the layout docs/EXPLAIN.md declares:
//   {"annotation": A, "sync_events": bool,
//    "instances": [{"instance": [first, last], "row": name, "category": cat,
//                   "window_us": [begin, end] (absent: nothing selected),
//                   "hta": "ok" | "None" | "raises" | "False" | "unmodelled", "why": (not ok),
//                   then, when the path is given: "length_us", "summary_total_us",
//                   "path_nodes", "breakdown": {bound_by: {"us", "pct"}},
//                   "edges": {type: count}, "top_events": [{"index", "name", "bound_by",
//                   "us", "edges"}]}],
//    "instances_not_analysed": n (only when some are)}
Json critical_path_json(const RankCriticalPath& cp) {
  Json instances = Json::array();
  for (const CriticalPathInstance& i : cp.instances) {
    Json j;
    j["instance"] = {i.first, i.last};
    j["row"] = i.row;
    j["category"] = i.row_category;
    if (i.window_begin_us && i.window_end_us) {
      j["window_us"] = {number(*i.window_begin_us), number(*i.window_end_us)};
    }
    j["hta"] = i.hta;
    if (i.hta != "ok") j["why"] = i.why;
    if (i.has_path) {
      j["length_us"] = number(i.length_us);
      j["summary_total_us"] = number(i.summary_total_us);
      j["path_nodes"] = i.path_nodes;
      Json breakdown = Json::object();
      for (const CriticalPathBound& b : i.breakdown) {
        breakdown[b.bound_by] = {{"us", number(b.us)}, {"pct", number(b.pct)}};
      }
      j["breakdown"] = breakdown;
      Json edges = Json::object();
      for (const auto& [type, n] : i.edges) edges[type] = n;
      j["edges"] = edges;
      Json top = Json::array();
      for (const CriticalPathEvent& e : i.top_events) {
        top.push_back({{"index", e.index},
                       {"name", e.name},
                       {"bound_by", e.bound_by},
                       {"us", number(e.us)},
                       {"edges", e.edges}});
      }
      j["top_events"] = top;
    }
    instances.push_back(j);
  }
  Json j = {
      {"annotation", cp.annotation}, {"sync_events", cp.sync_events}, {"instances", instances}};
  if (cp.instances_not_analysed > 0) j["instances_not_analysed"] = cp.instances_not_analysed;
  return j;
}

Json rank_json(const RankExplanation& r) {
  Json j;
  j["rank"] = r.rank;
  j["file"] = r.file;
  j["has_device_rows"] = r.has_device_rows;
  j["steps"] = r.steps;
  j["temporal"] = numbers_json(r.temporal);
  Json idle = Json::array();
  for (const StreamIdle& s : r.idle_by_stream) idle.push_back(numbers_json(s));
  j["idle_by_stream"] = idle;
  j["comm_comp_overlap_pct"] = number(r.comm_comp_overlap_pct);
  Json types = Json::object();
  for (const auto& [label, us] : r.kernel_types) {
    if (us != 0) types[label] = number(us);
  }
  j["kernel_types"] = types;
  Json kernels = Json::array();
  for (const KernelStats& k : r.kernels) kernels.push_back(numbers_json(k));
  j["kernels"] = kernels;
  j["launches"] = numbers_json(r.launches);
  Json waterfall = Json::array();
  for (const WaterfallRow& w : r.waterfall) waterfall.push_back(waterfall_json(w));
  j["waterfall"] = waterfall;
  auto runs = [](const std::vector<std::pair<std::int64_t, std::int64_t>>& v) {
    Json a = Json::array();
    for (const auto& [first, last] : v) a.push_back({first, last});
    return a;
  };
  j["requests_without_record"] = runs(r.requests_without_record);
  j["steps_without_record"] = runs(r.steps_without_record);
  if (r.critical_path) j["critical_path"] = critical_path_json(*r.critical_path);
  if (r.replay) j["replay"] = replay_json(*r.replay);
  return j;
}

}  // namespace

std::string explanation_json(const Explanation& e) {
  Json j;
  Json ranks = Json::array();
  for (const RankExplanation& r : e.ranks) ranks.push_back(rank_json(r));
  j["ranks"] = ranks;
  Json types = Json::object(), pct = Json::object();
  for (const auto& [label, us] : e.kernel_types) types[label] = number(us);
  for (const auto& [label, p] : e.kernel_types_pct) pct[label] = number(p);
  j["kernel_types"] = types;
  j["kernel_types_pct"] = pct;
  j["records"] = e.records_files;
  j["flops_from"] = e.flops_from;
  j["problems"] = e.problems;
  // A name that is not UTF-8 (a trace is untrusted) is written with U+FFFD, not refused.
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace vxperf::explain
