// Argument parsing shared by the commands: --help, numbers that must be whole and in range, and
// the one-line error every command prints before returning 2.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace vxperf::cli {

// Thrown by the parsers below; the command prints "vxperf NAME: message" and returns 2.
struct UsageError {
  std::string message;
};

inline std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min,
                              std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw UsageError{option + " takes a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

inline double parse_double(const std::string& option, const std::string& text, double min,
                           double max) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min || v > max) {
    throw UsageError{option + " takes a number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

// Prints `usage` and says so when any argument asks for help.
inline bool print_help_if_asked(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return true;
    }
  }
  return false;
}

// The value after an option, or a usage error naming the option.
inline std::string next_value(int& i, int argc, char** argv) {
  std::string option = argv[i];
  if (i + 1 >= argc) throw UsageError{option + " needs a value"};
  return argv[++i];
}

}  // namespace vxperf::cli
