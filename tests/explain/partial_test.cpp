// `vxperf explain --partial`'s document: every field back as written, every double to the bit
// (non-finite ones too), and what a merge refuses. One run against the merge, byte for byte, is
// tests/cli/explain_merge.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "explain/explain_part.h"
#include "schema/json.h"

namespace vxperf::explain {
namespace {

std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// A part with a value in every kind of field, doubles that print long and that do not print.
ExplainParts sample() {
  ExplainParts p;
  p.replay = true;
  p.what_ifs = {"host", "kernel:flash.*=0.7"};
  p.records_files = {"run.jsonl"};
  p.records_problems = {"bad.jsonl: line 3: not JSON"};
  TracePart t;
  t.file = "trace-0.json";
  t.warnings = {"1 rows have a negative duration"};
  t.rank = 3;
  t.rank_found = true;
  t.step_strings = {"ProfilerStep#1", "ProfilerStep#2"};
  t.analysed = true;
  WindowedAnalysis a;
  a.rank.has_device_rows = true;
  a.rank.steps = {1};
  a.rank.temporal.kernel_time_us = 0.1 + 0.2;
  a.rank.temporal.idle_pct = std::numeric_limits<double>::quiet_NaN();
  a.rank.temporal.compute_pct = std::numeric_limits<double>::infinity();
  a.rank.temporal.non_compute_pct = -std::numeric_limits<double>::infinity();
  a.rank.idle_by_stream.push_back({7, 1e-310, -0.0, 3.0, 0.25, std::nullopt, 1.0 / 3});
  a.rank.comm_comp_overlap_pct = 12.34;
  a.rank.kernel_types = {{"COMPUTATION", 20}, {"MEMORY", 2.5}};
  a.rank.kernels.push_back({"gemm", "COMPUTATION", 2, 30, 20, 10, 15, 5});
  a.rank.launches = {4, 1, 2, 3};
  a.problems = {"rounding made a row negative"};
  t.filtered = a;
  WaterfallRow w;
  w.range = "transformer";
  w.kind = "denoising_step";
  w.step_index = 2;
  w.count = 2;
  w.span_s = 1.0 / 7;
  w.ideal_s = 2.0 / 7;
  w.flops = 1e18;
  t.waterfall = {w};
  t.requests_without_record = {0, 1, 5};
  t.matched = {4};
  t.priced = {2};
  RankReplay r;
  r.nodes = 52;
  r.largest_error_range = "request 0";
  ReplayRow row;
  row.range = "request";
  row.path_s = {{"host", 0.5}, {"gpu_compute", 1.0 / 9}};
  row.what_if_s = {0.25, std::nan("")};
  row.stacked_s = {0.2, 1.0 / 11};
  r.rows = {row};
  r.what_ifs.push_back({"host", false, "no launches", 1, 0.5, 0.5});
  r.ranked = {0};
  r.stacked.push_back({"peak,host", true, "", 1, 0.25, 0.75});
  r.stacked.push_back({"comm", true, "", 0.25, 0.2, 0.05});
  t.replay = r;
  t.replay_problems = {"a sync without its event"};
  p.traces = {t, TracePart{"trace-1.json", "truncated", {}, 0, false, {}, false}};
  return p;
}

TEST(ExplainPartial, EveryFieldComesBackAndEveryDoubleToTheBit) {
  const std::string text = partial_json(sample());
  const ExplainParts back = read_partial(text);
  EXPECT_EQ(partial_json(back), text);  // every field, as written
  const TracePart& t = back.traces[0];
  const Temporal& temporal = t.filtered->rank.temporal;
  EXPECT_EQ(bits(temporal.kernel_time_us), bits(0.1 + 0.2));
  EXPECT_TRUE(std::isnan(*temporal.idle_pct));
  EXPECT_EQ(*temporal.compute_pct, std::numeric_limits<double>::infinity());
  EXPECT_EQ(*temporal.non_compute_pct, -std::numeric_limits<double>::infinity());
  const StreamIdle& idle = t.filtered->rank.idle_by_stream[0];
  EXPECT_EQ(bits(idle.host_wait_us), bits(1e-310));
  EXPECT_EQ(bits(idle.kernel_wait_us), bits(-0.0));
  EXPECT_FALSE(idle.kernel_wait_ratio.has_value());
  EXPECT_EQ(bits(*idle.other_ratio), bits(1.0 / 3));
  EXPECT_FALSE(t.whole.has_value());
  EXPECT_EQ(bits(*t.waterfall[0].ideal_s), bits(2.0 / 7));
  EXPECT_FALSE(t.waterfall[0].mfu.has_value());
  EXPECT_EQ(bits(t.replay->rows[0].path_s.at("gpu_compute")), bits(1.0 / 9));
  EXPECT_TRUE(std::isnan(t.replay->rows[0].what_if_s[1]));
  EXPECT_EQ(bits(t.replay->rows[0].stacked_s[1]), bits(1.0 / 11));
  ASSERT_EQ(t.replay->stacked.size(), 2u);
  EXPECT_EQ(t.replay->stacked[0].what_if, "peak,host");
  EXPECT_EQ(bits(t.replay->stacked[1].gain_s), bits(0.05));
  EXPECT_EQ(back.traces[1].error, "truncated");
}

void expect_refused(const std::string& text, const std::string& says) {
  try {
    read_partial(text);
    ADD_FAILURE() << "read: " << text.substr(0, 80);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(ExplainPartial, AnotherVersionCommandOrShapeIsRefusedByName) {
  const internal::Json good = internal::Json::parse(partial_json(sample()));
  expect_refused("[1, 2]", "not a vxperf partial");
  expect_refused("{\"traceEvents\": []}", "not a vxperf partial");
  internal::Json j = good;
  j["vxperf_partial"] = 1;
  expect_refused(j.dump(), "a partial of version 1; this vxperf reads version 2");
  j = good;
  j["command"] = "report";
  expect_refused(j.dump(), "a partial of `vxperf report`, not of `vxperf explain`");
  j = good;
  j["traces"][0]["filtered"]["temporal"].erase("idle_time_us");
  expect_refused(j.dump(), "traces[0].filtered.temporal.idle_time_us: missing");
  j = good;
  j["traces"][0]["rank"] = "three";
  expect_refused(j.dump(), "traces[0].rank: must be an integer");
  j = good;
  j["traces"][0]["replay"]["ranked"][0] = -1;
  expect_refused(j.dump(), "traces[0].replay.ranked[0]: must be an integer from 0");
  j = good;
  j["traces"][0]["waterfall"][0]["span_s"] = "fast";
  expect_refused(j.dump(), "traces[0].waterfall[0].span_s: must be a number");
}

TEST(ExplainPartial, PartsOfOtherRecordsOrOptionsAreNotMerged) {
  ExplainParts a = sample(), b = sample();
  b.traces[0].rank = 4;
  b.traces[0].file = "trace-2.json";
  b.records_files = {"other.jsonl"};
  try {
    merge_parts({a, b});
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("joined with different records (trace-0.json's and "
                                         "trace-2.json's)"),
              std::string::npos)
        << e.what();
  }
  b.records_files = a.records_files;
  b.what_ifs = {"host"};
  EXPECT_THROW(merge_parts({a, b}), std::invalid_argument);
  // The same records and options: both ranks, in order, the window the job's two steps make.
  b.what_ifs = a.what_ifs;
  const Explanation e = merge_parts({a, b});
  ASSERT_EQ(e.ranks.size(), 2u);
  EXPECT_EQ(e.ranks[0].rank, 3);
  EXPECT_EQ(e.ranks[1].file, "trace-2.json");
  EXPECT_EQ(e.kernel_types.at("COMPUTATION"), 40);
}

}  // namespace
}  // namespace vxperf::explain
