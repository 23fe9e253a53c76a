// Serving metrics: the exposition format, the record sink's mapping, and the HTTP endpoint over
// loopback (127.0.0.1 only, ports chosen by the kernel).
#include "vxperf/prometheus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "serving/exposition.h"
#include "serving/metrics.h"

#ifdef VXPERF_HAVE_HTTPLIB
#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#endif

namespace vxperf {
namespace {

using serving::escape_help;
using serving::escape_label_value;
using serving::format_bucket_bound;
using serving::format_number;
using serving::MetricRegistry;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reads exposition text back, checking every line's grammar: series text (name and labels, as
// written) to value. A line that is neither a comment nor a well-formed sample fails the test.
std::map<std::string, double> parse_exposition(const std::string& text) {
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

double value_of(const std::map<std::string, double>& series, const std::string& key) {
  auto it = series.find(key);
  if (it == series.end()) {
    ADD_FAILURE() << "no series " << key;
    return kNaN;
  }
  return it->second;
}

bool has_prefix(const std::map<std::string, double>& series, const std::string& prefix) {
  auto it = series.lower_bound(prefix);
  return it != series.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

// ---- exposition format -------------------------------------------------------------------------

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

TEST(Metrics, RegistryRefusesWhatPrometheusWouldReject) {
  MetricRegistry r;
  EXPECT_THROW(r.add_counter("1bad", "", {}), std::invalid_argument);
  EXPECT_THROW(r.add_counter("bad-name", "", {}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"bad label"}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {}, {2, 1}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {}, {1, kNaN}), std::invalid_argument);
  auto& c = r.add_counter("ok:name_total", "", {"a", "b"});
  EXPECT_THROW(r.add_gauge("ok:name_total", "", {}), std::invalid_argument);
  EXPECT_THROW(c.with({"only one"}), std::invalid_argument);
  EXPECT_THROW(c.with({"x", "y"}).inc(-1), std::invalid_argument);
  EXPECT_THROW(c.with({"x", "y"}).inc(kNaN), std::invalid_argument);
  c.with({"x", "y"}).inc(0.5);
  EXPECT_EQ(&c.with({"x", "y"}), &c.with({"x", "y"}));  // one child per label values
  EXPECT_EQ(c.with({"x", "y"}).value(), 0.5);
}

// ---- the record sink ---------------------------------------------------------------------------

struct Request {
  RequestRecord record;
  RequestDetail detail;
};

// A request shaped like a text-to-video call: a text encoder, `steps` transformer forwards, a
// scheduler step after each, a VAE decode and a post-processing stage.
Request make_request(int rank, double e2e_s, int steps = 50, bool failed = false,
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
  r.record.peaks = MemoryPeaks{46ull << 30, 102ull << 30};
  return r;
}

std::map<std::string, double> scrape(const PrometheusSink& sink) {
  return parse_exposition(sink.render());
}

TEST(PrometheusSink, RequestCountsLatencyAndEveryStageCall) {
  PrometheusSink sink;
  for (double e2e : {13.0, 0.04, 400.0}) {
    Request r = make_request(0, e2e);
    sink.on_request(r.record, r.detail);
  }
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"), 3);
  EXPECT_FALSE(has_prefix(s, R"(vxperf_requests_total{rank="0",status="error"})"));
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_count{rank="0"})"), 3);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_request_seconds_sum{rank="0"})"), 413.04);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="0.05"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="20.0"})"), 2);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="300.0"})"), 2);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="+Inf"})"), 3);
  // Each call of each stage, in seconds.
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"), 150);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="scheduler"})"), 150);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="vae_decode"})"), 3);
  EXPECT_NEAR(value_of(s, R"(vxperf_stage_seconds_sum{rank="0",stage="transformer"})"), 45, 1e-9);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_bucket{rank="0",stage="transformer",le="0.25"})"),
            0);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_bucket{rank="0",stage="transformer",le="0.5"})"),
            150);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_bucket{rank="0",stage="scheduler",le="0.0025"})"),
            150);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_bucket{rank="0",stage="scheduler",le="0.001"})"),
            0);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_dit_tflops{rank="0"})"), 754.7);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_dit_mfu{rank="0"})"), 0.5);
  EXPECT_EQ(value_of(s, R"(vxperf_peak_memory_bytes{rank="0",kind="allocated"})"),
            static_cast<double>(46ull << 30));
  EXPECT_EQ(value_of(s, R"(vxperf_peak_memory_bytes{rank="0",kind="reserved"})"),
            static_cast<double>(102ull << 30));
}

