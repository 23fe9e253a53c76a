// What the report page's parts share (html_parts.h): formatters, tables, the window grid.
#include "analysis/html_parts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/page_assets.h"
#include "analysis/units.h"
#include "base/strings.h"

namespace vxperf::analysis::html {

using internal::strprintf;
using svg::escape;

bool none(double v) { return std::isnan(v); }

std::string rank_label(int rank) { return "rank " + std::to_string(rank); }

std::string time_text(double seconds) { return units::in_unit(seconds, units::time_unit(seconds)); }

std::string percent(double fraction) { return units::percent(fraction); }

svg::YAxis time_axis(const std::string& label, double top) {
  return {label, units::time_unit(top)};
}

bool is_straggler(const Report& report, int rank) {
  return std::find(report.stragglers.begin(), report.stragglers.end(), rank) !=
         report.stragglers.end();
}

std::string table_html(const Table& t, const char* css) {
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

std::vector<double> column_values(const Columns& c, std::size_t k, Getter get) {
  std::vector<double> values;
  for (const Window* w : c.cells[k]) {
    if (w && !none(get(*w))) values.push_back(get(*w));
  }
  std::sort(values.begin(), values.end());
  return values;
}

std::string page_open(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
         escape(title) + "</title>\n<style>\n" + kPageStyle + "</style></head><body>\n<h1>" +
         escape(title) + "</h1>\n";
}

std::string page_close() {
  return std::string("<script>") + kPageScript + "</script>\n</body></html>\n";
}

}  // namespace vxperf::analysis::html
