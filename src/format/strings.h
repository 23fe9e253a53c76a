// String helpers shared by every part of vxperf: printf into a std::string, joining, trimming.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vxperf::detail {

// printf into a std::string, never truncated however long the numbers are.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

std::string join(const std::vector<std::string>& parts, std::string_view separator);
// Without leading and trailing whitespace.
std::string strip(std::string_view text);
std::string lower(std::string text);
// "%g" of a number ("3", "2.5").
std::string format_g(double value);

}  // namespace vxperf::detail
