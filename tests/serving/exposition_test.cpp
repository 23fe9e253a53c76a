// The Prometheus text exposition format: numbers, escaping, every metric type.
#include "serving/exposition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "prometheus_text.h"
#include "serving/metrics.h"

namespace vxperf {
namespace {

using namespace test_prometheus;
using serving::escape_help;
using serving::escape_label_value;
using serving::format_bucket_bound;
using serving::format_number;
using serving::MetricRegistry;

TEST(Exposition, NumbersAreShortestAndSpecialValuesSpelledOut) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(1.5), "1.5");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(-2), "-2");
  EXPECT_EQ(format_number(1.28e15), "1.28e+15");
  EXPECT_EQ(format_number(kNaN), "NaN");
  EXPECT_EQ(format_number(kInf), "+Inf");
  EXPECT_EQ(format_number(-kInf), "-Inf");
  EXPECT_EQ(std::strtod(format_number(0.1 + 0.2).c_str(), nullptr), 0.1 + 0.2);  // round-trips
  EXPECT_EQ(format_bucket_bound(1), "1.0");
  EXPECT_EQ(format_bucket_bound(300), "300.0");
  EXPECT_EQ(format_bucket_bound(0.05), "0.05");
  EXPECT_EQ(format_bucket_bound(0.0025), "0.0025");
}

TEST(Exposition, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(escape_label_value("plain"), "plain");
  EXPECT_EQ(escape_label_value(R"(C:\dir)"), R"(C:\\dir)");
  EXPECT_EQ(escape_label_value(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(escape_label_value("two\nlines"), R"(two\nlines)");
  EXPECT_EQ(escape_label_value("\\\"\n"), R"(\\\"\n)");
  EXPECT_EQ(escape_label_value("tab\there"), "tab\there");  // only the three are escaped
}

TEST(Exposition, NonAsciiPassesThroughAndInvalidUtf8IsReplaced) {
  const std::string utf8 =
      "d\xC3\xA9"
      "codeur \xE6\xA8\xA1\xE5\x9E\x8B \xF0\x9F\x8E\xAC";  // décodeur 模型 🎬
  EXPECT_EQ(escape_label_value(utf8), utf8);
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(escape_label_value("a\xFF"
                               "b"),
            "a" + replacement + "b");
  EXPECT_EQ(escape_label_value("cut \xE6\xA8"), "cut " + replacement + replacement);
  EXPECT_EQ(escape_label_value("\xC0\xAF"), replacement + replacement);  // overlong '/'
  EXPECT_EQ(escape_label_value("\xED\xA0\x80"),
            replacement + replacement + replacement);  // surrogate
  EXPECT_EQ(escape_help("\xFE"), replacement);
}

TEST(Exposition, HelpEscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(escape_help("a \"quoted\" \\ word\nnext"), R"(a "quoted" \\ word\nnext)");
}

TEST(Exposition, WholeTextOfEachType) {
  MetricRegistry registry;
  auto& counter = registry.add_counter("c_total", "A counter.\nSecond line \\ here.", {"path"});
  auto& gauge = registry.add_gauge("g", "A gauge.", {});
  auto& histogram = registry.add_histogram("h_seconds", "A histogram.", {"k"}, {0.5, 1, 2.5});
  counter.with({"a\"b\\c\nd"}).inc(2);
  gauge.with({}).set(-0.25);
  auto& h = histogram.with({"x"});
  for (double v : {0.1, 0.5, 0.7, 1.0, 2.0, 9.0}) h.observe(v);
  EXPECT_EQ(serving::to_exposition_text(registry.collect()),
            "# HELP c_total A counter.\\nSecond line \\\\ here.\n"
            "# TYPE c_total counter\n"
            "c_total{path=\"a\\\"b\\\\c\\nd\"} 2\n"
            "# HELP g A gauge.\n"
            "# TYPE g gauge\n"
            "g -0.25\n"
            "# HELP h_seconds A histogram.\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{k=\"x\",le=\"0.5\"} 2\n"
            "h_seconds_bucket{k=\"x\",le=\"1.0\"} 4\n"
            "h_seconds_bucket{k=\"x\",le=\"2.5\"} 5\n"
            "h_seconds_bucket{k=\"x\",le=\"+Inf\"} 6\n"
            "h_seconds_sum{k=\"x\"} 13.3\n"
            "h_seconds_count{k=\"x\"} 6\n");
}

TEST(Exposition, GaugesCarryNaNAndInfinities) {
  MetricRegistry registry;
  auto& gauge = registry.add_gauge("g", "Special values.", {"v"});
  gauge.with({"nan"}).set(kNaN);
  gauge.with({"pos"}).set(kInf);
  gauge.with({"neg"}).set(-kInf);
  std::string text = serving::to_exposition_text(registry.collect());
  EXPECT_NE(text.find("g{v=\"nan\"} NaN\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{v=\"pos\"} +Inf\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{v=\"neg\"} -Inf\n"), std::string::npos) << text;
  parse_exposition(text);
}

TEST(Exposition, HistogramBucketsAreCumulativeAndEndAtCount) {
  MetricRegistry registry;
  auto& family = registry.add_histogram("h", "H.", {}, {1, 2, 4, kInf});  // +Inf is implied
  auto& h = family.with({});
  h.observe(1);     // on a bound: that bucket
  h.observe(kNaN);  // +Inf only
  h.observe(100);
  h.observe_all({500, 1500, 3000}, 1e-3);
  auto s = parse_exposition(serving::to_exposition_text(registry.collect()));
  EXPECT_EQ(value_of(s, "h_bucket{le=\"1.0\"}"), 2);  // 1 and 0.5
  EXPECT_EQ(value_of(s, "h_bucket{le=\"2.0\"}"), 3);  // and 1.5
  EXPECT_EQ(value_of(s, "h_bucket{le=\"4.0\"}"), 4);  // and 3
  EXPECT_EQ(value_of(s, "h_bucket{le=\"+Inf\"}"), 6);
  EXPECT_EQ(value_of(s, "h_count"), 6);
  EXPECT_TRUE(std::isnan(value_of(s, "h_sum")));  // a NaN observation poisons the sum, as upstream
}

TEST(Exposition, EmptyFamilyStillDeclaresItself) {
  MetricRegistry registry;
  registry.add_counter("c_total", "Nothing yet.", {"rank"});
  EXPECT_EQ(serving::to_exposition_text(registry.collect()),
            "# HELP c_total Nothing yet.\n# TYPE c_total counter\n");
}

}  // namespace
}  // namespace vxperf
