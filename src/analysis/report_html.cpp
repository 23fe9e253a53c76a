// The report as one self-contained HTML page: inline CSS and SVG, no scripts, no external files.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/strings.h"
#include "vxperf/report.h"

namespace vxperf::analysis {

using internal::strprintf;
namespace {

constexpr double kWidth = 1000, kHeight = 320;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
// Charts with more bars than this show the last ones only, to stay readable.
constexpr std::size_t kMaxBars = 300;
// Ranks beyond this get no per-window phase chart of their own, unless they are stragglers.
constexpr std::size_t kMaxRankCharts = 8;

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string color(std::size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_max(double value) {
  if (!(value > 0) || !std::isfinite(value)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(value)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= value) return m * p;
  }
  return 10 * p;
}

std::string axis_label(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) >= 1000 || std::fabs(v) < 0.01) return strprintf("%.2g", v);
  return strprintf("%.3g", v);
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

std::string svg_open(const std::string& title, const std::string& y_label, double y_max) {
  std::string s = strprintf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
      "height=\"%.0f\">\n",
      kWidth, kHeight, kWidth, kHeight);
  s += "<text x=\"10\" y=\"22\" class=\"title\">" + escape(title) + "</text>\n";
  s += strprintf(
      "<text x=\"14\" y=\"%.0f\" class=\"axis\" transform=\"rotate(-90 14 %.0f)\" "
      "text-anchor=\"middle\">%s</text>\n",
      (kTop + kHeight - kBottom) / 2, (kTop + kHeight - kBottom) / 2, escape(y_label).c_str());
  double plot_h = kHeight - kTop - kBottom;
  for (int i = 0; i <= 4; ++i) {
    double v = y_max * i / 4;
    double y = kHeight - kBottom - plot_h * i / 4;
    s += strprintf(
        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
        "<text x=\"%.0f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
        kLeft, kWidth - kRight, y, y, kLeft - 6, y + 4, axis_label(v).c_str());
  }
  return s;
}

std::string legend(const std::vector<std::string>& names) {
  std::string s;
  double x = kLeft;
  for (std::size_t i = 0; i < names.size(); ++i) {
    s += strprintf(
        "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
        "<text x=\"%.0f\" y=\"%.0f\" class=\"axis\">%s</text>\n",
        x, kHeight - 18, color(i).c_str(), x + 14, kHeight - 9, escape(names[i]).c_str());
    x += 24 + 7.0 * static_cast<double>(names[i].size());
  }
  return s;
}

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series) {
  double x_min = INFINITY, x_max = -INFINITY, y_top = 0;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_top = std::max(y_top, y);
    }
  }
  if (!std::isfinite(x_min)) return "<p class=\"empty\">" + escape(title) + ": no data</p>\n";
  if (x_max <= x_min) x_max = x_min + 1;
  double y_max = nice_max(y_top * 1.05);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return kHeight - kBottom - y / y_max * plot_h; };
  std::string s = svg_open(title, y_label, y_max);
  // Steps are whole: ticks at multiples of 1, 2 or 5 times a power of ten, about five of them,
  // never at a fraction of a step (a window's middle may be one; its tick is not).
  double tick = std::max(1.0, nice_max((x_max - x_min) / 5.0));
  double first = std::ceil(x_min / tick) * tick;
  for (double x = first; x <= x_max + 1e-9; x += tick) {
    const char* anchor = px(x) - kLeft < 12             ? "start"
                         : kWidth - kRight - px(x) < 12 ? "end"
                                                        : "middle";  // inside the box
    s += strprintf("<text x=\"%.1f\" y=\"%.0f\" class=\"axis\" text-anchor=\"%s\">%s</text>\n",
                   px(x), kHeight - kBottom + 16, anchor, strprintf("%.0f", x).c_str());
  }
  s += strprintf("<text x=\"%.0f\" y=\"%.0f\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
                 kWidth - kRight, kHeight - 9, escape(x_label).c_str());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < series.size(); ++i) {
    names.push_back(series[i].name);
    std::string points;
    for (const auto& [x, y] : series[i].points) points += strprintf("%.1f,%.1f ", px(x), py(y));
    s += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + color(i) + "\" points=\"" +
         points + "\"/>\n";
    for (const auto& [x, y] : series[i].points) {
      s += strprintf(
          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s: %s, %s"
          "</title></circle>\n",
          px(x), py(y), color(i).c_str(), escape(series[i].name).c_str(), axis_label(x).c_str(),
          axis_label(y).c_str());
    }
  }
  s += legend(names);
  return s + "</svg>\n";
}

