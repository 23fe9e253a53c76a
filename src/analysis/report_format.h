// What the report's forms share: the JSON object type, a number or null, joules per kWh.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace vxperf::analysis::report_format {

// Ordered: keys come out in the order the report writes them.
using Json = nlohmann::ordered_json;

constexpr double kJoulesPerKwh = 3.6e6;

// The value, or null when the report has none.
Json opt_json(const std::optional<double>& v);
Json opt_json(const std::optional<std::uint64_t>& v);

}  // namespace vxperf::analysis::report_format
