// The report as one self-contained HTML page: inline CSS and SVG, one inline script for the
// heatmaps (drawn on canvases from the numbers embedded beside them) and their hover values.
// Nothing is fetched.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/chart_data.h"
#include "analysis/page_assets.h"
#include "analysis/svg_charts.h"
#include "analysis/units.h"
#include "base/strings.h"
#include "vxperf/report.h"
#include "vxperf/xrank.h"

namespace vxperf::analysis {

using internal::strprintf;
using svg::escape;
namespace {

using Window = ChartData::Impl::Window;
using Json = nlohmann::json;

// Up to this many ranks get a line of their own; beyond, lines show the median across ranks and
// a band from the fastest to the slowest (stragglers keep their own line).
constexpr std::size_t kMaxRankLines = 8;
// Ranks beyond this get no per-window phase chart of their own, unless they are stragglers.
constexpr std::size_t kMaxRankCharts = 8;
// The per-rank phase bars show at most this many ranks (those with the most excess).
constexpr std::size_t kMaxRankBars = 64;
// A heatmap has at most this many rows and columns: beyond, each cell is the largest of a band
// of ranks or windows (a straggler is the largest, so it shows).
constexpr std::size_t kMaxHeatRows = 256, kMaxHeatCols = 400;
// Fewer requests than this get a denoising-step line each.
constexpr std::size_t kMaxRequestLines = 10;

bool none(double v) { return std::isnan(v); }

std::string rank_label(int rank) { return "rank " + std::to_string(rank); }

std::string time_text(double seconds) { return units::in_unit(seconds, units::time_unit(seconds)); }

std::string percent(double fraction) { return strprintf("%.1f%%", fraction * 100.0); }

const svg::YAxis kMfuAxis{"MFU", {100, "%"}};

// ---- tables -------------------------------------------------------------------------------------

struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;  // cells are HTML
  std::vector<std::string> row_class;
};

std::string table_html(const Table& t, const char* css = "") {
  std::string s = std::string("<table class=\"") + css + "\"><thead><tr>";
  for (const auto& h : t.head) s += "<th>" + escape(h) + "</th>";
  s += "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    std::string cls = i < t.row_class.size() ? t.row_class[i] : "";
    s += cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">";
    for (const auto& c : t.rows[i]) s += "<td>" + c + "</td>";
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

// Rows of name and value, the value HTML-escaped.
struct Facts {
  Table t{{"", ""}, {}, {}};
  void add(const std::string& name, const std::string& value) {
    if (!value.empty()) t.rows.push_back({escape(name), escape(value)});
  }
  std::string html() const { return table_html(t, "facts"); }
};

std::string rate_basis(const std::optional<double>& peak, const std::string& source,
                       const std::string& dtype) {
  if (!peak) return "";
  std::string text = "of " + units::flops_rate(*peak) + " per device";
  std::string basis = source.empty() ? "" : source;
  if (!dtype.empty()) basis += (basis.empty() ? "" : ", ") + dtype;
  return basis.empty() ? text : text + " (" + basis + ")";
}

void energy_facts(Facts& f, const std::optional<EnergySummary>& e, const char* unit,
                  const char* over) {
  if (!e) return;
  if (e->records > 0) {
    std::string text = e->per_unit_j ? strprintf("%.3f J/%s, ", *e->per_unit_j, unit) : "";
    text += strprintf("%.3f J over %lld %s", e->energy_j, static_cast<long long>(e->records), over);
    if (!e->energy_from.empty()) text += " (from " + internal::join(e->energy_from, ", ") + ")";
    f.add("energy", text);
  }
  std::vector<std::string> device;
  if (e->power_w_mean) device.push_back(strprintf("power %.1f W mean", *e->power_w_mean));
  if (e->power_w_max) device.push_back(strprintf("%.1f W max", *e->power_w_max));
  if (e->sm_clock_mhz_min) {
    device.push_back(
        strprintf("SM clock min %lld MHz", static_cast<long long>(*e->sm_clock_mhz_min)));
  }
  if (e->temp_c_max) {
    device.push_back(strprintf("temp max %lld C", static_cast<long long>(*e->temp_c_max)));
  }
  if (!device.empty()) f.add("device", internal::join(device, ", "));
  if (!e->throttle.empty()) f.add("throttle", internal::join(e->throttle, ", "));
}

std::string memory_text(const std::optional<std::uint64_t>& alloc,
                        const std::optional<std::uint64_t>& reserved) {
  if (!alloc) return "";
  auto bytes = [](std::uint64_t b) {
    auto d = static_cast<double>(b);
    return units::in_unit(d, units::bytes_unit(d));
  };
  return bytes(*alloc) + " allocated, " + bytes(reserved.value_or(0)) + " reserved";
}

std::string share_cell(double share) {
  return strprintf("<span class=\"bar\" style=\"width:%.0fpx\"></span> %s",
                   std::clamp(share, 0.0, 1.0) * 120.0, percent(share).c_str());
}

std::string requests_summary(const RequestSummary& r) {
  Facts f;
  std::string measured = std::to_string(r.count);
  if (r.warmup) {
    measured += strprintf(" (%lld warmup %s)", static_cast<long long>(r.warmup),
                          r.warmup == r.count ? "included: all are warmup" : "excluded");
  }
  f.add("requests", measured);
  f.add("end to end", "p50 " + time_text(r.e2e_p50_s) + ", p95 " + time_text(r.e2e_p95_s) +
                          ", max " + time_text(r.e2e_max_s) + ", mean " + time_text(r.e2e_mean_s));
  if (r.params) f.add("DiT", units::param_count(*r.params) + " params");
  if (r.tflops) f.add("rate", units::flops_rate(*r.tflops));
  if (r.mfu)
    f.add("MFU", percent(*r.mfu) + " " + rate_basis(r.peak_tflops, r.peak_source, r.dtype));
  if (r.skipped_fwd) {
    f.add("cached forwards",
          strprintf("%lld of %lld transformer calls skipped, %.4g full forwards computed",
                    static_cast<long long>(*r.skipped_fwd),
                    static_cast<long long>(r.transformer_calls), r.effective_fwd.value_or(0)));
  }
  f.add("peak memory", memory_text(r.peak_alloc_bytes, r.peak_reserved_bytes));
  energy_facts(f, r.energy, r.videos == r.count ? "request (video)" : "request", "requests");
  Table stages{{"stage", "mean per request", "calls per request", "share of end to end"}, {}, {}};
  double top = 0;
  for (const auto& s : r.stages) top = std::max(top, s.mean_ms / 1000.0);
  units::Unit unit = units::time_unit(top);
  for (const auto& s : r.stages) {
    stages.rows.push_back({escape(s.name), escape(units::in_unit(s.mean_ms / 1000.0, unit)),
                           strprintf("%.1f", s.calls), share_cell(s.share)});
  }
  return "<h3>Requests</h3>\n" + f.html() + table_html(stages);
}

std::string training_summary(const TrainSummary& t) {
  Facts f;
  std::string steps = strprintf("%lld in %lld windows", static_cast<long long>(t.steps),
                                static_cast<long long>(t.windows));
  if (t.warmup_excluded) {
    steps += strprintf(" (%lld warmup excluded)", static_cast<long long>(t.warmup_excluded));
  }
  f.add("steps", steps);
  f.add("step time", "p50 " + time_text(t.step_p50_s) + ", p95 " + time_text(t.step_p95_s));
  if (t.samples_per_s) {
    f.add("samples/s", strprintf("%.3f per rank, dp=%d: %.3f global", *t.samples_per_s, t.dp,
                                 t.samples_per_s_global.value_or(0)));
  }
  if (t.params) {
    std::string text = units::param_count(*t.params) + " params";
    if (t.trainable && *t.trainable != *t.params) {
      text += ", " + units::param_count(*t.trainable) + " trainable";
    }
    f.add("DiT", text);
  }
  if (t.tflops) f.add("rate", units::flops_rate(*t.tflops));
  if (t.mfu || t.hfu) {
    f.add("MFU / HFU", (t.mfu ? percent(*t.mfu) : "-") + " / " + (t.hfu ? percent(*t.hfu) : "-") +
                           " " + rate_basis(t.peak_tflops, t.peak_source, t.dtype));
  }
  if (t.skipped_fwd) {
    f.add("cached forwards",
          strprintf("%lld forward calls skipped, %.4g full forwards computed",
                    static_cast<long long>(*t.skipped_fwd), t.effective_fwd.value_or(0)));
  }
  f.add("peak memory", memory_text(t.peak_alloc_bytes, t.peak_reserved_bytes));
  energy_facts(f, t.energy, "sample", "windows");
  if (t.eta_s) f.add("ETA", units::duration(*t.eta_s));
  Table phases{{"phase", "mean per step", "share of the phases"}, {}, {}};
  double top = 0;
  for (const auto& [name, s] : t.phase_s) top = std::max(top, s);
  units::Unit unit = units::time_unit(top);
  for (std::size_t i = 0; i < t.phase_s.size(); ++i) {
    phases.rows.push_back({escape(t.phase_s[i].first),
                           escape(units::in_unit(t.phase_s[i].second, unit)),
                           share_cell(t.phase_share[i].second)});
  }
  return "<h3>Training</h3>\n" + f.html() + table_html(phases);
}

bool is_straggler(const Report& report, int rank) {
  return std::find(report.stragglers.begin(), report.stragglers.end(), rank) !=
         report.stragglers.end();
}

std::string ranks_summary(const Report& report) {
  Table t{{"rank", "requests", "e2e p50", "steps", "step p50", "step p95", "samples/s", "FLOP/s",
           "MFU", "peak alloc", "excess"},
          {},
          {}};
  double top_e2e = 0, top_step = 0, top_excess = 0, top_bytes = 0;
  for (const auto& rs : report.ranks) {
    top_e2e = std::max(top_e2e, rs.e2e_p50_s.value_or(0));
    top_step = std::max(top_step, rs.step_p95_s.value_or(0));
    top_excess = std::max(top_excess, rs.excess_s.value_or(0));
    top_bytes = std::max(top_bytes, static_cast<double>(rs.peak_alloc_bytes.value_or(0)));
  }
  units::Unit e2e = units::time_unit(top_e2e), step = units::time_unit(top_step),
              excess = units::time_unit(top_excess), bytes = units::bytes_unit(top_bytes);
  auto cell = [](const std::optional<double>& v, const units::Unit& u) {
    return v ? escape(units::in_unit(*v, u)) : std::string("-");
  };
  for (const auto& rs : report.ranks) {
    bool slow = is_straggler(report, rs.rank);
    t.rows.push_back(
        {std::to_string(rs.rank) + (slow ? " <b>straggler</b>" : ""), std::to_string(rs.requests),
         cell(rs.e2e_p50_s, e2e), std::to_string(rs.steps), cell(rs.step_p50_s, step),
         cell(rs.step_p95_s, step), rs.samples_per_s ? strprintf("%.3f", *rs.samples_per_s) : "-",
         rs.tflops ? escape(units::flops_rate(*rs.tflops)) : "-", rs.mfu ? percent(*rs.mfu) : "-",
         rs.peak_alloc_bytes
             ? escape(units::in_unit(static_cast<double>(*rs.peak_alloc_bytes), bytes))
             : "-",
         cell(rs.excess_s, excess)});
    t.row_class.push_back(slow ? "straggler" : "");
  }
  std::string s = strprintf("<h3>Ranks (%zu)</h3>\n", report.ranks.size());
  s += report.ranks.size() > 16 ? "<div class=\"scroll\">" + table_html(t) + "</div>\n"
                                : table_html(t);
  if (report.stragglers.empty()) return s + "<p>Stragglers: none</p>\n";
  s += "<p class=\"warn\">Stragglers:";
  for (std::size_t i = 0; i < report.stragglers.size(); ++i) {
    for (const auto& rs : report.ranks) {
      if (rs.rank != report.stragglers[i]) continue;
      double v = report.training ? rs.step_p50_s.value_or(0) : rs.e2e_p50_s.value_or(0);
      s += escape(strprintf(" rank %d (%s, +%s above the ranks' medians, most in %s)", rs.rank,
                            time_text(v).c_str(), time_text(rs.excess_s.value_or(0)).c_str(),
                            report.straggler_phases[i].c_str()));
    }
  }
  return s + escape(" against the median " + time_text(report.rank_median_s.value_or(0))) +
         "</p>\n";
}

// The job's energy (#28): totals, per video and per sample, a row per device.
std::string energy_summary(const JobEnergy& e) {
  Facts f;
  std::string total = strprintf("%.6f kWh (%.3f J) on %zu device%s", e.energy_j / 3.6e6, e.energy_j,
                                e.devices.size(), e.devices.size() == 1 ? "" : "s");
  f.add("device energy", total);
  if (e.cpu_energy_j) f.add("host CPU and DRAM", strprintf("%.3f J", *e.cpu_energy_j));
  if (e.j_per_video) {
    f.add("per video",
          strprintf("%.3f J over %lld videos", *e.j_per_video, static_cast<long long>(e.videos)));
  }
  if (e.j_per_sample) {
    f.add("per sample",
          strprintf("%.4f J over %.6g samples (every rank's energy)", *e.j_per_sample, e.samples));
  }
  if (e.shared > 0) {
    f.add("shared", strprintf("%lld records split their device's energy with others open then",
                              static_cast<long long>(e.shared)));
  }
  if (e.unread > 0) {
    std::string which = internal::join(e.unread_first, ", ");
    if (e.unread > static_cast<std::int64_t>(e.unread_first.size())) which += ", ...";
    f.add("no readings", strprintf("%lld of %lld records: ", static_cast<long long>(e.unread),
                                   static_cast<long long>(e.records)) +
                             which);
  }
  Table devices{{"device", "kWh", "energy", "mean power", "over", "records"}, {}, {}};
  for (const auto& d : e.devices) {
    devices.rows.push_back(
        {escape(strprintf("cuda:%d rank %d", d.device, d.rank)),
         strprintf("%.6f", d.energy_j / 3.6e6), strprintf("%.3f J", d.energy_j),
         d.power_w_mean ? strprintf("%.1f W", *d.power_w_mean) : std::string("-"),
         escape(time_text(d.seconds)), std::to_string(d.records)});
  }
  return "<h3>Energy (job)</h3>\n" + f.html() + table_html(devices);
}

std::string summary(const Report& report) {
  std::string s = "<h2>Summary</h2>\n";
  if (!report.requests && !report.training) return s + "<p class=\"empty\">no records</p>\n";
  if (report.requests) s += requests_summary(*report.requests);
  if (report.training) s += training_summary(*report.training);
  if (report.energy) s += energy_summary(*report.energy);
  if (report.ranks.size() > 1) s += ranks_summary(report);
  return s;
}

// ---- the windows, by rank and by window ---------------------------------------------------------

struct Columns {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // by (last, first)
  std::vector<int> ranks;                                    // ascending
  std::vector<std::vector<const Window*>> cells;             // [column][row], null: none
};

Columns columns_of(const ChartData::Impl& d) {
  Columns c;
  std::set<std::pair<std::int64_t, std::int64_t>> spans;  // (last, first)
  std::set<int> ranks;
  for (const auto& w : d.windows) {
    spans.emplace(w.step_last, w.step_first);
    ranks.insert(w.rank);
  }
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> col;
  for (const auto& s : spans) {
    col[s] = c.spans.size();
    c.spans.emplace_back(s.second, s.first);
  }
  c.ranks.assign(ranks.begin(), ranks.end());
  std::map<int, std::size_t> row;
  for (std::size_t i = 0; i < c.ranks.size(); ++i) row[c.ranks[i]] = i;
  c.cells.assign(c.spans.size(), std::vector<const Window*>(c.ranks.size(), nullptr));
  for (const auto& w : d.windows) c.cells[col[{w.step_last, w.step_first}]][row[w.rank]] = &w;
  return c;
}

double mid(const std::pair<std::int64_t, std::int64_t>& span) {
  return (static_cast<double>(span.first) + static_cast<double>(span.second)) / 2.0;
}

std::string span_text(const std::pair<std::int64_t, std::int64_t>& span) {
  return strprintf("steps %lld-%lld", static_cast<long long>(span.first),
                   static_cast<long long>(span.second));
}

// A number of a window, NaN when it has none.
using Getter = double (*)(const Window&);

// The ranks' values of window column k, ascending (those that have one).
std::vector<double> column_values(const Columns& c, std::size_t k, Getter get) {
  std::vector<double> values;
  for (const Window* w : c.cells[k]) {
    if (w && !none(get(*w))) values.push_back(get(*w));
  }
  std::sort(values.begin(), values.end());
  return values;
}

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

// ---- heatmaps -----------------------------------------------------------------------------------

struct Heat {
  std::string id, title, unit;
  const char* kind = "seq";  // "seq": low to high; "excess": zero upwards
  std::optional<double> mark;
  std::string mark_label;
};

// A rank x window grid (NaN: no window) as a canvas and the numbers it is drawn from, banded to
// at most kMaxHeatRows x kMaxHeatCols cells, each the largest of its band.
std::string heatmap(const Heat& h, const Columns& c, const std::vector<std::vector<double>>& grid,
                    double scale) {
  std::size_t rows = c.ranks.size(), cols = c.spans.size();
  std::size_t kr = (rows + kMaxHeatRows - 1) / kMaxHeatRows;
  std::size_t kc = (cols + kMaxHeatCols - 1) / kMaxHeatCols;
  std::size_t out_rows = (rows + kr - 1) / kr, out_cols = (cols + kc - 1) / kc;
  Json values = Json::array(), who = Json::array(), row_labels = Json::array(),
       col_labels = Json::array();
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t r = 0; r < out_rows; ++r) {
    std::size_t r0 = r * kr, r1 = std::min(rows, r0 + kr);
    row_labels.push_back(kr == 1 ? rank_label(c.ranks[r0])
                                 : strprintf("ranks %d-%d", c.ranks[r0], c.ranks[r1 - 1]));
    for (std::size_t k = 0; k < out_cols; ++k) {
      std::size_t k0 = k * kc, k1 = std::min(cols, k0 + kc);
      double best = NAN;
      int best_rank = 0;
      for (std::size_t i = r0; i < r1; ++i) {
        for (std::size_t j = k0; j < k1; ++j) {
          double v = grid[i][j];
          if (!none(v) && (none(best) || v > best)) {
            best = v;
            best_rank = c.ranks[i];
          }
        }
      }
      if (none(best)) {
        values.push_back(nullptr);
        who.push_back(nullptr);
        continue;
      }
      double shown = std::round(best * scale * 1e4) / 1e4;
      values.push_back(shown);
      who.push_back(best_rank);
      lo = std::min(lo, shown);
      hi = std::max(hi, shown);
    }
  }
  for (std::size_t k = 0; k < out_cols; ++k) {
    std::size_t k0 = k * kc, k1 = std::min(cols, k0 + kc);
    col_labels.push_back(kc == 1 ? strprintf("%lld-%lld", static_cast<long long>(c.spans[k0].first),
                                             static_cast<long long>(c.spans[k0].second))
                                 : strprintf("%lld-%lld", static_cast<long long>(c.spans[k0].first),
                                             static_cast<long long>(c.spans[k1 - 1].second)));
  }
  if (!std::isfinite(lo)) return "";
  if (std::string(h.kind) == "excess") lo = 0;
  if (h.mark) hi = std::max(hi, *h.mark * scale * 1.25);
  double row_px = std::clamp(std::floor(520.0 / static_cast<double>(out_rows)), 2.0, 18.0);
  Json d = {{"title", h.title},   {"unit", h.unit},
            {"kind", h.kind},     {"rows", row_labels},
            {"cols", col_labels}, {"v", values},
            {"lo", lo},           {"hi", hi},
            {"rowpx", row_px},    {"banded", kr > 1 || kc > 1}};
  if (kr > 1 || kc > 1) d["who"] = who;
  if (h.mark) {
    d["mark"] = *h.mark * scale;
    d["markLabel"] = h.mark_label;
  }
  // Inside a script element "</" must not appear: '<' only occurs in JSON strings, so escape it.
  std::string text = d.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string safe;
  for (char ch : text) safe += ch == '<' ? std::string("\\u003c") : std::string(1, ch);
  double height = 34 + row_px * static_cast<double>(out_rows) + 70;
  std::string note =
      kr > 1 || kc > 1
          ? strprintf(
                " <span class=\"empty\">(%zu ranks x %zu windows, each cell the largest of "
                "%zu rank(s) x %zu window(s))</span>",
                rows, cols, kr, kc)
          : "";
  return strprintf(
             "<div class=\"heat\"><canvas class=\"heatmap\" id=\"%s\" width=\"1000\" "
             "height=\"%.0f\" role=\"img\" aria-label=\"%s\"></canvas>%s</div>\n",
             h.id.c_str(), height, escape(h.title).c_str(), note.c_str()) +
         "<script type=\"application/json\" id=\"" + h.id + "-data\">" + safe + "</script>\n";
}

std::string heatmaps(const Report& report, const ChartData::Impl& d, const Columns& c) {
  std::size_t rows = c.ranks.size(), cols = c.spans.size();
  std::vector<std::vector<double>> step(rows, std::vector<double>(cols, NAN)), excess = step;
  std::size_t phases = std::min(d.phase_names.size(), ChartData::Impl::kMaxPhases);
  double top = 0;
  for (std::size_t k = 0; k < cols; ++k) {
    std::vector<RankTimes> times;
    std::vector<std::size_t> rows_of;
    for (std::size_t r = 0; r < rows; ++r) {
      const Window* w = c.cells[k][r];
      if (!w) continue;
      step[r][k] = w->p50;
      top = std::max(top, static_cast<double>(w->p50));
      RankTimes t{c.ranks[r], w->p50, {}};
      for (std::size_t p = 0; p < phases; ++p)
        t.phases_s.emplace_back(d.phase_names[p], w->phase_s[p]);
      times.push_back(std::move(t));
      rows_of.push_back(r);
    }
    if (times.size() < 2) continue;
    StragglerVerdict v = find_stragglers(times);
    for (std::size_t i = 0; i < rows_of.size() && i < v.excess_s.size(); ++i) {
      excess[rows_of[i]][k] = v.excess_s[i];
    }
  }
  units::Unit unit = units::time_unit(top);
  std::string s = heatmap(
      {"heat-step", "Step time per rank and window (p50)", unit.name, "seq", std::nullopt, ""}, c,
      step, unit.scale);
  std::optional<double> margin;
  if (report.training) margin = kStragglerMargin * report.training->step_p50_s;
  s += heatmap({"heat-excess",
                "Time per step above the ranks' per-phase medians (the straggler rule's excess)",
                unit.name, "excess", margin, "5% of the median step"},
               c, excess, unit.scale);
  return s;
}

// ---- sections -----------------------------------------------------------------------------------

std::vector<double> phase_values(const std::vector<std::string>& names,
                                 const std::vector<std::pair<std::string, double>>& phases) {
  std::vector<double> v(names.size(), 0.0);
  for (const auto& [name, s] : phases) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) v[static_cast<std::size_t>(it - names.begin())] = s;
  }
  return v;
}