TEST(PrometheusSink, FailedRequestsOnlyCountAndWarmupIsLeftOut) {
  PrometheusSink sink;
  Request ok = make_request(0, 10);
  sink.on_request(ok.record, ok.detail);
  Request failed = make_request(0, 1, 3, /*failed=*/true);
  failed.record.dit->tflops = 1;
  failed.record.stages[0].name = "only_in_failed";
  sink.on_request(failed.record, failed.detail);
  Request warm = make_request(0, 99, 50, false, /*warmup=*/true);
  warm.record.stages[0].name = "only_in_warmup";
  warm.record.dit->tflops = 2;
  sink.on_request(warm.record, warm.detail);
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="error"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_count{rank="0"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"), 50);
  EXPECT_FALSE(has_prefix(s, R"(vxperf_stage_seconds_count{rank="0",stage="only_in)"));
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_dit_tflops{rank="0"})"), 754.7);
}

TEST(PrometheusSink, GaugesFollowTheLastRequestThatHasTheValue) {
  PrometheusSink sink;
  auto s = scrape(sink);
  EXPECT_FALSE(has_prefix(s, "vxperf_dit_mfu"));  // no series before a value
  Request first = make_request(1, 5);
  first.record.dit->mfu = 0.25;
  sink.on_request(first.record, first.detail);
  Request unpriced = make_request(1, 5);  // the peak was unknown: MFU stays the last known
  unpriced.record.dit->tflops = 600;
  unpriced.record.dit->mfu.reset();
  unpriced.record.peaks.reset();
  sink.on_request(unpriced.record, unpriced.detail);
  Request no_dit = make_request(1, 5, 0);  // no transformer call at all
  no_dit.record.dit.reset();
  sink.on_request(no_dit.record, no_dit.detail);
  s = scrape(sink);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_dit_tflops{rank="1"})"), 600);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_dit_mfu{rank="1"})"), 0.25);
  EXPECT_EQ(value_of(s, R"(vxperf_peak_memory_bytes{rank="1",kind="allocated"})"),
            static_cast<double>(46ull << 30));
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="1",stage="transformer"})"), 100);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="1",status="ok"})"), 3);
}

TEST(PrometheusSink, StageNamesAreEscapedAsLabelValues) {
  PrometheusSink sink;
  Request r = make_request(0, 1, 2);
  r.record.stages[0].name = "odd \"stage\"\\\n\xE6\xA8\xA1";
  sink.on_request(r.record, r.detail);
  std::string text = sink.render();
  EXPECT_NE(text.find("stage=\"odd \\\"stage\\\"\\\\\\n\xE6\xA8\xA1\""), std::string::npos) << text;
  parse_exposition(text);
}

TrainWindowRecord make_window(int rank, std::vector<double> step_s, int warmup_steps,
                              std::optional<double> mfu, WindowDetail* detail) {
  TrainWindowRecord w;
  w.rank = rank;
  detail->steps.clear();
  for (std::size_t i = 0; i < step_s.size(); ++i) {
    StepRecord step;
    step.step = static_cast<std::int64_t>(i);
    step.warmup = static_cast<int>(i) < warmup_steps;
    step.total_s = step_s[i];
    detail->steps.push_back(step);
  }
  w.steps = static_cast<std::int64_t>(step_s.size()) - warmup_steps;
  TrainThroughput t;
  t.samples_per_s = 0.625;
  t.mfu = mfu;
  if (mfu) t.hfu = *mfu * 4 / 3;
  w.throughput = t;
  w.peaks = MemoryPeaks{1000, 2000};
  return w;
}