// Bars made of named segments; `names` fixes the colors and the legend.
std::string stacked_bars(const std::string& title, const std::string& y_label,
                         const std::vector<std::string>& names,
                         const std::vector<std::string>& labels,
                         const std::vector<std::vector<double>>& values) {
  if (labels.empty()) return "<p class=\"empty\">" + escape(title) + ": no data</p>\n";
  std::size_t first = labels.size() > kMaxBars ? labels.size() - kMaxBars : 0;
  double top = 0;
  for (std::size_t i = first; i < labels.size(); ++i) {
    double sum = 0;
    for (double v : values[i]) sum += std::max(v, 0.0);
    top = std::max(top, sum);
  }
  double y_max = nice_max(top * 1.05);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double slot = plot_w / static_cast<double>(labels.size() - first);
  std::string shown = first ? strprintf(" (last %zu)", kMaxBars) : "";
  std::string s = svg_open(title + shown, y_label, y_max);
  std::size_t every = std::max<std::size_t>(1, (labels.size() - first) / 12);
  for (std::size_t i = first; i < labels.size(); ++i) {
    double x = kLeft + slot * static_cast<double>(i - first);
    double y = kHeight - kBottom;
    for (std::size_t k = 0; k < names.size() && k < values[i].size(); ++k) {
      double v = std::max(values[i][k], 0.0);
      if (v <= 0) continue;
      double h = v / y_max * plot_h;
      y -= h;
      s += strprintf(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
          "<title>%s %s: %s</title></rect>\n",
          x + slot * 0.1, y, slot * 0.8, h, color(k).c_str(), escape(labels[i]).c_str(),
          escape(names[k]).c_str(), axis_label(v).c_str());
    }
    if ((i - first) % every == 0) {
      s +=
          strprintf("<text x=\"%.1f\" y=\"%.0f\" class=\"axis\" text-anchor=\"middle\">%s</text>\n",
                    x + slot / 2, kHeight - kBottom + 16, escape(labels[i]).c_str());
    }
  }
  s += legend(names);
  return s + "</svg>\n";
}

std::string rank_label(int rank) { return "rank " + std::to_string(rank); }

double mid_step(const TrainWindowRecord& w) {
  return (static_cast<double>(w.step_first) + static_cast<double>(w.step_last)) / 2.0;
}

// Phases in the engine's order of first use across `windows`, for one legend and one set of colors.
std::vector<std::string> phase_names(const std::vector<const TrainWindowRecord*>& windows) {
  std::vector<std::string> names;
  for (const auto* w : windows) {
    for (const auto& [name, s] : w->phases_s) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::vector<double> phase_values(const std::vector<std::string>& names,
                                 const std::vector<std::pair<std::string, double>>& phases) {
  std::vector<double> v(names.size(), 0.0);
  for (const auto& [name, s] : phases) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) v[static_cast<std::size_t>(it - names.begin())] = s;
  }
  return v;
}

std::string training_charts(const Report& report, const RecordSet& records) {
  std::map<int, std::vector<const TrainWindowRecord*>> by_rank;
  std::vector<const TrainWindowRecord*> all;
  for (const auto& w : records.windows) {
    by_rank[w.rank].push_back(&w);
    all.push_back(&w);
  }
  for (auto& [rank, ws] : by_rank) {
    std::stable_sort(ws.begin(), ws.end(),
                     [](const auto* a, const auto* b) { return a->step_last < b->step_last; });
  }
  std::vector<Series> p50, mfu;
  for (const auto& [rank, ws] : by_rank) {
    Series s{rank_label(rank) + " p50", {}}, m{rank_label(rank), {}};
    for (const auto* w : ws) {
      s.points.emplace_back(mid_step(*w), w->step_s_p50);
      if (w->throughput && w->throughput->mfu) {
        m.points.emplace_back(mid_step(*w), *w->throughput->mfu * 100.0);
      }
    }
    p50.push_back(std::move(s));
    if (!m.points.empty()) mfu.push_back(std::move(m));
  }
  if (by_rank.size() == 1) {
    Series s{"p95", {}};
    for (const auto* w : by_rank.begin()->second)
      s.points.emplace_back(mid_step(*w), w->step_s_p95);
    p50.push_back(std::move(s));
  }
  std::string html = "<h2>Training</h2>\n";
  html += line_chart("Step time over steps (per window)", "step", "seconds per step", p50);

  // The same phases and colors in every chart below, so that ranks compare at a glance.
  std::vector<std::string> names = phase_names(all);
  auto straggler = [&report](int rank) {
    return std::find(report.stragglers.begin(), report.stragglers.end(), rank) !=
           report.stragglers.end();
  };
  if (by_rank.size() > 1) {
    std::vector<std::string> labels;
    std::vector<std::vector<double>> values;
    for (const auto& rs : report.ranks) {
      if (rs.phase_s.empty()) continue;
      labels.push_back(rank_label(rs.rank) + (straggler(rs.rank) ? " (straggler)" : ""));
      values.push_back(phase_values(names, rs.phase_s));
    }
    html += stacked_bars("Phase breakdown per rank (mean per step)", "seconds per step", names,
                         labels, values);
  }
  std::size_t charted = 0;
  for (const auto& [rank, ws] : by_rank) {
    bool first_ones = charted < kMaxRankCharts;
    if (!first_ones && !straggler(rank)) continue;
    ++charted;
    std::vector<std::string> labels;
    std::vector<std::vector<double>> values;
    for (const auto* w : ws) {
      labels.push_back(strprintf("%lld-%lld", static_cast<long long>(w->step_first),
                                 static_cast<long long>(w->step_last)));
      values.push_back(phase_values(names, w->phases_s));
    }
    html += stacked_bars("Phase breakdown per window (" + rank_label(rank) +
                             (straggler(rank) ? ", straggler" : "") + ", mean per step)",
                         "seconds per step", names, labels, values);
  }
  if (charted < by_rank.size()) {
    html += strprintf("<p class=\"empty\">%zu more ranks: see the per-rank chart</p>\n",
                      by_rank.size() - charted);
  }
  html += line_chart("MFU per window", "step", "MFU %", mfu);
  // What a device meter (NVML) read, when the windows carry it: did the clocks drop with MFU?
  std::vector<Series> power, clock;
  for (const auto& [rank, ws] : by_rank) {
    Series p{rank_label(rank), {}}, c{rank_label(rank), {}};
    for (const auto* w : ws) {
      if (!w->peaks) continue;
      if (w->peaks->power_w_mean) p.points.emplace_back(mid_step(*w), *w->peaks->power_w_mean);
      if (w->peaks->sm_clock_mhz_min) {
        c.points.emplace_back(mid_step(*w), static_cast<double>(*w->peaks->sm_clock_mhz_min));
      }
    }
    if (!p.points.empty()) power.push_back(std::move(p));
    if (!c.points.empty()) clock.push_back(std::move(c));
  }
  if (!power.empty()) html += line_chart("Device power per window (mean)", "step", "watts", power);
  if (!clock.empty()) {
    html += line_chart("SM clock per window (lowest read)", "step", "MHz", clock);
  }
  return html;
}