svg::YAxis time_axis(const std::string& label, double top) {
  return {label, units::time_unit(top)};
}

std::string training_section(const Report& report, const ChartData::Impl& d) {
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
  html += per_rank_chart("Device power per window (mean)", {"power", {1, "W"}}, c, report,
                         [](const Window& w) { return static_cast<double>(w.power_w); });
  html += per_rank_chart("SM clock per window (lowest read)", {"SM clock", {1, "MHz"}}, c, report,
                         [](const Window& w) { return static_cast<double>(w.sm_clock_mhz); });
  return html;
}

// Lines of a number per request, by rank (up to kMaxRankLines ranks), warmup ones on their own
// dashed line.
std::string per_request_chart(const std::string& title, const svg::YAxis& y,
                              const ChartData::Impl& d,
                              double (*get)(const ChartData::Impl::Request&)) {
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
      s.tips.push_back("step " + std::to_string(i + 1));
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
      median.tips.push_back(strprintf("step %zu, %zu requests", i + 1, at.size()));
    }
    if (!median.points.empty()) {
      bands.push_back(std::move(band));
      series.push_back(std::move(median));
    }
    for (std::size_t i = 0; i < warmup.size() && i < kMaxRankLines; ++i) {
      series.push_back(line(*warmup[i]));
    }
  }
  return svg::line_chart("Denoising steps: time of each transformer call (warmup dashed)",
                         "denoising step", time_axis("time per call", top), std::move(series),
                         bands);
}

