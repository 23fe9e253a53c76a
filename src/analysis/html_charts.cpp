// The page's charts of windows and requests, and the training and requests sections they form.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/html_parts.h"
#include "analysis/units.h"
#include "base/strings.h"

namespace vxperf::analysis {

using internal::strprintf;
using namespace html;
namespace {

// Up to this many ranks get a line of their own; beyond, lines show the median across ranks and
// a band from the fastest to the slowest (stragglers keep their own line).
constexpr std::size_t kMaxRankLines = 8;
// Ranks beyond this get no per-window phase chart of their own, unless they are stragglers.
constexpr std::size_t kMaxRankCharts = 8;
// The per-rank phase bars show at most this many ranks (those with the most excess).
constexpr std::size_t kMaxRankBars = 64;
// Fewer requests than this get a denoising-step line each.
constexpr std::size_t kMaxRequestLines = 10;

// One line per rank (up to kMaxRankLines ranks), or the median across ranks with a band from the
// lowest to the highest and the stragglers' own lines.
std::string per_rank_chart(const std::string& title, const svg::YAxis& y, const Columns& c,
                           const Report& report, Getter get, const std::string& suffix = "") {
  std::vector<svg::Series> series;
  std::vector<svg::Band> bands;
  auto line_of = [&](std::size_t row) {
    svg::Series s{rank_label(c.ranks[row]) + suffix, {}, false, {}};
    for (std::size_t k = 0; k < c.spans.size(); ++k) {
      const Window* w = c.cells[k][row];
      if (w && !none(get(*w))) {
        s.points.emplace_back(w->mid_step(), get(*w));
        s.tips.push_back(span_text(c.spans[k]));
      }
    }
    return s;
  };
  if (c.ranks.size() <= kMaxRankLines) {
    for (std::size_t row = 0; row < c.ranks.size(); ++row) {
      auto s = line_of(row);
      if (!s.points.empty()) series.push_back(std::move(s));
    }
  } else {
    svg::Band band{"lowest to highest rank", {}};
    svg::Series median{"median across ranks", {}, false, {}};
    for (std::size_t k = 0; k < c.spans.size(); ++k) {
      std::vector<double> values = column_values(c, k, get);
      if (values.empty()) continue;
      double x = mid(c.spans[k]);
      band.points.push_back({x, {values.front(), values.back()}});
      median.points.emplace_back(x, values[values.size() / 2]);
      median.tips.push_back(span_text(c.spans[k]) + strprintf(", %zu ranks", values.size()));
    }
    if (!median.points.empty()) {
      bands.push_back(std::move(band));
      series.push_back(std::move(median));
    }
    for (std::size_t row = 0; row < c.ranks.size() && series.size() <= kMaxRankLines; ++row) {
      if (!is_straggler(report, c.ranks[row])) continue;
      auto s = line_of(row);
      s.name += " (straggler)";
      if (!s.points.empty()) series.push_back(std::move(s));
    }
  }
  if (series.empty()) return "";
  return svg::line_chart(title, "step", y, std::move(series), bands);
}

// A charted reading's title and axis: "Device power per window (mean)", "power (W)".
std::string reading_title(const Show& show, const char* per) {
  return std::string(show.chart) + " per " + per + " (" + show.chart_note + ")";
}
svg::YAxis reading_axis(const Show& show) { return {show.label, {1, show.unit}}; }

std::vector<double> phase_values(const std::vector<std::string>& names,
                                 const std::vector<std::pair<std::string, double>>& phases) {
  std::vector<double> v(names.size(), 0.0);
  for (const auto& [name, s] : phases) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) v[static_cast<std::size_t>(it - names.begin())] = s;
  }
  return v;
}

// Lines of a number per request, by rank (up to kMaxRankLines ranks), warmup ones on their own
// dashed line.
std::string per_request_chart(const std::string& title, const svg::YAxis& y,
                              const ChartData::Impl& d,
                              const std::function<double(const ChartData::Impl::Request&)>& get) {
  std::map<int, svg::Series> by_rank;
  svg::Series warmup{"warmup", {}, true, {}};
  for (const auto& r : d.requests) {
    double v = get(r);
    if (none(v)) continue;
    auto x = static_cast<double>(r.req);
    std::string tip = "req#" + std::to_string(r.req);
    if (r.warmup) {
      warmup.points.emplace_back(x, v);
      warmup.tips.push_back(rank_label(r.rank) + " " + tip);
      continue;
    }
    if (by_rank.size() >= kMaxRankLines && !by_rank.count(r.rank)) continue;
    auto& s =
        by_rank.try_emplace(r.rank, svg::Series{rank_label(r.rank), {}, false, {}}).first->second;
    s.points.emplace_back(x, v);
    s.tips.push_back(tip);
  }
  std::vector<svg::Series> series;
  for (auto& [rank, s] : by_rank) series.push_back(std::move(s));
  if (!warmup.points.empty()) series.push_back(std::move(warmup));
  if (series.empty()) return "";
  return svg::line_chart(title, "request", y, std::move(series));
}

