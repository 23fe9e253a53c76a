// The report page's charts as inline SVG: line charts (with min-max bands) and stacked bars, every
// mark carrying its value in a <title> (what a browser shows on hover), values in units that fit.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/units.h"

namespace vxperf::analysis::svg {

std::string escape(const std::string& text);  // for HTML text and attribute values

// The y axis: what it measures ("per step") and in which unit; values are given in the base
// unit (seconds, bytes, plain numbers) and drawn times unit.scale.
struct YAxis {
  std::string label;  // "step time", the unit's name is added: "step time (ms)"
  units::Unit unit;
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // x, y (base unit)
  bool dashed = false;
  // Per point, what its hover says before the value ("steps 0-9"); default "x N".
  std::vector<std::string> tips;
};

// A shaded range between two values per x ("fastest to slowest rank").
struct Band {
  std::string name;
  std::vector<std::pair<double, std::pair<double, double>>> points;  // x, (low, high)
};

// Whole-number x ticks (steps, requests, calls); `x_label` at the axis' end. Series of more than
// kMaxPoints points are drawn as the means of that many buckets. The y axis runs to the first
// nice tick above the data (1, 2, 2.5 or 5 times a power of ten apart); the legend wraps.
inline constexpr std::size_t kMaxPoints = 500;
std::string line_chart(const std::string& title, const std::string& x_label, const YAxis& y,
                       std::vector<Series> series, const std::vector<Band>& bands = {});

// Bars made of named segments (`names` fixes the colors, a color each, and the legend, in as many
// rows as it needs); more than kMaxBars bars show the last ones. A label may be two lines, split
// by '\n'; labels are shown as often as their width leaves room for.
inline constexpr std::size_t kMaxBars = 300;
std::string stacked_bars(const std::string& title, const YAxis& y,
                         const std::vector<std::string>& names,
                         const std::vector<std::string>& labels,
                         const std::vector<std::vector<double>>& values);

// Horizontal bars around zero, one per label, colored by sign ("better" green, "worse" red);
// `tips` is each bar's hover text.
std::string diverging_bars(const std::string& title, const std::string& x_label,
                           const std::vector<std::string>& labels,
                           const std::vector<double>& values, const std::vector<bool>& better,
                           const std::vector<std::string>& tips);

}  // namespace vxperf::analysis::svg