TEST(PrometheusSink, TrainingStepsAndWindowGauges) {
  PrometheusSink sink;
  WindowDetail detail;
  TrainWindowRecord w = make_window(0, {30, 1.6, 1.6, 1.7, 0.4}, 1, 0.557, &detail);
  sink.on_train_window(w, detail);
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_train_step_seconds_count{rank="0"})"), 4);  // warmup left out
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_step_seconds_sum{rank="0"})"), 5.3);
  EXPECT_EQ(value_of(s, R"(vxperf_train_step_seconds_bucket{rank="0",le="0.5"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_train_step_seconds_bucket{rank="0",le="2.0"})"), 4);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_samples_per_second{rank="0"})"), 0.625);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_mfu{rank="0"})"), 0.557);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_hfu{rank="0"})"), 0.557 * 4 / 3);
  EXPECT_EQ(value_of(s, R"(vxperf_train_peak_memory_bytes{rank="0",kind="reserved"})"), 2000);

  // An unpriced window keeps the last MFU; a window of warmup steps only changes nothing.
  TrainWindowRecord unpriced = make_window(0, {2, 2}, 0, std::nullopt, &detail);
  unpriced.throughput->samples_per_s = 0.5;
  sink.on_train_window(unpriced, detail);
  TrainWindowRecord warm = make_window(0, {9, 9}, 2, 0.9, &detail);
  sink.on_train_window(warm, detail);
  s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_train_step_seconds_count{rank="0"})"), 6);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_samples_per_second{rank="0"})"), 0.5);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_mfu{rank="0"})"), 0.557);
}

TEST(PrometheusSink, WarmupOnlyWindowMakesNoSeries) {
  PrometheusSink sink;
  WindowDetail detail;
  sink.on_train_window(make_window(3, {9, 9}, 2, 0.9, &detail), detail);
  auto s = scrape(sink);
  EXPECT_FALSE(has_prefix(s, "vxperf_train"));
}

// ---- listen addresses --------------------------------------------------------------------------

