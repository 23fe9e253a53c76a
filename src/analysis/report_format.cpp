// What the report's forms share (report_format.h): absent numbers as JSON nulls, readings.
#include "analysis/report_format.h"

#include <algorithm>
#include <string_view>

#include "base/strings.h"

namespace vxperf::analysis::report_format {

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_json(const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

std::string reading_value(const ReadingSummary& r, const std::optional<double>& v) {
  if (!v) return "-";
  std::string text = internal::strprintf("%.*f", r.show.decimals, *v);
  return *r.show.unit ? text + " " + r.show.unit : text;
}

std::string fold_text(const ReadingSummary& r) {
  switch (r.show.fold) {
    case Fold::kMean:
      return reading_value(r, r.value) + " mean, " + reading_value(r, r.max) + " max";
    case Fold::kMin:
      return "min " + reading_value(r, r.value);
    case Fold::kMax:
      return "max " + reading_value(r, r.value);
    case Fold::kList:
      return internal::join(r.seen, ", ");
    default:
      return reading_value(r, r.value);
  }
}

std::string reading_text(const ReadingSummary& r) {
  // A folded value has a label (tests/schema).
  return std::string(r.show.label) + " " + fold_text(r);
}

std::vector<const ReadingSummary*> rank_field_columns(const std::vector<RankSummary>& ranks) {
  std::vector<const ReadingSummary*> columns;
  for (const auto& rank : ranks) {
    for (const auto& f : rank.fields) {
      bool listed = std::any_of(columns.begin(), columns.end(), [&](const ReadingSummary* c) {
        return std::string_view(c->show.key) == f.show.key;
      });
      if (!listed) columns.push_back(&f);
    }
  }
  return columns;
}

std::string rank_field_cell(const RankSummary& rank, const ReadingSummary& column) {
  const ReadingSummary* r = find_reading(rank.fields, column.show.key);
  if (r == nullptr || (!r->value && r->seen.empty())) return "-";
  return r->show.fold == Fold::kList ? internal::join(r->seen, ", ") : reading_value(*r, r->value);
}

namespace {

Json reading_json(const ReadingSummary& r, const std::optional<double>& v) {
  if (!v) return nullptr;
  return r.integral ? Json(static_cast<std::int64_t>(*v)) : Json(*v);
}

// "power_w_mean" -> "power_w_max"; another key gains "_max".
std::string max_key(const std::string& key) {
  const std::string mean = "_mean";
  if (key.size() > mean.size() && key.compare(key.size() - mean.size(), mean.size(), mean) == 0) {
    return key.substr(0, key.size() - mean.size()) + "_max";
  }
  return key + "_max";
}

}  // namespace

void add_readings(Json& j, const std::vector<ReadingSummary>& readings) {
  for (const auto& r : readings) {
    if (r.show.fold == Fold::kList) {
      j[r.show.key] = r.seen;
      continue;
    }
    j[r.show.key] = reading_json(r, r.value);
    if (r.show.fold == Fold::kMean) j[max_key(r.show.key)] = reading_json(r, r.max);
  }
}

}  // namespace vxperf::analysis::report_format
