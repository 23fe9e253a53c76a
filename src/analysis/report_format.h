// What the report's forms share: the JSON object type, a number or null, joules per kWh, a folded
// reading in words and in JSON, the ranks' table's field columns.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/report.h"

namespace vxperf::analysis::report_format {

// Ordered: keys come out in the order the report writes them.
using Json = nlohmann::ordered_json;

constexpr double kJoulesPerKwh = 3.6e6;

// The value, or null when the report has none.
Json opt_json(const std::optional<double>& v);
Json opt_json(const std::optional<std::uint64_t>& v);

// A reading's number `v` with the reading's decimals and unit ("150.0 W", "1780 MHz"); "-" when
// none.
std::string reading_value(const ReadingSummary& r, const std::optional<double>& v);
// A reading's value as its fold says it, without its label: "150.0 W mean, 200.0 W max", "min
// 1780 MHz", "max 62 C", "40.000 J", "sw_power_cap, hw_slowdown".
std::string fold_text(const ReadingSummary& r);
// A reading as the report says it, its label then its fold_text: "power 150.0 W mean, 200.0 W
// max" ("power - mean, - max" unread), "SM clock min 1780 MHz", "temp max 62 C", "host CPU and
// DRAM 40.000 J", "throttle sw_power_cap, hw_slowdown".
std::string reading_text(const ReadingSummary& r);
// The ranks' table's columns for the fields shown per rank: one per key some rank holds, in the
// order they first come (each the first rank's summary of it: its label, unit, fold).
std::vector<const ReadingSummary*> rank_field_columns(const std::vector<RankSummary>& ranks);
// A rank's cell in one: its value by the column's fold ("0.012 s"; a list's values), "-" when
// the rank has none.
std::string rank_field_cell(const RankSummary& rank, const ReadingSummary& column);
// Each reading into `j` under its key, null when unread (integers as integers); a mean's highest
// beside it ("power_w_mean", "power_w_max"); a list as an array.
void add_readings(Json& j, const std::vector<ReadingSummary>& readings);

}  // namespace vxperf::analysis::report_format
