#include "analysis/svg_charts.h"

#include <algorithm>
#include <cmath>

#include "base/strings.h"

namespace vxperf::analysis::svg {

using internal::strprintf;
namespace {

constexpr double kWidth = 1000, kHeight = 320;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

// A color per series or part: twenty, so that no chart repeats one (the ledger has 12 parts);
// the first ten are the usual categorical ten, the next ten darker or lighter hues of their own.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                "#1b3a6b", "#8c510a", "#7b1f2e", "#2a6f68", "#1f5f2a",
                                "#b38b00", "#5e2f73", "#c51b7d", "#3d3d3d", "#a6cee3"};

std::string color(std::size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

// A y axis fitted to the data: ticks a "nice" step apart (1, 2, 2.5 or 5 times a power of ten),
// at most five of them above zero, the top the first tick at or above the data (20 s of data
// reads up to 25 s, not to 50).
struct Ticks {
  double top = 1;
  int count = 4;  // intervals from zero to top
};
Ticks fit_ticks(double value) {
  if (!(value > 0) || !std::isfinite(value)) return {};
  double p = std::pow(10.0, std::floor(std::log10(value / 5.0)));
  for (double base : {1.0, 2.0, 2.5, 5.0, 10.0, 20.0}) {
    double step = base * p;
    double n = std::ceil(value / step - 1e-9);
    if (n <= 5) return {n * step, static_cast<int>(std::max(1.0, n))};
  }
  return {value, 4};
}

// A "nice" bound: 1, 2 or 5 times a power of ten at or above `value` (x ticks' spacing, the
// comparison's symmetric axis).
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
  // Whole thousands as they are ("1000", "25000"), not "1e+03"; beyond a million, exponents.
  if (std::fabs(v) >= 1e6 || std::fabs(v) < 0.01) return strprintf("%.2g", v);
  if (std::fabs(v) >= 1000) return strprintf("%.0f", v);
  return strprintf("%.3g", v);
}

std::string y_title(const YAxis& y) {
  return y.unit.name.empty() ? y.label : y.label + " (" + y.unit.name + ")";
}

// The frame's title, y-axis title and grid; the <svg> element around it is wrap()'s, once the
// legend's rows (the height) are known.
std::string frame(const std::string& title, const std::string& y_label, const Ticks& ticks) {
  std::string s = "<text x=\"10\" y=\"22\" class=\"title\">" + escape(title) + "</text>\n";
  s += strprintf(
      "<text x=\"14\" y=\"%.0f\" class=\"axis\" transform=\"rotate(-90 14 %.0f)\" "
      "text-anchor=\"middle\">%s</text>\n",
      (kTop + kHeight - kBottom) / 2, (kTop + kHeight - kBottom) / 2, escape(y_label).c_str());
  double plot_h = kHeight - kTop - kBottom;
  for (int i = 0; i <= ticks.count; ++i) {
    double v = ticks.top * i / ticks.count;
    double y = kHeight - kBottom - plot_h * i / ticks.count;
    s += strprintf(
        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
        "<text x=\"%.0f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
        kLeft, kWidth - kRight, y, y, kLeft - 6, y + 4, axis_label(v).c_str());
  }
  return s;
}

std::string wrap(const std::string& body, double height) {
  return strprintf(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
             "height=\"%.0f\">\n",
             kWidth, height, kWidth, height) +
         body + "</svg>\n";
}

// The width an 11 px label takes, generously (the page's sans-serif averages under 7 px a
// character; capitals and digits come near it).
double text_width(const std::string& text) { return 7.0 * static_cast<double>(text.size()); }

constexpr double kLegendRow = 16;

// The legend under the plot, in as many rows as its names need, never past `right` (the x axis'
// title sits right of it on the first row). Returns its markup and the rows it took.
std::pair<std::string, int> legend(const std::vector<std::string>& names,
                                   const std::vector<bool>& dashed, double right) {
  std::string s;
  double x = kLeft;
  int row = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    double width = 14 + text_width(names[i]);
    if (x > kLeft && x + width > right) {
      ++row;
      x = kLeft;
    }
    bool dash = i < dashed.size() && dashed[i];
    double y = kHeight - 9 + kLegendRow * row;
    s += strprintf(
        "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"%s/>"
        "<text x=\"%.0f\" y=\"%.0f\" class=\"axis legend\">%s</text>\n",
        x, y - 9, color(i).c_str(), dash ? " fill-opacity=\"0.5\"" : "", x + 14, y,
        escape(names[i]).c_str());
    x += width + 10;
  }
  return {s, names.empty() ? 0 : row + 1};
}

// The chart's height with `rows` legend rows (the first fits the frame's bottom margin).
double height_with(int rows) { return kHeight + kLegendRow * std::max(0, rows - 1); }

