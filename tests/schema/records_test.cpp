#include "vxperf/records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;

TEST(Records, RequestJsonKeysAndEscaping) {
  RequestRecord r;
  r.req = 7;
  StageSummary s;
  s.name = "weird \"stage\"\n";
  s.count = 1;
  s.total_ms = s.mean_ms = s.min_ms = s.max_ms = 12.5;
  r.stages.push_back(s);
  Json j = Json::parse(to_json_line(r));
  EXPECT_EQ(j["stages"].begin().key(), "weird \"stage\"\n");
  EXPECT_TRUE(j["dit"].is_null());
  EXPECT_FALSE(j.contains("device"));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"dit", "e2e_s", "kind", "rank", "req", "stages", "ts",
                                            "warmup", "world_size"}));
}

TEST(Records, NonFiniteNumbersStayValidJson) {
  RequestRecord r;
  r.e2e_s = std::numeric_limits<double>::infinity();
  DitThroughput d;
  d.tflops = std::numeric_limits<double>::quiet_NaN();
  r.dit = d;
  // Written as null: every JSON parser reads the line back.
  Json j = Json::parse(to_json_line(r));
  EXPECT_TRUE(j["e2e_s"].is_null());
  EXPECT_TRUE(j["dit"]["tflops"].is_null());
  EXPECT_TRUE(j["dit"]["mfu"].is_null());
}

TEST(Records, TrainWindowWithoutThroughput) {
  TrainWindowRecord w;
  w.phases_s = {{"fwd", 0.5}, {"bwd", 1.0}};
  w.step_s_p50 = w.step_s_p95 = 1.5;
  w.micro_steps = 1;
  Json j = Json::parse(to_json_line(w));
  EXPECT_EQ(j["kind"], "train_window");
  EXPECT_TRUE(j["throughput"].is_null());
  EXPECT_FALSE(j.contains("eta_s"));
  EXPECT_EQ(format_log_line(w),
            "[Perf][rank0] step 0-0 | 1.50s/step p95 1.50s | fwd 0.50s bwd 1.00s");
}

TEST(Records, LogLineOfARequestWithoutDevice) {
  RequestRecord r;
  r.req = 3;
  r.warmup = true;
  r.e2e_s = 2.345;
  StageSummary s;
  s.name = "transformer";
  s.count = 2;
  s.total_ms = 2000;
  s.mean_ms = 1000;
  s.std_ms = 10;
  s.min_ms = 990;
  s.max_ms = 1010;
  r.stages.push_back(s);
  DitThroughput d;
  d.flops_per_fwd = 1.5e14;
  d.attn_share = 0.5;
  d.tflops = 150;
  r.dit = d;
  EXPECT_EQ(format_log_line(r),
            "[Perf][rank0] req#3 warmup | e2e 2.35s | transformer 2.00s(2x, 1000+-10ms, min 990 "
            "max 1010) | DiT 1.50e+14 FLOPs/fwd (attn 50%) -> 150.0 TFLOPS (MFU n/a)");
}

// [Perf] lines are made with a printf that grows to fit: no number is ever cut short.
TEST(Records, LogLinesAreNeverCutShort) {
  RequestRecord r;
  r.req = INT64_MAX;
  r.e2e_s = 1e300;  // "%.2f": 301 digits and the decimals
  StageSummary s;
  s.name = std::string(300, 'x');
  s.count = INT64_MAX;
  s.total_ms = 1e300;
  s.mean_ms = s.std_ms = s.min_ms = s.max_ms = 1e300;
  r.stages.push_back(s);
  std::string line = format_log_line(r);
  std::string huge = internal::strprintf("%.2f", 1e300);
  ASSERT_EQ(huge.size(), 304u);
  EXPECT_NE(line.find("req#9223372036854775807 | e2e " + huge + "s | "), std::string::npos);
  EXPECT_NE(line.find(std::string(300, 'x') + " " + internal::strprintf("%.2f", 1e297) +
                      "s(9223372036854775807x, "),
            std::string::npos);
  std::string tail = "max " + internal::strprintf("%.0f", 1e300) + ")";
  EXPECT_EQ(line.substr(line.size() - tail.size()), tail);
}

}  // namespace
}  // namespace vxperf