TEST(ListenAddress, AcceptsPortAndHostPort) {
  std::string error;
  auto a = parse_listen_address("9400", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  a = parse_listen_address("0.0.0.0:1", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 1);
  a = parse_listen_address("metrics-01.internal.example:65535", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "metrics-01.internal.example");
  EXPECT_EQ(a->port, 65535);
  EXPECT_TRUE(parse_listen_address("localhost:8080", nullptr));
}

TEST(ListenAddress, RefusesAnythingElseWithAReason) {
  for (const char* bad : {"",
                          "0",
                          "65536",
                          "99999999",
                          "-1",
                          "+80",
                          "80 ",
                          " 80",
                          "8o",
                          "0x50",
                          ":9400",
                          "host:",
                          "host:0",
                          "1.2.3.4:",
                          "256.1.1.1:80",
                          "1.2.3:80",
                          "1.2.3.4.5:80",
                          "01.2.3.4:80",
                          "::1",
                          "[::1]:80",
                          "a:b:80",
                          "-host:80",
                          "host-:80",
                          "ho_st:80",
                          "a..b:80",
                          "h\xC3\xA9:80",
                          "host\n:80"}) {
    std::string error;
    EXPECT_FALSE(parse_listen_address(bad, &error)) << '"' << bad << '"';
    EXPECT_FALSE(error.empty()) << '"' << bad << '"';
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  std::string error;
  parse_listen_address("70000", &error);
  EXPECT_NE(error.find("1 to 65535"), std::string::npos) << error;
  parse_listen_address("[::1]:80", &error);
  EXPECT_NE(error.find("IPv6"), std::string::npos) << error;
  parse_listen_address("300.1.1.1:80", &error);
  EXPECT_NE(error.find("IPv4"), std::string::npos) << error;
  EXPECT_FALSE(parse_listen_address(std::string(254, 'a') + ":80", &error));
  EXPECT_FALSE(parse_listen_address(std::string(64, 'a') + ".b:80", &error));
}

// ---- the endpoint ------------------------------------------------------------------------------

struct Notices {
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(PrometheusEndpoint, BadAddressTextIsOneNoticeAndNoEndpoint) {
  Notices notices;
  EXPECT_EQ(start_prometheus("localhost:http", notices.fn()), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_EQ(notices.lines[0].rfind("vxperf: ", 0), 0u) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find("localhost:http"), std::string::npos) << notices.lines[0];
}

#ifndef VXPERF_HAVE_HTTPLIB

TEST(PrometheusEndpoint, CompiledOutSaysSoOnce) {
  EXPECT_FALSE(prometheus_endpoint_available());
  Notices notices;
  EXPECT_EQ(start_prometheus(ListenAddress{"127.0.0.1", 0}, nullptr, notices.fn()), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_NE(notices.lines[0].find("cpp-httplib"), std::string::npos) << notices.lines[0];
}

#else  // VXPERF_HAVE_HTTPLIB

std::unique_ptr<PrometheusEndpoint> start_loopback(std::shared_ptr<PrometheusSink> sink,
                                                   Notices* notices, int port = 0) {
  return start_prometheus(ListenAddress{"127.0.0.1", port}, std::move(sink), notices->fn());
}

std::unique_ptr<httplib::Client> client_for(const PrometheusEndpoint& endpoint) {
  auto cli = std::make_unique<httplib::Client>("127.0.0.1", endpoint.address().port);
  cli->set_connection_timeout(10);
  cli->set_read_timeout(30);
  cli->set_write_timeout(10);
  return cli;
}

// Sends `bytes` as they are and reads the answer until the server closes; the status code, or 0.
// `hang_up`: close our side after sending (cpp-httplib then answers nothing: the peer is gone).
int raw_status(int port, const std::string& bytes, bool hang_up = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    if (hang_up) ::shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
      answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (answer.compare(0, 9, "HTTP/1.1 ") != 0 || answer.size() < 12) return 0;
  return std::atoi(answer.substr(9, 3).c_str());
}

void expect_serving(const PrometheusEndpoint& endpoint) {
  auto res = client_for(endpoint)->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST(PrometheusEndpoint, ServesMetricsOnLoopback) {
  EXPECT_TRUE(prometheus_endpoint_available());
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  Request r = make_request(0, 12);
  sink->on_request(r.record, r.detail);
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  EXPECT_TRUE(notices.lines.empty());
  EXPECT_EQ(endpoint->address().host, "127.0.0.1");
  EXPECT_GT(endpoint->address().port, 0);
  EXPECT_EQ(endpoint->sink(), sink);

  auto res = client_for(*endpoint)->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u)
      << res->get_header_value("Content-Type");
  EXPECT_EQ(res->body, sink->render());
  auto s = parse_exposition(res->body);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"), 1);
  // A query string is the scraper's business; the path is what counts.
  res = client_for(*endpoint)->Get("/metrics?name[]=vxperf_dit_mfu");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(PrometheusEndpoint, OnlyGetMetrics) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  auto cli = client_for(*endpoint);
  auto res = cli->Post("/metrics", "x=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET");
  auto expect_405 = [](const httplib::Result& r) {
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 405);
  };
  expect_405(cli->Put("/metrics", "", "text/plain"));
  expect_405(cli->Delete("/metrics"));
  expect_405(cli->Head("/metrics"));
  expect_405(cli->Options("/metrics"));
  for (const char* path :
       {"/", "/metrics/", "/Metrics", "/metricsx", "/api/v1/query", "/../metrics"}) {
    res = cli->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  res = cli->Post("/other", "body", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, OversizedAndMalformedRequestsAreRefusedAndServingGoesOn) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  int port = endpoint->address().port;
  const std::string long_target = "/metrics?" + std::string(64 * 1024, 'a');
  EXPECT_EQ(raw_status(port, "GET " + long_target + " HTTP/1.1\r\nHost: x\r\n\r\n"), 414);
  expect_serving(*endpoint);
  EXPECT_EQ(raw_status(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                 std::string(64 * 1024, 'b') + "\r\n\r\n"),
            400);
  expect_serving(*endpoint);
  EXPECT_EQ(raw_status(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                                 std::string(100000, 'c')),
            413);
  expect_serving(*endpoint);
  for (const std::string& junk :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET /metrics\r\n\r\n"),
        std::string("GET /metrics HTTP/9.9\r\n\r\n"), std::string("BREW /metrics HTTP/1.1\r\n\r\n"),
        std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        std::string("\x00\x01\x02\xFF\r\n\r\n", 8)}) {
    EXPECT_EQ(raw_status(port, junk), 400) << junk;
  }
  EXPECT_EQ(raw_status(port, "", /*hang_up=*/true), 0);           // connect, say nothing, hang up
  EXPECT_EQ(raw_status(port, "GET /metr", /*hang_up=*/true), 0);  // half a request
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, PortInUseIsReportedOnceAndNothingElseHappens) {
  Notices first_notices;
  auto first = start_loopback(nullptr, &first_notices);
  ASSERT_NE(first, nullptr);
  int port = first->address().port;
  // Another endpoint on the same port (the library's SO_REUSEPORT would have let it share).
  Notices notices;
  EXPECT_EQ(start_loopback(nullptr, &notices, port), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_EQ(notices.lines[0].rfind("vxperf: ", 0), 0u) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find("in use"), std::string::npos) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find(std::to_string(port)), std::string::npos) << notices.lines[0];
  // A plain socket holding a port: the same.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  Notices held;
  EXPECT_EQ(start_loopback(nullptr, &held, ntohs(addr.sin_port)), nullptr);
  EXPECT_EQ(held.lines.size(), 1u);
  ::close(fd);
  EXPECT_TRUE(first_notices.lines.empty());
  expect_serving(*first);
}

TEST(PrometheusEndpoint, HostNameResolvesToIpv4) {
  Notices notices;
  auto endpoint = start_prometheus(ListenAddress{"localhost", 0},
                                   std::make_shared<PrometheusSink>(), notices.fn());
  ASSERT_NE(endpoint, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  EXPECT_EQ(endpoint->address().host, "127.0.0.1");
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, StopsCleanlyAndFreesThePort) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  int port = endpoint->address().port;
  // A connection that says nothing is open while the endpoint goes away.
  int idle = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  endpoint.reset();
  ::close(idle);
  EXPECT_EQ(raw_status(port, "GET /metrics HTTP/1.1\r\n\r\n"), 0);  // nobody listens
  auto again = start_loopback(nullptr, &notices, port);
  ASSERT_NE(again, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  expect_serving(*again);
}

// The threads in this process, by id.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') ids.insert(e->d_name);
    }
    ::closedir(dir);
  }
  return ids;
}