std::string no_data(const std::string& title) {
  return "<p class=\"empty\">" + escape(title) + ": no data</p>\n";
}

// A series of more than kMaxPoints points as the means of kMaxPoints buckets of them.
void thin(Series& s, const std::string& x_label) {
  std::size_t n = s.points.size();
  if (n <= kMaxPoints) return;
  Series out{s.name, {}, s.dashed, {}};
  for (std::size_t b = 0; b < kMaxPoints; ++b) {
    std::size_t lo = b * n / kMaxPoints, hi = (b + 1) * n / kMaxPoints;
    double x = 0, y = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      x += s.points[i].first;
      y += s.points[i].second;
    }
    double k = static_cast<double>(hi - lo);
    out.points.emplace_back(x / k, y / k);
    out.tips.push_back(strprintf("%s %s-%s, mean of %zu", x_label.c_str(),
                                 axis_label(s.points[lo].first).c_str(),
                                 axis_label(s.points[hi - 1].first).c_str(), hi - lo));
  }
  s = std::move(out);
}

}  // namespace

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

std::string line_chart(const std::string& title, const std::string& x_label, const YAxis& y,
                       std::vector<Series> series, const std::vector<Band>& bands) {
  double x_min = INFINITY, x_max = -INFINITY, y_top = 0;
  auto extend = [&](double x, double v) {
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_top = std::max(y_top, v * y.unit.scale);
  };
  for (auto& s : series) {
    thin(s, x_label);
    for (const auto& [x, v] : s.points) extend(x, v);
  }
  for (const auto& b : bands) {
    for (const auto& [x, range] : b.points) extend(x, range.second);
  }
  if (!std::isfinite(x_min)) return no_data(title);
  if (x_max <= x_min) x_max = x_min + 1;
  const Ticks ticks = fit_ticks(y_top);
  const double y_max = ticks.top;
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double v) { return kHeight - kBottom - v * y.unit.scale / y_max * plot_h; };
  std::string s = frame(title, y_title(y), ticks);
  // Whole ticks at multiples of 1, 2 or 5 times a power of ten, about five of them, never at a
  // fraction (a window's middle may be one; its tick is not).
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
  std::vector<bool> dashed;
  std::size_t colors = 0;
  for (const auto& b : bands) {
    std::string points;
    for (const auto& [x, r] : b.points) points += strprintf("%.1f,%.1f ", px(x), py(r.second));
    for (auto it = b.points.rbegin(); it != b.points.rend(); ++it) {
      points += strprintf("%.1f,%.1f ", px(it->first), py(it->second.first));
    }
    s += "<polygon fill=\"" + color(colors) + "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"" +
         points + "\"><title>" + escape(b.name) + "</title></polygon>\n";
    names.push_back(b.name);
    dashed.push_back(true);
    ++colors;
  }
  for (const auto& line : series) {
    std::size_t c = colors++;
    names.push_back(line.name);
    dashed.push_back(line.dashed);
    std::string points;
    for (const auto& [x, v] : line.points) points += strprintf("%.1f,%.1f ", px(x), py(v));
    s += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + color(c) + "\"" +
         (line.dashed ? " stroke-dasharray=\"5 4\"" : "") + " points=\"" + points + "\"/>\n";
    // Small marks for many points: they are for hovering, the line is for reading.
    double r = line.points.size() > 100 ? 2 : 3;
    for (std::size_t i = 0; i < line.points.size(); ++i) {
      auto [x, v] = line.points[i];
      std::string where = i < line.tips.size() ? line.tips[i] : x_label + " " + axis_label(x);
      s += strprintf(
          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.0f\" fill=\"%s\"><title>%s: %s, %s"
          "</title></circle>\n",
          px(x), py(v), r, color(c).c_str(), escape(line.name).c_str(), escape(where).c_str(),
          escape(units::in_unit(v, y.unit)).c_str());
    }
  }
  auto [marks, rows] = legend(names, dashed, kWidth - kRight - text_width(x_label) - 16);
  return wrap(s + marks, height_with(rows));
}

