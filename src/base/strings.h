// String helpers shared by every part of vxperf: printf into a std::string, joining, trimming.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vxperf::internal {

// printf into a std::string, never truncated however long the numbers are.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

std::string join(const std::vector<std::string>& parts, std::string_view separator);
// Without leading and trailing whitespace.
std::string strip(std::string_view text);
std::string lower(std::string text);
inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
// "%g" of a number ("3", "2.5").
std::string format_g(double value);

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not one (overlong forms,
// surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence(std::string_view text, std::size_t i);
// `text` with every byte that starts no valid UTF-8 sequence replaced by U+FFFD: names reach JSON,
// log lines and metric labels, and none of them may carry invalid UTF-8.
std::string valid_utf8(std::string_view text);

// Copies the valid UTF-8 of `text`, a bad byte becoming U+FFFD; each ASCII byte goes through
// `ascii(c, &out)`, which appends it as it is or escaped.
template <class Ascii>
std::string copy_utf8(std::string_view text, Ascii ascii) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else if (n == 1) {
      ascii(text[i], &out);
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace vxperf::internal