// Whether thread `tid` blocks SIGPIPE (bit 13 of SigBlk in /proc).
bool blocks_sigpipe(const std::string& tid) {
  std::ifstream status("/proc/self/task/" + tid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGPIPE - 1)) & 1;
    }
  }
  return false;
}

TEST(PrometheusEndpoint, ScrapersHangingUpNeverRaiseSigpipe) {
  auto before = thread_ids();
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  // A large exposition (thousands of stage series), so responses outlast the clients below.
  for (int i = 0; i < 200; ++i) {
    Request r = make_request(0, 1, 1);
    for (auto& stage : r.record.stages) stage.name += "_" + std::to_string(i);
    sink->on_request(r.record, r.detail);
  }
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr);
  expect_serving(*endpoint);  // the workers exist now
  std::vector<std::string> server_threads;
  for (const auto& id : thread_ids()) {
    if (!before.count(id)) server_threads.push_back(id);
  }
  ASSERT_FALSE(server_threads.empty());
  for (const auto& id : server_threads) EXPECT_TRUE(blocks_sigpipe(id)) << "thread " << id;
  EXPECT_FALSE(blocks_sigpipe(std::to_string(::gettid())));  // the caller's mask is untouched

  // Clients that ask and hang up with a reset mid-answer: the process lives on. (cpp-httplib checks
  // the peer before each send, so SIGPIPE needs a reset landing between check and send: this loop
  // cannot force that race; the mask checked above is what makes it harmless.)
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 50; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int small = 4096;  // a small window: most of the answer is still unsent when we hang up
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(endpoint->address().port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    char first;
    ASSERT_EQ(::recv(fd, &first, 1, 0), 1);  // the answer has started
    linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
  }
  expect_serving(*endpoint);
}