std::string stacked_bars(const std::string& title, const YAxis& y,
                         const std::vector<std::string>& names,
                         const std::vector<std::string>& labels,
                         const std::vector<std::vector<double>>& values) {
  if (labels.empty()) return no_data(title);
  std::size_t first = labels.size() > kMaxBars ? labels.size() - kMaxBars : 0;
  double top = 0;
  for (std::size_t i = first; i < labels.size(); ++i) {
    double sum = 0;
    for (double v : values[i]) sum += std::max(v, 0.0);
    top = std::max(top, sum * y.unit.scale);
  }
  const Ticks ticks = fit_ticks(top);
  const double y_max = ticks.top;
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double slot = plot_w / static_cast<double>(labels.size() - first);
  std::string shown = first ? strprintf(" (last %zu)", kMaxBars) : "";
  std::string s = frame(title + shown, y_title(y), ticks);
  // A label of two lines ("rank 0\ngoodput 81%") is drawn as two; labels shown every `every`
  // bars, as far apart as the widest needs.
  auto lines_of = [](const std::string& label) {
    auto cut = label.find('\n');
    return cut == std::string::npos
               ? std::pair<std::string, std::string>{label, ""}
               : std::pair<std::string, std::string>{label.substr(0, cut), label.substr(cut + 1)};
  };
  double widest = 0;
  for (std::size_t i = first; i < labels.size(); ++i) {
    auto [one, two] = lines_of(labels[i]);
    widest = std::max({widest, text_width(one), text_width(two)});
  }
  auto every = static_cast<std::size_t>(std::max(1.0, std::ceil((widest + 8) / slot)));
  for (std::size_t i = first; i < labels.size(); ++i) {
    auto [line_one, line_two] = lines_of(labels[i]);
    const std::string tip = line_two.empty() ? line_one : line_one + " " + line_two;
    double x = kLeft + slot * static_cast<double>(i - first);
    double top_y = kHeight - kBottom;
    for (std::size_t k = 0; k < names.size() && k < values[i].size(); ++k) {
      double v = std::max(values[i][k], 0.0);
      if (v <= 0) continue;
      double h = v * y.unit.scale / y_max * plot_h;
      top_y -= h;
      s += strprintf(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
          "<title>%s %s: %s</title></rect>\n",
          x + slot * 0.1, top_y, slot * 0.8, h, color(k).c_str(), escape(tip).c_str(),
          escape(names[k]).c_str(), escape(units::in_unit(v, y.unit)).c_str());
    }
    if ((i - first) % every == 0) {
      s +=
          strprintf("<text x=\"%.1f\" y=\"%.0f\" class=\"axis\" text-anchor=\"middle\">%s</text>\n",
                    x + slot / 2, kHeight - kBottom + 16, escape(line_one).c_str());
      if (!line_two.empty()) {
        s += strprintf(
            "<text x=\"%.1f\" y=\"%.0f\" class=\"axis\" text-anchor=\"middle\">%s</text>\n",
            x + slot / 2, kHeight - kBottom + 28, escape(line_two).c_str());
      }
    }
  }
  auto [marks, rows] = legend(names, {}, kWidth - kRight);
  return wrap(s + marks, height_with(rows));
}

std::string diverging_bars(const std::string& title, const std::string& x_label,
                           const std::vector<std::string>& labels,
                           const std::vector<double>& values, const std::vector<bool>& better,
                           const std::vector<std::string>& tips) {
  if (labels.empty()) return no_data(title);
  constexpr double kLabels = 300, kRow = 22;
  double height = kTop + kRow * static_cast<double>(labels.size()) + 40;
  double top = 0;
  for (double v : values) top = std::max(top, std::fabs(v));
  double x_max = nice_max(top * 1.05);
  double plot_w = kWidth - kLabels - kRight;
  double zero = kLabels + plot_w / 2;
  auto px = [&](double v) { return zero + v / x_max * plot_w / 2; };
  std::string s = strprintf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
      "height=\"%.0f\">\n<text x=\"10\" y=\"22\" class=\"title\">%s</text>\n",
      kWidth, height, kWidth, height, escape(title).c_str());
  double bottom = kTop + kRow * static_cast<double>(labels.size());
  for (int i = -2; i <= 2; ++i) {
    double v = x_max * i / 2;
    s += strprintf(
        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" class=\"grid\"/>"
        "<text x=\"%.1f\" y=\"%.0f\" class=\"axis\" text-anchor=\"middle\">%s</text>\n",
        px(v), px(v), kTop - 4, bottom, px(v), bottom + 16, axis_label(v).c_str());
  }
  s += strprintf("<text x=\"%.0f\" y=\"%.0f\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
                 kWidth - kRight, bottom + 32, escape(x_label).c_str());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    double y = kTop + kRow * static_cast<double>(i);
    double x0 = std::min(px(0), px(values[i])), w = std::fabs(px(values[i]) - px(0));
    const char* fill = values[i] == 0 ? "#999" : better[i] ? "#59a14f" : "#e15759";
    s += strprintf(
        "<text x=\"%.0f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%s</text>"
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
        "<title>%s</title></rect>\n",
        kLabels - 8, y + kRow * 0.65, escape(labels[i]).c_str(), x0, y + 3, std::max(w, 1.0),
        kRow - 6, fill, escape(i < tips.size() ? tips[i] : labels[i]).c_str());
  }
  return s + "</svg>\n";
}

}  // namespace vxperf::analysis::svg