std::string denoising_chart(const DenoisingSteps& steps) {
  std::vector<const DenoisingRequest*> measured, warmup;
  std::set<int> ranks;
  double top = 0;
  for (const auto& r : steps.requests) {
    (r.warmup ? warmup : measured).push_back(&r);
    ranks.insert(r.rank);
    for (double ms : r.ms) top = std::max(top, ms / 1000.0);
  }
  auto name = [&](const DenoisingRequest& r) {
    std::string n =
        (ranks.size() > 1 ? rank_label(r.rank) + " " : "") + "req#" + std::to_string(r.req);
    return r.warmup ? n + " (warmup)" : n;
  };
  auto line = [&](const DenoisingRequest& r) {
    svg::Series s{name(r), {}, r.warmup, {}};
    for (std::size_t i = 0; i < r.ms.size(); ++i) {
      s.points.emplace_back(static_cast<double>(i + 1), r.ms[i] / 1000.0);
      s.tips.push_back("call " + std::to_string(i + 1));
    }
    return s;
  };
  std::vector<svg::Series> series;
  std::vector<svg::Band> bands;
  if (steps.requests.size() <= kMaxRequestLines) {
    for (const auto& r : steps.requests) series.push_back(line(r));
  } else {
    std::size_t longest = 0;
    for (const auto* r : measured) longest = std::max(longest, r->ms.size());
    svg::Band band{"fastest to slowest request", {}};
    svg::Series median{strprintf("median of %zu requests", measured.size()), {}, false, {}};
    for (std::size_t i = 0; i < longest; ++i) {
      std::vector<double> at;
      for (const auto* r : measured) {
        if (i < r->ms.size()) at.push_back(r->ms[i] / 1000.0);
      }
      std::sort(at.begin(), at.end());
      auto x = static_cast<double>(i + 1);
      band.points.push_back({x, {at.front(), at.back()}});
      median.points.emplace_back(x, at[at.size() / 2]);
      median.tips.push_back(strprintf("call %zu, %zu requests", i + 1, at.size()));
    }
    if (!median.points.empty()) {
      bands.push_back(std::move(band));
      series.push_back(std::move(median));
    }
    for (std::size_t i = 0; i < warmup.size() && i < kMaxRankLines; ++i) {
      series.push_back(line(*warmup[i]));
    }
  }
  // Calls, not denoising steps: with classifier-free guidance run as two calls a denoising step
  // is two of them, which nothing in a log or trace tells apart.
  return svg::line_chart("Transformer calls in order: time of each (warmup dashed)",
                         "transformer call", time_axis("time per call", top), std::move(series),
                         bands);
}

// Each rank's loop so far in the ledger's parts, its goodput in its label (the latest window's).
std::string ledger_bars(const Report& report) {
  std::vector<std::string> parts;
  for (const LedgerPart& part : kLedgerParts) parts.push_back(part.words);
  // A part's bar, per rank as `per` says; a part below zero (steps faster than the ideal, net)
  // has none.
  auto bars = [](const Ledger& l, double per) {
    std::vector<double> values;
    for (const LedgerPart& part : kLedgerParts) {
      values.push_back((part.net ? std::max(0.0, l.*part.seconds) : l.*part.seconds) / per);
    }
    return values;
  };
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double top = 0;
  for (const auto& rs : report.ranks) {
    if (!rs.ledger) continue;
    const Ledger& l = *rs.ledger;
    labels.push_back(rank_label(rs.rank) + strprintf("\ngoodput %.0f%%", 100.0 * l.goodput));
    values.push_back(bars(l, 1));
    top = std::max(top, l.wall_s);
  }
  // The job's (the ranks' added up) as its mean per rank, on the ranks' scale.
  if (const auto& job = report.job_ledger; job && job->ranks > 1) {
    const Ledger& l = job->ledger;
    const double n = job->ranks;
    labels.push_back(strprintf("job, per rank\ngoodput %.0f%%", 100.0 * l.goodput));
    values.push_back(bars(l, n));
    top = std::max(top, l.wall_s / n);
  }
  if (labels.empty()) return "";
  return svg::stacked_bars("Where each rank's loop went (the ledger so far)",
                           time_axis("wall time", top), parts, labels, values);
}

}  // namespace

