// printf into a std::string, for the analysis library's text and HTML output.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace vxperf::analysis {

inline std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string strprintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), format, args);
    out.resize(static_cast<std::size_t>(n));
  }
  va_end(args);
  return out;
}

}  // namespace vxperf::analysis
