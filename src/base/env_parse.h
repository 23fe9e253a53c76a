// Number parsing with the reference's rules (Python's int() and float()): surrounding whitespace is
// ignored, digits may be separated by single underscores. nullopt when the text is not a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/settings.h"

namespace vxperf::internal {

std::optional<std::int64_t> parse_int(const std::string& text);
// As parse_int, but a valid integer beyond 64 bits saturates to the nearest limit.
std::optional<std::int64_t> parse_int_saturating(const std::string& text);
std::optional<double> parse_float(const std::string& text);
// VIDEOX_PERF_PROFILE's value ("steps:3-5", "requests:0-1", "steps:7"); nullopt when it is not
// one.
std::optional<Settings::CaptureRange> parse_capture_range(const std::string& text);

}  // namespace vxperf::internal