std::string html::training_section(const Report& report, const ChartData::Impl& d) {
  Columns c = columns_of(d);
  double top = 0;
  for (const auto& w : d.windows) top = std::max(top, static_cast<double>(w.p95));
  std::string html = "<h2>Training</h2>\n";
  if (c.ranks.size() == 1) {
    svg::Series p50{rank_label(c.ranks[0]) + " p50", {}, false, {}}, p95{"p95", {}, true, {}};
    for (std::size_t k = 0; k < c.spans.size(); ++k) {
      const Window* w = c.cells[k][0];
      p50.points.emplace_back(w->mid_step(), w->p50);
      p50.tips.push_back(span_text(c.spans[k]));
      p95.points.emplace_back(w->mid_step(), w->p95);
      p95.tips.push_back(span_text(c.spans[k]));
    }
    html += svg::line_chart("Step time over steps (per window)", "step",
                            time_axis("time per step", top), {p50, p95});
  } else {
    html += per_rank_chart(
        "Step time over steps (per window)", time_axis("time per step", top), c, report,
        [](const Window& w) { return static_cast<double>(w.p50); }, " p50");
    html += heatmaps(report, d, c);
  }

  // The same phases and colors in every chart below, so that ranks compare at a glance.
  std::vector<std::string> names(
      d.phase_names.begin(),
      d.phase_names.begin() +
          static_cast<std::ptrdiff_t>(std::min(d.phase_names.size(), ChartData::Impl::kMaxPhases)));
  if (report.ranks.size() > 1) {
    std::vector<const RankSummary*> shown;
    for (const auto& rs : report.ranks) {
      if (!rs.phase_s.empty()) shown.push_back(&rs);
    }
    std::string which = "";
    if (shown.size() > kMaxRankBars) {
      std::stable_sort(shown.begin(), shown.end(), [](const auto* a, const auto* b) {
        return a->excess_s.value_or(0) > b->excess_s.value_or(0);
      });
      shown.resize(kMaxRankBars);
      std::sort(shown.begin(), shown.end(),
                [](const auto* a, const auto* b) { return a->rank < b->rank; });
      which = strprintf(", the %zu ranks with the most excess", kMaxRankBars);
    }
    std::vector<std::string> labels;
    std::vector<std::vector<double>> values;
    double sum_top = 0;
    for (const auto* rs : shown) {
      labels.push_back(rank_label(rs->rank) +
                       (is_straggler(report, rs->rank) ? " (straggler)" : ""));
      values.push_back(phase_values(names, rs->phase_s));
      double sum = 0;
      for (double v : values.back()) sum += v;
      sum_top = std::max(sum_top, sum);
    }
    html += svg::stacked_bars("Phase breakdown per rank (mean per step" + which + ")",
                              time_axis("time per step", sum_top), names, labels, values);
  }
  html += ledger_bars(report);
  std::size_t charted = 0;
  for (std::size_t row = 0; row < c.ranks.size(); ++row) {
    int rank = c.ranks[row];
    if (charted >= kMaxRankCharts && !is_straggler(report, rank)) continue;
    ++charted;
    std::vector<std::string> labels;
    std::vector<std::vector<double>> values;
    double sum_top = 0;
    for (std::size_t k = 0; k < c.spans.size(); ++k) {
      const Window* w = c.cells[k][row];
      if (!w) continue;
      labels.push_back(strprintf("%lld-%lld", static_cast<long long>(w->step_first),
                                 static_cast<long long>(w->step_last)));
      std::vector<double> v(names.size());
      double sum = 0;
      for (std::size_t p = 0; p < names.size(); ++p) sum += v[p] = w->phase_s[p];
      sum_top = std::max(sum_top, sum);
      values.push_back(std::move(v));
    }
    html += svg::stacked_bars("Phase breakdown per window (" + rank_label(rank) +
                                  (is_straggler(report, rank) ? ", straggler" : "") +
                                  ", mean per step)",
                              time_axis("time per step", sum_top), names, labels, values);
  }
  if (charted < c.ranks.size()) {
    html += strprintf(
        "<p class=\"empty\">%zu more ranks: see the per-rank chart and the heatmaps</p>\n",
        c.ranks.size() - charted);
  }
  html += per_rank_chart("MFU per window", kMfuAxis, c, report,
                         [](const Window& w) { return static_cast<double>(w.mfu); });
  double bytes = 0;
  for (const auto& w : d.windows) {
    if (!none(w.reserved_bytes)) bytes = std::max(bytes, w.reserved_bytes);
    if (!none(w.alloc_bytes)) bytes = std::max(bytes, w.alloc_bytes);
  }
  if (bytes > 0) {
    svg::YAxis axis{"peak memory", units::bytes_unit(bytes)};
    html += per_rank_chart("Peak memory allocated per window", axis, c, report,
                           [](const Window& w) { return w.alloc_bytes; });
    html += per_rank_chart("Peak memory reserved per window (the allocator's cache)", axis, c,
                           report, [](const Window& w) { return w.reserved_bytes; });
  }
  // What a device meter (NVML) read, when the windows carry it: did the clocks drop with MFU?
  const auto& meters = ChartData::Impl::charted();
  for (std::size_t k = 0; k < meters.size(); ++k) {
    if ((meters[k].charts & kChartWindows) == 0) continue;
    html += per_rank_chart(reading_title(meters[k], "window"), reading_axis(meters[k]), c, report,
                           [k](const Window& w) { return static_cast<double>(w.readings[k]); });
  }
  return html;
}

