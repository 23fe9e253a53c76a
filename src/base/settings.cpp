#include "vxperf/settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/env_parse.h"
#include "base/strings.h"
#include "vxperf/listen_address.h"

namespace vxperf {
namespace {

using internal::lower;
using internal::strip;

// Removes underscores that sit between two digits; nullopt when any other underscore is present.
std::optional<std::string> without_digit_underscores(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') {
      out.push_back(text[i]);
      continue;
    }
    bool between_digits = i > 0 && i + 1 < text.size() &&
                          std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                          std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (!between_digits) return std::nullopt;
  }
  return out;
}

// Reads one variable; "" and all-whitespace count as unset, as in the reference.
std::optional<std::string> read(const EnvLookup& env, const char* name) {
  auto raw = env(name);
  if (!raw || strip(*raw).empty()) return std::nullopt;
  return raw;
}

struct Reader {
  const EnvLookup& env;
  std::vector<std::string>* problems;

  void complain(const char* name, const std::string& raw, const std::string& expected,
                const std::string& fallback) const {
    if (problems == nullptr) return;
    problems->push_back(std::string("vxperf: ") + name + "=\"" + raw + "\" is not " + expected +
                        "; using " + fallback);
  }

  // `expected`: what the complaint says it takes.
  std::int64_t integer(const char* name, std::int64_t fallback,
                       const char* expected = "an integer") const {
    auto raw = read(env, name);
    if (!raw) return fallback;
    // Python's integers have no limit: a value beyond 64 bits means "as large as it gets".
    auto value = internal::parse_int_saturating(*raw);
    if (!value) {
      complain(name, *raw, expected, std::to_string(fallback));
      return fallback;
    }
    return *value;
  }

  // "0" or "1"; anything else is reported and leaves `fallback`.
  bool switch_(const char* name, bool fallback) const { return switch_(name, fallback, fallback); }
  // The same, where a bad value gives `on_error` instead of what was set before.
  bool switch_(const char* name, bool current, bool on_error) const {
    auto raw = read(env, name);
    if (!raw) return current;
    std::string value = strip(*raw);
    if (value == "0" || value == "1") return value == "1";
    complain(name, *raw, "0 or 1", on_error ? "1" : "0");
    return on_error;
  }

  // A positive finite number; anything else is reported and ignored.
  std::optional<double> positive_number(const char* name) const {
    auto raw = read(env, name);
    if (!raw) return std::nullopt;
    auto value = internal::parse_float(*raw);
    if (!value || !std::isfinite(*value) || *value <= 0.0) {
      complain(name, *raw, "a positive number", "the default");
      return std::nullopt;
    }
    return value;
  }
};

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