std::string request_charts(const RecordSet& records) {
  std::vector<std::string> names;
  for (const auto& r : records.requests) {
    for (const auto& s : r.stages) {
      if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
    }
  }
  names.push_back("untimed");
  std::set<int> ranks;
  for (const auto& r : records.requests) ranks.insert(r.rank);
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  for (const auto& r : records.requests) {
    std::string label = "#" + std::to_string(r.req);
    if (ranks.size() > 1) label = "r" + std::to_string(r.rank) + label;
    if (r.warmup) label += "w";
    labels.push_back(label);
    std::vector<double> v(names.size(), 0.0);
    double timed = 0;
    for (const auto& s : r.stages) {
      auto k =
          static_cast<std::size_t>(std::find(names.begin(), names.end(), s.name) - names.begin());
      v[k] = s.total_ms / 1000.0;
      timed += v[k];
    }
    v.back() = std::max(r.e2e_s - timed, 0.0);
    values.push_back(std::move(v));
  }
  std::string html = "<h2>Requests</h2>\n" +
                     stacked_bars("End-to-end time per request, stacked by stage (w = warmup)",
                                  "seconds", names, labels, values);
  // Joules per request (one generated video) and mean power, when a device meter read them.
  std::map<int, Series> energy, power;
  for (const auto& r : records.requests) {
    if (!r.peaks) continue;
    auto x = static_cast<double>(r.req);
    if (r.peaks->energy_j) {
      energy.try_emplace(r.rank, Series{rank_label(r.rank), {}})
          .first->second.points.emplace_back(x, *r.peaks->energy_j);
    }
    if (r.peaks->power_w_mean) {
      power.try_emplace(r.rank, Series{rank_label(r.rank), {}})
          .first->second.points.emplace_back(x, *r.peaks->power_w_mean);
    }
  }
  auto charted = [](std::map<int, Series>& by_rank) {
    std::vector<Series> out;
    for (auto& [rank, series] : by_rank) out.push_back(std::move(series));
    return out;
  };
  if (!energy.empty()) {
    html += line_chart("Energy per request (one video)", "request", "joules", charted(energy));
  }
  if (!power.empty()) {
    html += line_chart("Device power per request (mean)", "request", "watts", charted(power));
  }
  return html;
}

}  // namespace

std::string report_html(const Report& report, const RecordSet& records) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>vxperf report</title>\n<style>\n"
      "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\n"
      "pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:13px}\n"
      "svg{display:block;margin:12px 0;background:#fcfcfc;border:1px solid #ddd}\n"
      ".title{font-size:15px;font-weight:bold}.axis{font-size:11px;fill:#444}\n"
      ".grid{stroke:#e4e4e4}.empty{color:#888}.warn{color:#b00}\n"
      "</style></head><body>\n<h1>vxperf report</h1>\n";
  if (!report.sources.empty()) {
    html += "<p>";
    for (std::size_t i = 0; i < report.sources.size(); ++i) {
      html += (i ? ", " : "") + std::string("<code>") + escape(report.sources[i]) + "</code>";
    }
    html += "</p>\n";
  }
  for (const auto& w : report.warnings) html += "<p class=\"warn\">" + escape(w) + "</p>\n";
  html += "<h2>Summary</h2>\n<pre>" + escape(format_report(report)) + "</pre>\n";
  if (!records.windows.empty()) html += training_charts(report, records);
  if (!records.requests.empty()) html += request_charts(records);
  return html + "</body></html>\n";
}

}  // namespace vxperf::analysis
