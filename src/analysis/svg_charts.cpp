#include "analysis/svg_charts.h"

#include <algorithm>
#include <cmath>

#include "base/strings.h"

namespace vxperf::analysis::svg {

using internal::strprintf;
namespace {

constexpr double kWidth = 1000, kHeight = 320;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string color(std::size_t i) { return kPalette[i % (sizeof kPalette / sizeof *kPalette)]; }

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

std::string y_title(const YAxis& y) {
  return y.unit.name.empty() ? y.label : y.label + " (" + y.unit.name + ")";
}

std::string svg_open(const std::string& title, const std::string& y_label, double y_max,
                     double height = kHeight) {
  std::string s = strprintf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
      "height=\"%.0f\">\n",
      kWidth, height, kWidth, height);
  s += "<text x=\"10\" y=\"22\" class=\"title\">" + escape(title) + "</text>\n";
  s += strprintf(
      "<text x=\"14\" y=\"%.0f\" class=\"axis\" transform=\"rotate(-90 14 %.0f)\" "
      "text-anchor=\"middle\">%s</text>\n",
      (kTop + height - kBottom) / 2, (kTop + height - kBottom) / 2, escape(y_label).c_str());
  if (y_max <= 0) return s;
  double plot_h = height - kTop - kBottom;
  for (int i = 0; i <= 4; ++i) {
    double v = y_max * i / 4;
    double y = height - kBottom - plot_h * i / 4;
    s += strprintf(
        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
        "<text x=\"%.0f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
        kLeft, kWidth - kRight, y, y, kLeft - 6, y + 4, axis_label(v).c_str());
  }
  return s;
}

std::string legend(const std::vector<std::string>& names, const std::vector<bool>& dashed = {}) {
  std::string s;
  double x = kLeft;
  for (std::size_t i = 0; i < names.size(); ++i) {
    bool dash = i < dashed.size() && dashed[i];
    s += strprintf(
        "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"%s/>"
        "<text x=\"%.0f\" y=\"%.0f\" class=\"axis\">%s</text>\n",
        x, kHeight - 18, color(i).c_str(), dash ? " fill-opacity=\"0.5\"" : "", x + 14, kHeight - 9,
        escape(names[i]).c_str());
    x += 24 + 7.0 * static_cast<double>(names[i].size());
  }
  return s;
}

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
  double y_max = nice_max(y_top * 1.05);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double v) { return kHeight - kBottom - v * y.unit.scale / y_max * plot_h; };
  std::string s = svg_open(title, y_title(y), y_max);
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
  s += legend(names, dashed);
  return s + "</svg>\n";
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
  double y_max = nice_max(top * 1.05);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double slot = plot_w / static_cast<double>(labels.size() - first);
  std::string shown = first ? strprintf(" (last %zu)", kMaxBars) : "";
  std::string s = svg_open(title + shown, y_title(y), y_max);
  std::size_t every = std::max<std::size_t>(1, (labels.size() - first) / 12);
  for (std::size_t i = first; i < labels.size(); ++i) {
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
          x + slot * 0.1, top_y, slot * 0.8, h, color(k).c_str(), escape(labels[i]).c_str(),
          escape(names[k]).c_str(), escape(units::in_unit(v, y.unit)).c_str());
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