std::string request_section(const ChartData::Impl& d, const DenoisingSteps* steps) {
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
  html += per_request_chart("Energy per request (one video)", {"energy", {1, "J"}}, d,
                            [](const ChartData::Impl::Request& r) { return double(r.energy_j); });
  html += per_request_chart("Device power per request (mean)", {"power", {1, "W"}}, d,
                            [](const ChartData::Impl::Request& r) { return double(r.power_w); });
  return html;
}

// ---- the page -----------------------------------------------------------------------------------

// The page's style and script: src/analysis/page/report.css and report.js, embedded at build time.
std::string page_open(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
         escape(title) + "</title>\n<style>\n" + kPageStyle + "</style></head><body>\n<h1>" +
         escape(title) + "</h1>\n";
}

std::string page_close() {
  return std::string("<script>") + kPageScript + "</script>\n</body></html>\n";
}

std::string sources_and_warnings(const std::vector<std::string>& sources,
                                 const std::vector<std::string>& warnings) {
  std::string html;
  auto list = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      html += (i > from ? ", " : "") + std::string("<code>") + escape(sources[i]) + "</code>";
    }
  };
  // A file per rank of a big job: the first few, the rest folded away.
  constexpr std::size_t kShown = 4;
  if (sources.size() > 2 * kShown) {
    html += "<p>";
    list(0, kShown);
    html += strprintf("</p>\n<details><summary>and %zu more files</summary><p>",
                      sources.size() - kShown);
    list(kShown, sources.size());
    html += "</p></details>\n";
  } else if (!sources.empty()) {
    html += "<p>";
    list(0, sources.size());
    html += "</p>\n";
  }
  for (const auto& w : warnings) html += "<p class=\"warn\">" + escape(w) + "</p>\n";
  return html;
}

}  // namespace