std::string html::request_section(const ChartData::Impl& d, const DenoisingSteps* steps) {
  double top = 0;
  for (const auto& r : d.requests) top = std::max(top, static_cast<double>(r.e2e_s));
  std::string html = "<h2>Requests</h2>\n";
  html +=
      per_request_chart("End-to-end time per request (warmup dashed)", time_axis("end to end", top),
                        d, [](const ChartData::Impl::Request& r) { return double(r.e2e_s); });
  std::vector<std::string> names = d.stage_names;
  names.push_back("untimed");
  std::set<int> ranks;
  for (const auto& b : d.last_bars) ranks.insert(b.rank);
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  double bar_top = 0;
  for (const auto& b : d.last_bars) {
    std::string label = "#" + std::to_string(b.req);
    if (ranks.size() > 1) label = "r" + std::to_string(b.rank) + label;
    if (b.warmup) label += "w";
    labels.push_back(label);
    std::vector<double> v(names.size(), 0.0);
    double sum = b.untimed_s;
    for (std::size_t k = 0; k < b.stage_s.size(); ++k) sum += v[k] = b.stage_s[k];
    v.back() = b.untimed_s;
    bar_top = std::max(bar_top, sum);
    values.push_back(std::move(v));
  }
  std::string shown = d.requests.size() > d.last_bars.size()
                          ? strprintf(" (last %zu of %zu)", d.last_bars.size(), d.requests.size())
                          : "";
  html += svg::stacked_bars("End-to-end time per request, stacked by stage (w = warmup)" + shown,
                            time_axis("end to end", bar_top), names, labels, values);
  if (steps && !steps->requests.empty()) html += denoising_chart(*steps);
  double bytes = 0;
  for (const auto& r : d.requests) {
    if (!none(r.reserved_bytes)) bytes = std::max(bytes, r.reserved_bytes);
  }
  if (bytes > 0) {
    svg::YAxis axis{"peak memory", units::bytes_unit(bytes)};
    html += per_request_chart("Peak memory allocated per request", axis, d,
                              [](const ChartData::Impl::Request& r) { return r.alloc_bytes; });
    html += per_request_chart("Peak memory reserved per request", axis, d,
                              [](const ChartData::Impl::Request& r) { return r.reserved_bytes; });
  }
  // Joules per request (one generated video) and mean power, when a device meter read them.
  const auto& meters = ChartData::Impl::charted();
  for (std::size_t k = 0; k < meters.size(); ++k) {
    if ((meters[k].charts & kChartRequests) == 0) continue;
    html += per_request_chart(
        reading_title(meters[k], "request"), reading_axis(meters[k]), d,
        [k](const ChartData::Impl::Request& r) { return static_cast<double>(r.readings[k]); });
  }
  return html;
}

}  // namespace vxperf::analysis