namespace internal {

namespace {

std::optional<std::int64_t> parse_integer(const std::string& text, bool saturate) {
  auto cleaned = without_digit_underscores(strip(text));
  if (!cleaned || cleaned->empty()) return std::nullopt;
  const std::string& s = *cleaned;
  std::size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (std::size_t j = i; j < s.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return std::nullopt;
  }
  errno = 0;
  long long value = std::strtoll(s.c_str(), nullptr, 10);
  // strtoll already clamps to the nearest limit on overflow.
  if (errno == ERANGE && !saturate) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

}  // namespace

std::optional<std::int64_t> parse_int(const std::string& text) {
  return parse_integer(text, false);
}

std::optional<std::int64_t> parse_int_saturating(const std::string& text) {
  return parse_integer(text, true);
}

std::optional<double> parse_float(const std::string& text) {
  auto cleaned = without_digit_underscores(strip(text));
  if (!cleaned || cleaned->empty()) return std::nullopt;
  std::string s = lower(*cleaned);
  std::string body = (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
  double sign = s[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * std::numeric_limits<double>::infinity();
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  // Decimal only: strtod would also take hex floats and "infinity" spellings Python rejects.
  for (char c : body) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' ||
          c == '-')) {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return value;
}

std::optional<Settings::CaptureRange> parse_capture_range(const std::string& text) {
  std::string value = lower(strip(text));
  auto colon = value.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string kind = strip(value.substr(0, colon));
  std::string span = strip(value.substr(colon + 1));
  Settings::CaptureRange range;
  if (kind == "steps") {
    range.kind = Settings::CaptureRange::Kind::kSteps;
  } else if (kind == "requests") {
    range.kind = Settings::CaptureRange::Kind::kRequests;
  } else {
    return std::nullopt;
  }
  // "A-B" or "A"; a leading '-' would be a negative index, not a range.
  auto dash = span.find('-', 1);
  std::optional<std::int64_t> first = parse_int(span.substr(0, dash));
  std::optional<std::int64_t> last =
      dash == std::string::npos ? first : parse_int(span.substr(dash + 1));
  if (!first || !last || *first < 0 || *last < *first) return std::nullopt;
  range.first = *first;
  range.last = *last;
  return range;
}

}  // namespace internal

Settings Settings::parse(const EnvLookup& env, std::vector<std::string>* problems,
                         const Settings& defaults) {
  Settings s = defaults;
  Reader r{env, problems};
  std::int64_t level = r.integer("VIDEOX_PERF", s.level, "0, 1 or 2 (an integer)");
  if (level < 0 || level > 2) {
    // The reference takes anything above 2 as 2 and anything below 1 as off: the same here, said.
    std::int64_t used = level < 0 ? 0 : 2;
    r.complain("VIDEOX_PERF", std::to_string(level), "0, 1 or 2", std::to_string(used));
    level = used;
  }
  s.level = static_cast<int>(level);
  if (!s.enabled()) return s;
  if (auto v = env("VIDEOX_PERF_JSON"); v && !v->empty()) s.json_path = *v;
  s.warmup = r.integer("VIDEOX_PERF_WARMUP", s.warmup);
  if (s.warmup < 0) {
    r.complain("VIDEOX_PERF_WARMUP", std::to_string(s.warmup), "a count", "0");
    s.warmup = 0;
  }
  if (auto raw = read(env, "VIDEOX_PERF_RANKS")) {
    std::string value = lower(strip(*raw));
    if (value == "all" || value == "0") {
      s.log_all_ranks = value == "all";
    } else {
      r.complain("VIDEOX_PERF_RANKS", *raw, "0 or all", "0");
      s.log_all_ranks = false;
    }
  }
  if (auto raw = read(env, "VIDEOX_PERF_PEAK_TFLOPS"); raw && lower(strip(*raw)) == "auto") {
    s.measure_peak = true;
    s.peak_tflops.reset();
  } else if (auto v = r.positive_number("VIDEOX_PERF_PEAK_TFLOPS")) {
    s.peak_tflops = v;
    s.measure_peak = false;
  }
  if (auto raw = read(env, "VIDEOX_PERF_DTYPE")) {
    if (auto dtype = parse_dtype(*raw)) {
      s.dtype = dtype;
    } else {
      r.complain("VIDEOX_PERF_DTYPE", *raw, "bf16, fp16, fp8, tf32 or fp32", "the default");
    }
  }
  if (auto raw = read(env, "VIDEOX_PERF_ATTN_DENSITY")) {
    auto value = internal::parse_float(*raw);
    if (value && valid_density(*value)) {
      s.attn_density = value;
    } else {
      r.complain("VIDEOX_PERF_ATTN_DENSITY", *raw, "a density in (0, 1]", "the default");
    }
  }
  std::int64_t dit_params = r.integer("VIDEOX_PERF_DIT_PARAMS", s.dit_params);
  if (dit_params < 0) {
    r.complain("VIDEOX_PERF_DIT_PARAMS", std::to_string(dit_params), "a parameter count", "0");
    dit_params = 0;
  }
  s.dit_params = dit_params;
  s.attn_flops = r.integer("VIDEOX_PERF_FLOPS_ATTN", s.attn_flops ? 1 : 0) != 0;
  std::int64_t every = r.integer("VIDEOX_PERF_EVERY", s.every);
  if (every < 1) {
    r.complain("VIDEOX_PERF_EVERY", std::to_string(every), "at least 1", "1");
    every = 1;  // the reference clamps the same way
  }
  s.every = every;
  s.total_steps = r.integer("VIDEOX_PERF_TOTAL_STEPS", s.total_steps);
  if (auto v = r.positive_number("VIDEOX_PERF_FLOPS_COEF")) s.flops_coef = v;
  if (auto v = env("VIDEOX_PERF_TRACE"); v && !v->empty()) s.trace_path = *v;
  // The parallel layout's dimensions a home-made setup cannot be read for (vxperf/topology.h).
  auto degree = [&](const char* name, int fallback, const char* what) {
    std::int64_t value = r.integer(name, fallback);
    if (value < 0 || value > 1 << 20) {
      r.complain(name, std::to_string(value), what, "what the program's layout says");
      return 0;
    }
    return static_cast<int>(value);
  };
  s.sp = degree("VIDEOX_PERF_SP", s.sp, "a sequence-parallel degree");
  s.tp = degree("VIDEOX_PERF_TP", s.tp, "a tensor-parallel degree");
  s.dp_shard = degree("VIDEOX_PERF_DP_SHARD", s.dp_shard, "a count of ranks sharding the model");
  if (auto raw = read(env, "VIDEOX_PERF_PROMETHEUS")) {
    std::string why;
    if (parse_listen_address(strip(*raw), &why)) {
      s.prometheus = strip(*raw);
    } else {
      r.complain("VIDEOX_PERF_PROMETHEUS", *raw, "[host:]port (" + why + ")", "no endpoint");
      s.prometheus.clear();
    }
  }
  s.xrank = r.switch_("VIDEOX_PERF_XRANK", s.xrank, false);
  if (auto v = r.positive_number("VIDEOX_PERF_XRANK_TIMEOUT")) s.xrank_timeout_s = *v;
  if (auto v = r.positive_number("VIDEOX_PERF_FPS")) s.fps = *v;
  if (auto raw = read(env, "VIDEOX_PERF_RUN_ID")) {
    std::string value = strip(*raw);
    bool printable = !value.empty() && value.size() <= 128 &&
                     std::all_of(value.begin(), value.end(),
                                 [](unsigned char c) { return c > 0x20 && c < 0x7f; });
    if (printable) {
      s.run_id = value;
    } else {
      r.complain("VIDEOX_PERF_RUN_ID", *raw, "a name of 1 to 128 printable characters", "none");
      s.run_id.clear();
    }
  }
  s.otel = r.switch_("VIDEOX_PERF_OTEL", s.otel);
  if (auto raw = read(env, "VIDEOX_PERF_TRACKERS")) {
    std::string value = strip(*raw);
    if (value == "0" || value == "1") {
      s.trackers = value == "1";
    } else {
      r.complain("VIDEOX_PERF_TRACKERS", *raw, "0 or 1", "the program's choice");
      s.trackers = defaults.trackers;
    }
  }
  // ---- GPU observability (#20): VIDEOX_PERF_NVML, VIDEOX_PERF_NVTX ----
  s.nvml = r.switch_("VIDEOX_PERF_NVML", s.nvml);
  s.nvtx = r.switch_("VIDEOX_PERF_NVTX", s.nvtx);
  // ---- end GPU observability ----
  // ---- energy and capture ranges (#28): VIDEOX_PERF_POWERCAP, VIDEOX_PERF_PROFILE ----
  s.powercap = r.switch_("VIDEOX_PERF_POWERCAP", s.powercap);
  if (auto raw = read(env, "VIDEOX_PERF_PROFILE")) {
    if (auto range = internal::parse_capture_range(*raw)) {
      s.profile = *range;
    } else {
      r.complain("VIDEOX_PERF_PROFILE", *raw, "steps:A-B or requests:A-B (counted from 0, A <= B)",
                 "no capture range");
      s.profile = Settings::CaptureRange{};
    }
  }
  // ---- end energy and capture ranges ----
  return s;
}

std::vector<std::pair<std::string, std::string>> Settings::to_env() const {
  auto number = [](double value) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    return std::string(buf);
  };
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("VIDEOX_PERF", std::to_string(level));
  if (warmup != 0) out.emplace_back("VIDEOX_PERF_WARMUP", std::to_string(warmup));
  if (log_all_ranks) out.emplace_back("VIDEOX_PERF_RANKS", "all");
  if (peak_tflops) out.emplace_back("VIDEOX_PERF_PEAK_TFLOPS", number(*peak_tflops));
  if (measure_peak && !peak_tflops) out.emplace_back("VIDEOX_PERF_PEAK_TFLOPS", "auto");
  if (dtype) out.emplace_back("VIDEOX_PERF_DTYPE", dtype_name(*dtype));
  if (attn_density) out.emplace_back("VIDEOX_PERF_ATTN_DENSITY", number(*attn_density));
  if (dit_params != 0) out.emplace_back("VIDEOX_PERF_DIT_PARAMS", std::to_string(dit_params));
  if (!attn_flops) out.emplace_back("VIDEOX_PERF_FLOPS_ATTN", "0");
  out.emplace_back("VIDEOX_PERF_EVERY", std::to_string(every));
  if (total_steps != 0) out.emplace_back("VIDEOX_PERF_TOTAL_STEPS", std::to_string(total_steps));
  if (flops_coef) out.emplace_back("VIDEOX_PERF_FLOPS_COEF", number(*flops_coef));
  if (sp != 0) out.emplace_back("VIDEOX_PERF_SP", std::to_string(sp));
  if (tp != 0) out.emplace_back("VIDEOX_PERF_TP", std::to_string(tp));
  if (dp_shard != 0) out.emplace_back("VIDEOX_PERF_DP_SHARD", std::to_string(dp_shard));
  if (!run_id.empty()) out.emplace_back("VIDEOX_PERF_RUN_ID", run_id);
  // VIDEOX_PERF_XRANK is left out too: a replay has no other ranks to exchange with.
  return out;
}

}  // namespace vxperf
