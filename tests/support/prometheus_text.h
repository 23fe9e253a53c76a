// Helpers of the serving tests: exposition text read back (every line's grammar checked), its
// series looked up, and a request record shaped like a text-to-video call.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "vxperf/prometheus_sink.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"

namespace vxperf::test_prometheus {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reads exposition text back, checking every line's grammar: series text (name and labels, as
// written) to value. A line that is neither a comment nor a well-formed sample fails the test.
inline std::map<std::string, double> parse_exposition(const std::string& text) {
  static const std::regex kComment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")"
      R"((,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})?) (\S+))");
  std::map<std::string, double> out;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (std::regex_match(line, kComment)) continue;
    std::smatch m;
    if (!std::regex_match(line, m, kSample)) {
      ADD_FAILURE() << "not an exposition line: " << line;
      continue;
    }
    std::string v = m[4];
    double value = v == "NaN"    ? kNaN
                   : v == "+Inf" ? kInf
                   : v == "-Inf" ? -kInf
                                 : std::strtod(v.c_str(), nullptr);
    EXPECT_TRUE(out.emplace(m[1], value).second) << "series twice: " << m[1];
  }
  return out;
}

inline double value_of(const std::map<std::string, double>& series, const std::string& key) {
  auto it = series.find(key);
  if (it == series.end()) {
    ADD_FAILURE() << "no series " << key;
    return kNaN;
  }
  return it->second;
}

inline bool has_prefix(const std::map<std::string, double>& series, const std::string& prefix) {
  auto it = series.lower_bound(prefix);
  return it != series.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

struct Request {
  RequestRecord record;
  RequestDetail detail;
};

// A request shaped like a text-to-video call: a text encoder, `steps` transformer forwards, a
// scheduler step after each, a VAE decode and a post-processing stage.
inline Request make_request(int rank, double e2e_s, int steps = 50, bool failed = false,
                     bool warmup = false) {
  Request r;
  r.record.rank = rank;
  r.record.e2e_s = e2e_s;
  r.record.warmup = warmup;
  r.detail.failed = failed;
  auto add = [&](const char* name, std::vector<double> calls_ms) {
    StageSummary s;
    s.name = name;
    s.count = static_cast<std::int64_t>(calls_ms.size());
    r.record.stages.push_back(s);
    r.detail.stage_calls_ms.push_back(std::move(calls_ms));
  };
  add("text_encoder", {40});
  add("transformer", std::vector<double>(steps, 300));  // 0.3 s each
  add("scheduler", std::vector<double>(steps, 2));      // 2 ms each
  add("vae_decode", {2700});
  add("postprocess", {15});
  DitThroughput dit;
  dit.tflops = 754.7;
  dit.mfu = 0.5;
  r.record.dit = dit;
  r.record.readings = DeviceReadings{46ull << 30, 102ull << 30};
  return r;
}

inline std::map<std::string, double> scrape(const PrometheusSink& sink) {
  return parse_exposition(sink.render());
}

}  // namespace vxperf::test_prometheus
