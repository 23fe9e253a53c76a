// Two reports compared as an HTML page (comparison_html): the metrics, both runs' charts.
#include <algorithm>

#include "analysis/html_parts.h"
#include "analysis/report_format.h"
#include "analysis/units.h"
#include "base/strings.h"

namespace vxperf::analysis {

using internal::strprintf;
using svg::escape;
using namespace html;
namespace {

std::string metric_value(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  if (unit == "s") return time_text(*v);
  if (unit == "ms") return time_text(*v / 1000.0);
  if (unit.empty()) return percent(*v);  // MFU, HFU: fractions
  if (unit == "TFLOPS") return units::flops_rate(*v);
  if (unit == "1/s") return strprintf("%.3f/s", *v);
  return strprintf("%.3g %s", *v, unit.c_str());
}

// The median across ranks of a number of each window, by step.
svg::Series median_over_ranks(const std::string& name, const ChartData::Impl& d, Getter get) {
  Columns c = columns_of(d);
  svg::Series s{name, {}, false, {}};
  for (std::size_t k = 0; k < c.spans.size(); ++k) {
    std::vector<double> v = column_values(c, k, get);
    if (v.empty()) continue;
    s.points.emplace_back(mid(c.spans[k]), v[v.size() / 2]);
    s.tips.push_back(span_text(c.spans[k]));
  }
  return s;
}

double p50_of(const Window& w) { return w.p50; }
double mfu_of(const Window& w) { return w.mfu; }

svg::Series request_times(const std::string& name, const ChartData::Impl& d) {
  svg::Series s{name, {}, false, {}};
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const auto& r = d.requests[i];
    s.points.emplace_back(static_cast<double>(i), r.e2e_s);
    s.tips.push_back(strprintf("request %zu (%s req#%lld%s)", i, rank_label(r.rank).c_str(),
                               static_cast<long long>(r.req), r.warmup ? ", warmup" : ""));
  }
  return s;
}

double top_of(const std::vector<svg::Series>& series) {
  double top = 0;
  for (const auto& s : series) {
    for (const auto& p : s.points) top = std::max(top, p.second);
  }
  return top;
}

}  // namespace

std::string comparison_html(const std::string& a_name, const std::string& b_name,
                            const std::vector<MetricChange>& changes, const ChartData& a,
                            const ChartData& b) {
  std::string html = page_open("vxperf comparison");
  html +=
      "<p>A: <code>" + escape(a_name) + "</code><br>B: <code>" + escape(b_name) + "</code></p>\n";
  Table t{{"metric", "A", "B", "change", ""}, {}, {}};
  std::vector<std::string> labels, tips;
  std::vector<double> values;
  std::vector<bool> better;
  for (const auto& c : changes) {
    std::string change = c.change ? strprintf("%+.1f%%", *c.change * 100.0) : "-";
    // A utilization one side lacks reads "n/a", why said under the table (as the text does).
    const bool lacks = report_format::lacks_utilization(c);
    auto cell = [&](const std::optional<double>& v) {
      return lacks && !v ? std::string("n/a") : metric_value(v, c.unit);
    };
    t.rows.push_back({escape(c.name), escape(cell(c.a)), escape(cell(c.b)), change,
                      "<span class=\"" + c.direction + "\">" + escape(c.direction) + "</span>"});
    if (!c.change || c.direction == "differs") continue;  // a peak is neither green nor red
    labels.push_back(c.name);
    values.push_back(*c.change * 100.0);
    better.push_back(c.direction == "better");
    tips.push_back(c.name + ": " + metric_value(c.a, c.unit) + " -> " + metric_value(c.b, c.unit) +
                   " (" + change + ", " + c.direction + ")");
  }
  html += "<h2>Metrics</h2>\n" + table_html(t);
  for (const std::string& why : report_format::comparison_mfu_missing(changes)) {
    html += "<p>" + escape(why) + "</p>\n";
  }
  html += svg::diverging_bars("Change from A to B (green: better, red: worse)", "change (%)",
                              labels, values, better, tips);
  const auto &da = a.impl(), &db = b.impl();
  if (!da.windows.empty() || !db.windows.empty()) {
    std::vector<svg::Series> steps, mfu;
    if (!da.windows.empty()) steps.push_back(median_over_ranks("A", da, p50_of));
    if (!db.windows.empty()) steps.push_back(median_over_ranks("B", db, p50_of));
    html += "<h2>Training</h2>\n";
    html += svg::line_chart("Step time over steps (p50, median across ranks)", "step",
                            time_axis("time per step", top_of(steps)), steps);
    for (const auto* d : {&da, &db}) {
      auto s = median_over_ranks(d == &da ? "A" : "B", *d, mfu_of);
      if (!s.points.empty()) mfu.push_back(std::move(s));
    }
    if (!mfu.empty()) {
      html += svg::line_chart("MFU per window (median across ranks)", "step", kMfuAxis, mfu);
    }
  }
  if (!da.requests.empty() || !db.requests.empty()) {
    std::vector<svg::Series> times;
    if (!da.requests.empty()) times.push_back(request_times("A", da));
    if (!db.requests.empty()) times.push_back(request_times("B", db));
    html += "<h2>Requests</h2>\n";
    html += svg::line_chart("End-to-end time per request, in input order", "request",
                            time_axis("end to end", top_of(times)), times);
  }
  return html + page_close();
}

}  // namespace vxperf::analysis
