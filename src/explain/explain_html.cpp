// `vxperf explain --html`: the report page's frame and charts with the explanation's numbers: the
// waterfall per stage or phase as stacked bars, the ranks' temporal breakdown side by side, the
// idle split per stream, and the tables. Every name from the trace is escaped.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "analysis/html_parts.h"
#include "analysis/svg_charts.h"
#include "vxperf/explain.h"

namespace vxperf::explain {
namespace {

namespace html = analysis::html;
namespace svg = analysis::svg;

std::string fixed(double v, const char* fmt = "%.3f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A row's kind as the page says it: a priced stage's call by its index is a "call" (the JSON's
// "denoising_step").
std::string kind_text(const std::string& kind) {
  return kind == "denoising_step" ? "call" : kind == "train_step" ? "training step" : kind;
}

std::string label_of(const WaterfallRow& w) {
  if (w.kind == "denoising_step") return call_label(w.range, w.step_index);
  return w.range;
}

// `flops_read`: some records priced some range (else the page's problems say why none has an
// MFU).
std::string waterfall_section(const RankExplanation& r, bool flops_read) {
  if (r.waterfall.empty()) return "";
  if (!r.has_device_rows) {
    // No device span to split: the host time alone, not bars and columns of zeros.
    html::Table table;
    table.head = {"range", "kind", "n", "host"};
    for (const WaterfallRow& w : r.waterfall) {
      const double n = static_cast<double>(std::max<std::int64_t>(w.count, 1));
      table.rows.push_back({svg::escape(label_of(w)), svg::escape(kind_text(w.kind)),
                            std::to_string(w.count), fixed(w.host_s / n * 1e3)});
      table.row_class.push_back("");
    }
    return "<h3>Ranges, rank " + std::to_string(r.rank) +
           " (mean per range: host time, ms)</h3>\n" + html::table_html(table);
  }
  bool unpriced = false;
  const std::vector<std::string> parts = {
      "ideal", "kernel excess",   "exposed comm",      "memory",
      "other", "idle: host wait", "idle: kernel wait", "idle: other"};
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double top = 0;
  html::Table table;
  table.head = {"range", "kind",   "n",     "host",      "span",        "ideal",      "excess",
                "comm",  "memory", "other", "host wait", "kernel wait", "idle other", "MFU"};
  for (const WaterfallRow& w : r.waterfall) {
    const double n = static_cast<double>(std::max<std::int64_t>(w.count, 1));
    const double ideal = w.ideal_s.value_or(0) / n;
    // A negative excess (the peak is off) draws as none; the table keeps its sign.
    values.push_back({ideal, std::max(0.0, w.kernel_excess_s / n), w.exposed_comm_s / n,
                      w.memory_s / n, w.other_s / n, w.idle_host_wait_s / n,
                      w.idle_kernel_wait_s / n, w.idle_other_s / n});
    labels.push_back(label_of(w));
    top = std::max(top, w.span_s / n);
    auto ms = [&](double s) { return fixed(s / n * 1e3); };
    table.rows.push_back(
        {svg::escape(label_of(w)), svg::escape(kind_text(w.kind)), std::to_string(w.count),
         ms(w.host_s), ms(w.span_s), w.ideal_s ? ms(*w.ideal_s) : "-", ms(w.kernel_excess_s),
         ms(w.exposed_comm_s), ms(w.memory_s), ms(w.other_s), ms(w.idle_host_wait_s),
         ms(w.idle_kernel_wait_s), ms(w.idle_other_s), w.mfu ? html::percent(*w.mfu) : "n/a"});
    table.row_class.push_back("");
    unpriced = unpriced || !w.mfu;
  }
  const std::string why =
      unpriced && flops_read
          ? "<p>MFU n/a: no FLOPs priced for the range (records price requests, transformer "
            "calls, steps, fwd and bwd).</p>\n"
          : std::string();
  return "<h3>Where the time went: the waterfall, rank " + std::to_string(r.rank) +
         " (mean per range, ms)</h3>\n" +
         svg::stacked_bars("device span per range", html::time_axis("span", top), parts, labels,
                           values) +
         html::table_html(table) + why;
}

std::string temporal_section(const Explanation& e) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double top = 0;
  for (const RankExplanation& r : e.ranks) {
    if (!r.has_device_rows) continue;  // its section says so: no bar of zeros
    const Temporal& t = r.temporal;
    labels.push_back(html::rank_label(r.rank));
    values.push_back(
        {t.compute_time_us * 1e-6, t.non_compute_time_us * 1e-6, t.idle_time_us * 1e-6});
    top = std::max(top, t.kernel_time_us * 1e-6);
  }
  if (labels.empty()) return "";
  return "<h2>Temporal breakdown per rank</h2>\n" +
         svg::stacked_bars("device time", html::time_axis("time", top),
                           {"compute", "non-compute", "idle"}, labels, values);
}

std::string idle_section(const RankExplanation& r) {
  if (r.idle_by_stream.empty()) return "";
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double top = 0;
  for (const StreamIdle& s : r.idle_by_stream) {
    labels.push_back("stream " + std::to_string(s.stream));
    values.push_back({std::max(0.0, s.host_wait_us) * 1e-6, std::max(0.0, s.kernel_wait_us) * 1e-6,
                      std::max(0.0, s.other_us) * 1e-6});
    top = std::max(top, values.back()[0] + values.back()[1] + values.back()[2]);
  }
  return svg::stacked_bars("idle time per stream, rank " + std::to_string(r.rank),
                           html::time_axis("idle", top), {"host wait", "kernel wait", "other"},
                           labels, values);
}

// HTA's critical path: one row per instance, its length and the share of each bound type.
// vxperf's replay: each range's critical path by bound type (drawn and tabled), and the what-ifs
// ranked with their predicted span per range.
std::string replay_section(const RankExplanation& r) {
  if (!r.replay) return "";
  const RankReplay& rp = *r.replay;
  static const char* const kBounds[] = {
      "host",   "launch_overhead", "gpu_compute", "gpu_communication",
      "copies", "sync_wait",       "device_idle", "data_loading"};
  std::vector<std::string> parts(std::begin(kBounds), std::end(kBounds));
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double top = 0;
  html::Table t;
  t.head = {"range", "kind", "n", "span", "replayed", "error"};
  for (const char* b : kBounds) t.head.push_back(b);
  for (const ReplayRow& w : rp.rows) {
    const double n = static_cast<double>(std::max<std::int64_t>(w.count, 1));
    auto ms = [&](double v) { return fixed(v / n * 1e3); };
    const std::string label =
        w.kind == "denoising_step" ? call_label(w.range, w.step_index) : w.range;
    std::vector<std::string> row = {svg::escape(label),      svg::escape(kind_text(w.kind)),
                                    std::to_string(w.count), ms(w.span_s),
                                    ms(w.replayed_s),        fixed(w.error_pct, "%.4f%%")};
    std::vector<double> drawn;
    for (const char* b : kBounds) {
      auto it = w.path_s.find(b);
      const double v = it == w.path_s.end() ? 0 : it->second;
      row.push_back(ms(v));
      drawn.push_back(std::max(0.0, v / n));  // a negative gap (overlapping rows) draws as none
    }
    labels.push_back(label);
    values.push_back(std::move(drawn));
    top = std::max(top, w.replayed_s / n);
    t.rows.push_back(std::move(row));
    t.row_class.push_back("");
  }
  std::string out =
      "<h3>vxperf's replay, rank " + std::to_string(r.rank) + "</h3>\n<p>" +
      std::to_string(rp.nodes) + " nodes, " + std::to_string(rp.edges) +
      " edges; largest error of a row's time " + fixed(rp.largest_row_error_us, "%.3f") +
      " us, of a range's span " + fixed(rp.largest_error_pct, "%.4f%%") +
      (rp.largest_error_range.empty() ? std::string()
                                      : " (" + svg::escape(rp.largest_error_range) + ")") +
      ".</p>\n";
  if (!rp.rows.empty()) {
    out += "<h4>Its critical path per range (mean per range, ms)</h4>\n" +
           svg::stacked_bars("critical path per range", html::time_axis("span", top), parts, labels,
                             values) +
           html::table_html(t);
  }
  if (rp.what_ifs.empty()) return out;
  html::Table w;
  w.head = {"what-if", "requests and steps (ms)", "predicted (ms)", "gain (ms)", "gain"};
  for (std::size_t i : rp.ranked) {
    const WhatIfResult& x = rp.what_ifs[i];
    if (!x.applies) {
      w.rows.push_back({svg::escape(x.what_if), "-", "-", "-", svg::escape(x.why)});
    } else {
      w.rows.push_back({svg::escape(x.what_if), fixed(x.span_s * 1e3), fixed(x.predicted_s * 1e3),
                        fixed(x.gain_s * 1e3),
                        x.span_s > 0 ? html::percent(x.gain_s / x.span_s) : "-"});
    }
    w.row_class.push_back("");
  }
  out += "<h4>What-ifs, ranked by gain</h4>\n" + html::table_html(w);
  const bool stacked = rp.stacked.size() >= 2;
  if (stacked) {
    html::Table st;
    st.head = {"what-if", "before (ms)", "predicted (ms)", "gain (ms)", "gain"};
    for (std::size_t i = 0; i < rp.stacked.size(); ++i) {
      const WhatIfResult& x = rp.stacked[i];
      st.rows.push_back({svg::escape((i == 0 ? "" : "then ") + x.what_if), fixed(x.span_s * 1e3),
                         fixed(x.predicted_s * 1e3), fixed(x.gain_s * 1e3),
                         x.span_s > 0 ? html::percent(x.gain_s / x.span_s) : "-"});
      st.row_class.push_back("");
    }
    out += "<h4>What-ifs stacked: the best, then the best with it applied, ...</h4>\n" +
           html::table_html(st);
  }
  if (rp.rows.empty()) return out;
  html::Table per;
  per.head = {"range", "span"};
  for (std::size_t i : rp.ranked) per.head.push_back(svg::escape(rp.what_ifs[i].what_if));
  for (const ReplayRow& x : rp.rows) {
    const double n = static_cast<double>(std::max<std::int64_t>(x.count, 1));
    std::vector<std::string> row = {
        svg::escape(x.kind == "denoising_step" ? call_label(x.range, x.step_index) : x.range),
        fixed(x.span_s / n * 1e3)};
    for (std::size_t i : rp.ranked) {
      row.push_back(i < x.what_if_s.size() ? fixed(x.what_if_s[i] / n * 1e3) : "-");
    }
    per.rows.push_back(std::move(row));
    per.row_class.push_back("");
  }
  out += "<h4>Predicted span per range (mean per range, ms)</h4>\n" + html::table_html(per);
  if (!stacked) return out;
  html::Table sp;
  sp.head = {"range", "span"};
  for (std::size_t i = 0; i < rp.stacked.size(); ++i) {
    sp.head.push_back(svg::escape((i == 0 ? "" : "+") + rp.stacked[i].what_if));
  }
  for (const ReplayRow& x : rp.rows) {
    const double n = static_cast<double>(std::max<std::int64_t>(x.count, 1));
    std::vector<std::string> row = {
        svg::escape(x.kind == "denoising_step" ? call_label(x.range, x.step_index) : x.range),
        fixed(x.span_s / n * 1e3)};
    for (std::size_t i = 0; i < rp.stacked.size(); ++i) {
      row.push_back(i < x.stacked_s.size() ? fixed(x.stacked_s[i] / n * 1e3) : "-");
    }
    sp.rows.push_back(std::move(row));
    sp.row_class.push_back("");
  }
  return out + "<h4>Stacked, per range (mean per range, ms)</h4>\n" + html::table_html(sp);
}

std::string critical_path_section(const RankExplanation& r) {
  if (!r.critical_path) return "";
  const RankCriticalPath& cp = *r.critical_path;
  static const char* const kBounds[] = {"cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
                                        "gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead"};
  html::Table t;
  t.head = {"instance", "annotation row", "HTA", "path (us)", "summary total (us)"};
  for (const char* b : kBounds) t.head.push_back(b);
  t.head.push_back("costliest event");
  for (const CriticalPathInstance& i : cp.instances) {
    std::vector<std::string> row = {
        std::to_string(i.first) + (i.last != i.first ? "-" + std::to_string(i.last) : ""),
        svg::escape(i.row), svg::escape(i.hta == "ok" ? "ok" : i.hta + ": " + i.why)};
    row.push_back(i.has_path ? fixed(i.length_us, "%.0f") : "-");
    row.push_back(i.has_path ? fixed(i.summary_total_us, "%.0f") : "-");
    for (const char* b : kBounds) {
      std::string cell = "-";
      for (const CriticalPathBound& x : i.breakdown) {
        if (x.bound_by == b && x.pct) cell = fixed(*x.pct, "%.2f%%");
      }
      row.push_back(cell);
    }
    row.push_back(i.top_events.empty() ? "-"
                                       : svg::escape(i.top_events[0].name) + " (" +
                                             fixed(i.top_events[0].us, "%.0f") + " us)");
    t.rows.push_back(std::move(row));
    t.row_class.push_back("");
  }
  return "<h3>Critical path (HTA's), " +
         (cp.annotation.empty() ? std::string("the whole trace")
                                : "annotation &quot;" + svg::escape(cp.annotation) + "&quot;") +
         "</h3>\n" +
         (cp.sync_events ? std::string()
                         : std::string("<p>No cuda_sync events in the traces: HTA's path has no "
                                       "sync edges and crosses to the GPU at most once.</p>\n")) +
         html::table_html(t);
}

std::string rank_summary(const RankExplanation& r, bool flops_read) {
  html::Table t;
  t.head = {"kernel", "type", "count", "sum (us)", "mean (us)", "max (us)", "min (us)", "std"};
  for (const KernelStats& k : r.kernels) {
    t.rows.push_back({svg::escape(k.name), k.type, std::to_string(k.count), fixed(k.sum_us, "%.0f"),
                      fixed(k.mean_us, "%.2f"), fixed(k.max_us, "%.0f"), fixed(k.min_us, "%.0f"),
                      fixed(k.std_us, "%.2f")});
    t.row_class.push_back("");
  }
  const Temporal& tm = r.temporal;
  std::string overlap = r.comm_comp_overlap_pct ? fixed(*r.comm_comp_overlap_pct, "%.2f%%")
                                                : std::string("no communication");
  const LaunchStats& l = r.launches;
  const std::string head =
      "<h2>" + html::rank_label(r.rank) + " — " + svg::escape(r.file) + "</h2>\n";
  if (!r.has_device_rows) {
    std::string said = kCpuOnly;
    said[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(said[0])));
    return head + "<p>" + svg::escape(said) + ".</p>\n" + critical_path_section(r) +
           waterfall_section(r, flops_read) + replay_section(r);
  }
  return head + "<p>" + "Device time " + fixed(tm.kernel_time_us, "%.0f") +
         " us; communication under "
         "computation: " +
         overlap + "; launches " + std::to_string(l.n_events) + " (" +
         std::to_string(l.n_long_runtime) + " over 50 us, " +
         std::to_string(l.n_long_launch_delay) + " started over 100 us late, " +
         std::to_string(l.n_short_gpu) + " shorter on the device than to launch).</p>\n" +
         idle_section(r) + html::table_html(t) + critical_path_section(r) +
         waterfall_section(r, flops_read) + replay_section(r);
}

}  // namespace

std::string explanation_html(const Explanation& e) {
  std::string page = html::page_open("vxperf explain");
  if (!e.problems.empty()) {
    page += "<ul class=\"warnings\">";
    for (const std::string& p : e.problems) page += "<li>" + svg::escape(p) + "</li>";
    page += "</ul>\n";
  }
  page += temporal_section(e);
  for (const RankExplanation& r : e.ranks) page += rank_summary(r, !e.flops_from.empty());
  return page + html::page_close();
}

}  // namespace vxperf::explain
