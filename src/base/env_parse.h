// Number parsing with the reference's rules (Python's int() and float()): surrounding whitespace is
// ignored, digits may be separated by single underscores. nullopt when the text is not a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vxperf::internal {

std::optional<std::int64_t> parse_int(const std::string& text);
// As parse_int, but a valid integer beyond 64 bits saturates to the nearest limit.
std::optional<std::int64_t> parse_int_saturating(const std::string& text);
std::optional<double> parse_float(const std::string& text);

}  // namespace vxperf::internal