// Several threads settle requests while another scrapes: every scrape parses, shows each request
// whole (its counter, latency and stage calls together), and never goes backwards; the last one
// counts exactly what was fed. The feeders pause halfway until a few scrapes have run, so some
// scrapes surely land mid-feed, however the threads are scheduled.
TEST(PrometheusEndpoint, ConcurrentUpdatesAndScrapesStayConsistent) {
  constexpr int kFeeders = 4;
  constexpr int kRequestsEach = 200;
  constexpr int kFailEvery = 7;
  constexpr int kSteps = 50;
  constexpr int kScrapesMidway = 5;
  constexpr int kMaxScrapes = 1000;
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr);

  std::atomic<int> scrapes{0};
  std::atomic<bool> scraping_over{false};
  std::atomic<int> feeders_done{0};
  std::vector<std::thread> feeders;
  for (int t = 0; t < kFeeders; ++t) {
    feeders.emplace_back([&, t] {
      for (int i = 0; i < kRequestsEach; ++i) {
        if (i == kRequestsEach / 2) {
          while (scrapes.load() < kScrapesMidway && !scraping_over.load())
            std::this_thread::yield();
        }
        Request r = make_request(0, 0.5 + t + i * 0.01, kSteps, i % kFailEvery == 0);
        sink->on_request(r.record, r.detail);
      }
      feeders_done.fetch_add(1);
    });
  }

  auto check = [&](const std::map<std::string, double>& s, double* last_ok) {
    const std::string ok_key = R"(vxperf_requests_total{rank="0",status="ok"})";
    const std::string count_key = R"(vxperf_request_seconds_count{rank="0"})";
    double ok = has_prefix(s, ok_key) ? value_of(s, ok_key) : 0;
    double count = has_prefix(s, count_key) ? value_of(s, count_key) : 0;
    EXPECT_EQ(ok, count);
    if (ok > 0) {
      EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"),
                ok * kSteps);
      EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="vae_decode"})"), ok);
      EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="+Inf"})"), count);
    }
    EXPECT_GE(ok, *last_ok);
    *last_ok = ok;
  };

  auto cli = client_for(*endpoint);
  double last_ok = 0;
  bool mid_feed_seen = false;
  while (feeders_done.load() < kFeeders && scrapes.load() < kMaxScrapes) {
    auto res = cli->Get("/metrics");
    if (!res || res->status != 200) {
      ADD_FAILURE() << "scrape " << scrapes.load() << ": "
                    << (res ? std::to_string(res->status) : httplib::to_string(res.error()));
      break;
    }
    check(parse_exposition(res->body), &last_ok);
    mid_feed_seen = mid_feed_seen || (last_ok > 0 && feeders_done.load() == 0);
    scrapes.fetch_add(1);
  }
  scraping_over.store(true);
  for (auto& f : feeders) f.join();
  auto res = cli->Get("/metrics");
  ASSERT_TRUE(res);
  auto s = parse_exposition(res->body);
  check(s, &last_ok);
  const int failed_each = (kRequestsEach + kFailEvery - 1) / kFailEvery;
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"),
            kFeeders * (kRequestsEach - failed_each));
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="error"})"),
            kFeeders * failed_each);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"),
            kFeeders * (kRequestsEach - failed_each) * kSteps);
  EXPECT_GE(scrapes.load(), kScrapesMidway);
  EXPECT_TRUE(mid_feed_seen);
  EXPECT_TRUE(notices.lines.empty());
}

#endif  // VXPERF_HAVE_HTTPLIB

}  // namespace
}  // namespace vxperf