std::string report_html(const Report& report, const ChartData& charts,
                        const DenoisingSteps* steps) {
  const ChartData::Impl& d = charts.impl();
  std::vector<std::string> warnings = report.warnings;
  if (steps) warnings.insert(warnings.end(), steps->warnings.begin(), steps->warnings.end());
  std::string html = page_open("vxperf report") + sources_and_warnings(report.sources, warnings);
  html += summary(report);
  if (!d.windows.empty()) html += training_section(report, d);
  if (!d.requests.empty() || (steps && !steps->requests.empty())) {
    html += request_section(d, steps);
  }
  return html + page_close();
}

std::string report_html(const Report& report, const RecordSet& records) {
  ChartData charts;
  for (const auto& w : records.windows) charts.window(w);
  for (const auto& r : records.requests) charts.request(r);
  return report_html(report, charts);
}

// ---- the comparison -----------------------------------------------------------------------------

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
    t.rows.push_back({escape(c.name), escape(metric_value(c.a, c.unit)),
                      escape(metric_value(c.b, c.unit)), change,
                      "<span class=\"" + c.direction + "\">" + escape(c.direction) + "</span>"});
    if (!c.change) continue;
    labels.push_back(c.name);
    values.push_back(*c.change * 100.0);
    better.push_back(c.direction == "better");
    tips.push_back(c.name + ": " + metric_value(c.a, c.unit) + " -> " + metric_value(c.b, c.unit) +
                   " (" + change + ", " + c.direction + ")");
  }
  html += "<h2>Metrics</h2>\n" + table_html(t);
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
