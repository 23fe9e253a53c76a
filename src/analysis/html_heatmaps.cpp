// The page's heatmaps: step time and straggler excess per rank and window, drawn by its script.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/html_parts.h"
#include "analysis/units.h"
#include "base/strings.h"
#include "vxperf/xrank.h"

namespace vxperf::analysis {

using internal::strprintf;
using svg::escape;
using namespace html;
namespace {

using Json = nlohmann::json;

// A heatmap has at most this many rows and columns: beyond, each cell is the largest of a band
// of ranks or windows (a straggler is the largest, so it shows).
constexpr std::size_t kMaxHeatRows = 256, kMaxHeatCols = 400;

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

}  // namespace

std::string html::heatmaps(const Report& report, const ChartData::Impl& d, const Columns& c) {
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

}  // namespace vxperf::analysis
