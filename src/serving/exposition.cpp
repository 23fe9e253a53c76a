#include "serving/exposition.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "base/enum_names.h"
#include "base/strings.h"

namespace vxperf::serving {
namespace {

using internal::copy_utf8;

void append_labels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                   const char* le, std::string* out) {
  if (names.empty() && le == nullptr) return;
  *out += '{';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) *out += ',';
    *out += names[i];
    *out += "=\"";
    *out += escape_label_value(values[i]);
    *out += '"';
  }
  if (le != nullptr) {
    if (!names.empty()) *out += ',';
    *out += "le=\"";
    *out += le;
    *out += '"';
  }
  *out += '}';
}

void append_count(std::uint64_t n, std::string* out) {
  char buf[24];
  auto result = std::to_chars(buf, buf + sizeof buf, n);
  out->append(buf, result.ptr);
}

// The exposition format's # TYPE words, by MetricType.
constexpr std::array<const char*, 3> kTypeNames = {"counter", "gauge", "histogram"};
static_assert(kTypeNames.size() == internal::enumerators_through(MetricType::kHistogram));

const char* type_name(MetricType type) { return internal::enum_name(type, kTypeNames, "untyped"); }

}  // namespace

std::string format_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

std::string format_bucket_bound(double bound) {
  std::string text = format_number(bound);
  if (std::isfinite(bound) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string escape_label_value(std::string_view value) {
  return copy_utf8(value, [](char c, std::string* out) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '"') {
      *out += "\\\"";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  });
}

std::string escape_help(std::string_view help) {
  return copy_utf8(help, [](char c, std::string* out) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  });
}

std::string to_exposition_text(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const auto& f : families) {
    out += "# HELP " + f.name + ' ' + escape_help(f.help) + '\n';
    out += "# TYPE " + f.name + ' ' + type_name(f.type) + '\n';
    for (const auto& s : f.samples) {
      if (f.type != MetricType::kHistogram) {
        out += f.name;
        append_labels(f.label_names, s.label_values, nullptr, &out);
        out += ' ' + format_number(s.value) + '\n';
        continue;
      }
      for (std::size_t b = 0; b < s.cumulative_counts.size(); ++b) {
        std::string le = b < f.upper_bounds.size() ? format_bucket_bound(f.upper_bounds[b])
                                                   : std::string("+Inf");
        out += f.name + "_bucket";
        append_labels(f.label_names, s.label_values, le.c_str(), &out);
        out += ' ';
        append_count(s.cumulative_counts[b], &out);
        out += '\n';
      }
      out += f.name + "_sum";
      append_labels(f.label_names, s.label_values, nullptr, &out);
      out += ' ' + format_number(s.sum) + '\n';
      out += f.name + "_count";
      append_labels(f.label_names, s.label_values, nullptr, &out);
      out += ' ';
      append_count(s.count, &out);
      out += '\n';
    }
  }
  return out;
}

}  // namespace vxperf::serving
