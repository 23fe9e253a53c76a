// What the report page's parts share: formatters, tables, the window grid, the page's frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/chart_data.h"
#include "analysis/svg_charts.h"
#include "vxperf/report.h"

// The page is report_html.cpp (its summary tables), html_charts.cpp (the charts of windows and
// requests), html_heatmaps.cpp and comparison_html.cpp.
namespace vxperf::analysis::html {

using Window = ChartData::Impl::Window;

bool none(double v);                    // a number the record did not carry (NaN)
std::string rank_label(int rank);       // "rank 3"
std::string time_text(double seconds);  // in the unit that fits it
std::string percent(double fraction);   // "12.3%"
svg::YAxis time_axis(const std::string& label, double top);

inline const svg::YAxis kMfuAxis{"MFU", {100, "%"}};

bool is_straggler(const Report& report, int rank);

// ---- tables -------------------------------------------------------------------------------------

struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;  // cells are HTML
  std::vector<std::string> row_class;
};

std::string table_html(const Table& t, const char* css = "");

// ---- the windows, by rank and by window ---------------------------------------------------------

struct Columns {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // by (last, first)
  std::vector<int> ranks;                                    // ascending
  std::vector<std::vector<const Window*>> cells;             // [column][row], null: none
};

Columns columns_of(const ChartData::Impl& d);
double mid(const std::pair<std::int64_t, std::int64_t>& span);             // the span's middle step
std::string span_text(const std::pair<std::int64_t, std::int64_t>& span);  // "steps 0-9"

// A number of a window, NaN when it has none.
using Getter = std::function<double(const Window&)>;

// The ranks' values of window column k, ascending (those that have one).
std::vector<double> column_values(const Columns& c, std::size_t k, Getter get);

// ---- the page's frame and parts -----------------------------------------------------------------

// The page's style and script: src/analysis/page/report.css and report.js, embedded at build time.
std::string page_open(const std::string& title);
std::string page_close();

// The parts below are defined by their qualified names (html::heatmaps): their files use this
// namespace rather than open it.
// html_charts.cpp: the training section (step times, phases, MFU, memory, power per window) and
// the requests section (end-to-end times, stages, denoising steps, memory, energy per request).
std::string training_section(const Report& report, const ChartData::Impl& d);
std::string request_section(const ChartData::Impl& d, const DenoisingSteps* steps);

// html_heatmaps.cpp: step time and the straggler rule's excess per rank and window.
std::string heatmaps(const Report& report, const ChartData::Impl& d, const Columns& c);

}  // namespace vxperf::analysis::html
