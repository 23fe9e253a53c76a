// The analysis library: records reader, report, comparison, HTML, Chrome trace and FLOPs.
#include "vxperf/analysis.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "vxperf/event_script.h"
#include "vxperf/vxperf.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;

std::string case_path(const std::string& name) {
  return std::string(VXPERF_CASES_DIR) + "/" + name;
}

RecordSet read_string(const std::string& text, const std::string& name = "mem.jsonl") {
  std::istringstream in(text);
  RecordSet set;
  read_records(in, name, set);
  return set;
}

RequestRecord request(int rank, std::int64_t req, double e2e, bool warmup = false) {
  RequestRecord r;
  r.rank = rank;
  r.req = req;
  r.warmup = warmup;
  r.e2e_s = e2e;
  StageSummary dit{"transformer", 10, e2e * 800.0, e2e * 80.0, 1.0, 1.0, 1.0};
  StageSummary vae{"vae_dec", 1, e2e * 150.0, e2e * 150.0, 0.0, 1.0, 1.0};
  r.stages = {dit, vae};
  DitThroughput t;
  t.params = 1418996800;
  t.tokens = 32760;
  t.flops_per_fwd = 2.9388e14;
  t.tflops = 400.0;
  t.peak_tflops = 989.0;
  t.mfu = 400.0 / 989.0;
  r.dit = t;
  r.device = 0;
  r.peaks = MemoryPeaks{std::uint64_t{40} << 30, std::uint64_t{60} << 30};
  return r;
}

TrainWindowRecord window(int rank, std::int64_t first, std::int64_t steps, double p50,
                         double mfu = 0.4) {
  TrainWindowRecord w;
  w.rank = rank;
  w.world_size = 4;
  w.step_first = first;
  w.step_last = first + steps - 1;
  w.steps = steps;
  w.step_s_p50 = p50;
  w.step_s_p95 = p50 * 1.2;
  w.phases_s = {{"data", 0.1 * p50}, {"fwd", 0.3 * p50}, {"bwd", 0.6 * p50}};
  w.micro_steps = 1;
  w.device = rank;
  w.peaks = MemoryPeaks{std::uint64_t{50} << 30, std::uint64_t{70} << 30};
  TrainThroughput t;
  t.samples_per_s = 2.0 / p50;
  t.samples = 2.0;
  t.wall_s = p50 * static_cast<double>(steps);
  t.dp = 4;
  t.priced = true;
  t.params = 1418996800;
  t.trainable = t.params;
  t.tokens = 32760;
  t.priced_steps = steps;
  t.priced_s = t.wall_s;
  t.flops_coef = 3;
  t.flops_coef_hw = 4;
  t.flops_coef_reason = "full, ckpt on -> 3x/4x";
  t.flops_per_step = 1e15;
  t.tflops = 300;
  t.hw_tflops = 400;
  t.peak_tflops = 989;
  t.mfu = mfu;
  t.hfu = mfu * 4 / 3;
  w.throughput = t;
  w.eta_s = 3600.0 * (10 - static_cast<double>(first) / 100);
  return w;
}

std::string lines(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) out += r + "\n";
  return out;
}

// ---- records reader ----------------------------------------------------------------------------

TEST(RecordsReader, RoundTripsBothKinds) {
  RecordSet set = read_string(
      lines({to_json_line(request(0, 3, 12.5, true)), to_json_line(window(2, 10, 5, 1.5))}));
  ASSERT_EQ(set.requests.size(), 1u);
  ASSERT_EQ(set.windows.size(), 1u);
  EXPECT_TRUE(set.warnings.empty());
  const auto& r = set.requests[0];
  EXPECT_EQ(r.req, 3);
  EXPECT_TRUE(r.warmup);
  EXPECT_DOUBLE_EQ(r.e2e_s, 12.5);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].name, "transformer");  // the writer's order, not alphabetical
  EXPECT_EQ(r.stages[0].count, 10);
  ASSERT_TRUE(r.dit && r.dit->mfu);
  EXPECT_EQ(r.dit->params, 1418996800);
  ASSERT_TRUE(r.peaks);
  EXPECT_EQ(r.peaks->allocated, std::uint64_t{40} << 30);
  const auto& w = set.windows[0];
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.device, 2);
  EXPECT_EQ(w.step_last, 14);
  ASSERT_EQ(w.phases_s.size(), 3u);
  EXPECT_EQ(w.phases_s[1].first, "fwd");
  ASSERT_TRUE(w.throughput && w.throughput->priced);
  EXPECT_EQ(w.throughput->flops_coef_reason, "full, ckpt on -> 3x/4x");
  EXPECT_TRUE(w.eta_s.has_value());
  // Serializing what was read gives the same line back.
  EXPECT_EQ(to_json_line(w), to_json_line(window(2, 10, 5, 1.5)));
}

TEST(RecordsReader, ReadsEveryConformanceExpectation) {
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.size() < 15 || path.substr(path.size() - 15) != ".expected.jsonl") continue;
    RecordSet set;
    ASSERT_NO_THROW(set = read_record_files({path})) << path;
    std::ifstream in(path);
    std::size_t count = 0;
    std::string line;
    while (std::getline(in, line)) count += line.empty() ? 0 : 1;
    EXPECT_EQ(set.requests.size() + set.windows.size(), count) << path;
    EXPECT_TRUE(set.warnings.empty()) << path;
  }
}

TEST(RecordsReader, SkipsATornLastLineWithAWarning) {
  std::string full = to_json_line(request(0, 1, 5.0));
  RecordSet set =
      read_string(full + "\n" + full + "\n" + full.substr(0, full.size() / 2), "run.jsonl");
  EXPECT_EQ(set.requests.size(), 2u);
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("run.jsonl:3:"), std::string::npos) << set.warnings[0];
}

TEST(RecordsReader, ReportsAMalformedLineWithFileAndLine) {
  std::string full = to_json_line(request(0, 1, 5.0));
  try {
    read_string(full + "\n{\"kind\": \"request\", \n" + full + "\n", "run.jsonl");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.file(), "run.jsonl");
    EXPECT_EQ(std::string(e.what()).rfind("run.jsonl:2: ", 0), 0u) << e.what();
  }
}

TEST(RecordsReader, RejectsWrongTypesAndUnknownKinds) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      read_string(text + "\n" + to_json_line(request(0, 1, 5.0)) + "\n");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"kind": "request", "e2e_s": "fast", "stages": {}})").find("e2e_s"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "request", "e2e_s": 1})").find("stages"), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "window"})").find("unknown record kind"), std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
  std::string window = R"({"kind": "train_window", "steps": 2, "step_s_p50": 1, )"
                       R"("step_s_p95": 1, "phases_s": {"fwd": "x"}})";
  EXPECT_NE(error_of(window).find("\"fwd\" must be a number"), std::string::npos)
      << error_of(window);
  EXPECT_NE(error_of(R"({"no": "kind"})").find(":1:"), std::string::npos);
}

TEST(RecordsReader, MissingFileIsAnInputError) {
  EXPECT_THROW(read_record_files({"/nonexistent/records.jsonl"}), InputError);
}

// ---- report ------------------------------------------------------------------------------------

TEST(Report, SummarizesRequestsWithoutWarmup) {
  RecordSet set;
  set.requests = {request(0, 0, 30.0, true), request(0, 1, 10.0), request(0, 2, 12.0),
                  request(0, 3, 14.0)};
  Report report = build_report(set);
  ASSERT_TRUE(report.requests);
  const auto& r = *report.requests;
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.warmup, 1);
  EXPECT_DOUBLE_EQ(r.e2e_p50_s, 12.0);
  EXPECT_DOUBLE_EQ(r.e2e_max_s, 14.0);
  EXPECT_NEAR(r.e2e_p95_s, 13.8, 1e-9);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].name, "transformer");
  EXPECT_NEAR(r.stages[0].mean_ms, 12.0 * 800.0, 1e-6);
  EXPECT_NEAR(r.stages[0].share, 0.8, 1e-9);
  EXPECT_NEAR(r.stages[1].share, 0.15, 1e-9);
  EXPECT_DOUBLE_EQ(r.stages[0].calls, 10.0);
  ASSERT_TRUE(r.tflops && r.mfu);
  EXPECT_DOUBLE_EQ(*r.tflops, 400.0);
  EXPECT_FALSE(report.training);
  EXPECT_TRUE(report.stragglers.empty());
  std::string text = format_report(report);
  EXPECT_NE(text.find("Requests: 3 measured (1 warmup excluded)"), std::string::npos) << text;
  EXPECT_NE(text.find("transformer"), std::string::npos);
}

TEST(Report, FindsStragglersAcrossRanks) {
  RecordSet set;
  double p50[] = {1.0, 1.01, 1.049, 1.2};
  for (int rank = 0; rank < 4; ++rank) {
    set.windows.push_back(window(rank, 0, 10, p50[rank]));
    set.windows.push_back(window(rank, 10, 10, p50[rank]));
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.training);
  EXPECT_EQ(report.training->steps, 20);
  EXPECT_EQ(report.training->windows, 8);
  ASSERT_EQ(report.ranks.size(), 4u);
  ASSERT_TRUE(report.rank_median_s);
  EXPECT_NEAR(*report.rank_median_s, (1.01 + 1.049) / 2, 1e-12);
  EXPECT_EQ(report.stragglers, std::vector<int>{3});
  // Samples/s: 2 samples per step at p50 seconds a step, per rank; global is dp times that.
  ASSERT_TRUE(report.training->samples_per_s && report.training->samples_per_s_global);
  EXPECT_NEAR(*report.training->samples_per_s_global, *report.training->samples_per_s * 4, 1e-9);
  ASSERT_TRUE(report.ranks[0].samples_per_s);
  EXPECT_NEAR(*report.ranks[0].samples_per_s, 2.0, 1e-9);
  // Phase shares follow the windows' phases.
  ASSERT_EQ(report.training->phase_share.size(), 3u);
  EXPECT_EQ(report.training->phase_share[2].first, "bwd");
  EXPECT_NEAR(report.training->phase_share[2].second, 0.6, 1e-9);
  ASSERT_TRUE(report.training->eta_s);
  EXPECT_NEAR(*report.training->eta_s, 3600.0 * 9.9, 1e-6);  // the latest window's
  std::string text = format_report(report);
  EXPECT_NE(text.find("Stragglers: rank 3"), std::string::npos) << text;
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["stragglers"], Json::array({3}));
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["training"]["steps"], 20);
  EXPECT_TRUE(j["requests"].is_null());
}

// The report lists phases in the engine's order (its phase table), whatever order the windows
// name them in: vae_dec sits between vae_enc and text_encoder, never after "other" (as it did
// when the report kept a copy of the order that lacked it).
TEST(Report, PhasesInTheEnginesOrderVaeDecodeIncluded) {
  RecordSet set;
  TrainWindowRecord w = window(0, 0, 10, 2.0);
  w.phases_s = {{"other", 0.1}, {"vae_dec", 0.2}, {"fwd", 0.6}, {"text_encoder", 0.05},
                {"vae_enc", 0.3}, {"data", 0.1}};
  set.windows.push_back(w);
  Report report = build_report(set);
  std::vector<std::string> order;
  for (const auto& [name, seconds] : report.training->phase_s) order.push_back(name);
  EXPECT_EQ(order, (std::vector<std::string>{"data", "vae_enc", "vae_dec", "text_encoder", "fwd",
                                             "other"}));
  std::string text = format_report(report);
  EXPECT_LT(text.find("  vae_dec"), text.find("  other"));
}

TEST(Report, NoStragglersWhenRanksAgree) {
  RecordSet set;
  for (int rank = 0; rank < 3; ++rank) set.windows.push_back(window(rank, 0, 10, 2.0));
  Report report = build_report(set);
  EXPECT_TRUE(report.stragglers.empty());
  EXPECT_NE(format_report(report).find("Stragglers: none"), std::string::npos);
}

TEST(Report, InferenceOnlyRunsCompareRanksByLatency) {
  RecordSet set;
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 0; i < 3; ++i) set.requests.push_back(request(rank, i, rank == 2 ? 12.0 : 10.0));
  }
  Report report = build_report(set);
  ASSERT_EQ(report.ranks.size(), 3u);
  EXPECT_EQ(report.ranks[2].requests, 3);
  EXPECT_EQ(report.stragglers, std::vector<int>{2});
  EXPECT_EQ(report.requests->count, 9);
}

// DDP: every rank's step lasts 1.5s; rank 1 loads data 0.5s longer and the others wait it out in
// the backward's all-reduce. Step times agree, phases do not.
RecordSet synchronized_ranks() {
  RecordSet set;
  for (int rank = 0; rank < 4; ++rank) {
    for (int first : {0, 10}) {
      TrainWindowRecord w = window(rank, first, 10, 1.5);
      bool slow = rank == 1;
      w.phases_s = {{"data", slow ? 0.6 : 0.1}, {"fwd", 0.3}, {"bwd", slow ? 0.6 : 1.1}};
      set.windows.push_back(w);
    }
  }
  return set;
}

TEST(Report, NamesTheRankWhosePhasesRunLongInASynchronizedJob) {
  RecordSet set = synchronized_ranks();
  Report report = build_report(set);
  EXPECT_EQ(report.stragglers, std::vector<int>{1});
  EXPECT_EQ(report.straggler_phases, std::vector<std::string>{"data"});
  ASSERT_TRUE(report.ranks[1].excess_s && report.ranks[0].excess_s);
  EXPECT_NEAR(*report.ranks[1].excess_s, 0.5, 1e-9);
  EXPECT_NEAR(*report.ranks[0].excess_s, 0.0, 1e-9);
  std::string text = format_report(report);
  EXPECT_NE(text.find("Stragglers: rank 1 (1.500s, +0.500s above the ranks' medians, most in "
                      "data) against the median 1.500s"),
            std::string::npos)
      << text;
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["stragglers"], Json::array({1}));
  EXPECT_EQ(j["straggler_phases"], Json::array({"data"}));
  EXPECT_NEAR(j["ranks"][1]["phases_s"]["data"].get<double>(), 0.6, 1e-9);
  EXPECT_NEAR(j["ranks"][1]["excess_s"].get<double>(), 0.5, 1e-9);
  // The HTML draws every rank's phases side by side and marks the straggler.
  std::string html = report_html(report, set);
  EXPECT_NE(html.find("<title>rank 1 (straggler) data: 0.6</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>rank 0 bwd: 1.1</title>"), std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 1, straggler, mean per step)"),
            std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 3, mean per step)"), std::string::npos);
}

TEST(RecordsReader, ReadsTheCrossRankView) {
  TrainWindowRecord w = window(0, 0, 10, 1.5);
  CrossRankView v;
  v.step_s_p50 = {1.5, 1.5, 1.49, 1.51};
  v.excess_s = {0.0, 0.5, 0.01, 0.0};
  v.median_s = 1.5;
  v.min_rank = 2;
  v.max_rank = 3;
  v.stragglers = {1};
  v.straggler_phases = {"data"};
  v.samples_per_s = 2.5;
  v.peak_alloc = std::make_pair(3, std::uint64_t{70} << 30);
  v.exchange_s = 0.0004;
  w.xrank = v;
  std::string line = to_json_line(w);
  Json j = Json::parse(line);
  EXPECT_EQ(j["xrank"]["min"], Json({{"rank", 2}, {"step_s_p50", 1.49}}));
  EXPECT_EQ(j["xrank"]["max"], Json({{"rank", 3}, {"step_s_p50", 1.51}}));
  EXPECT_TRUE(j["xrank"]["tflops"].is_null());
  RecordSet set = read_string(line + "\n");
  ASSERT_EQ(set.windows.size(), 1u);
  ASSERT_TRUE(set.windows[0].xrank);
  EXPECT_EQ(set.windows[0].xrank->stragglers, std::vector<int>{1});
  EXPECT_EQ(to_json_line(set.windows[0]), line);
  Json bad = j;
  bad["xrank"]["stragglers"] = "1";
  EXPECT_THROW(read_string(bad.dump() + "\n"), InputError);
}

TEST(Report, ComparesTwoRunsWithDirection) {
  RecordSet a, b;
  a.windows = {window(0, 0, 10, 2.0, 0.40)};
  b.windows = {window(0, 0, 10, 1.5, 0.50)};
  a.requests = {request(0, 0, 10.0)};
  b.requests = {request(0, 0, 10.01)};
  auto changes = compare_reports(build_report(a), build_report(b));
  auto find = [&](const std::string& name) {
    auto it = std::find_if(changes.begin(), changes.end(),
                           [&](const MetricChange& c) { return c.name == name; });
    EXPECT_NE(it, changes.end()) << name;
    return it == changes.end() ? MetricChange{} : *it;
  };
  EXPECT_EQ(find("training.step_p50_s").direction, "better");
  EXPECT_NEAR(*find("training.step_p50_s").change, -0.25, 1e-9);
  EXPECT_EQ(find("training.mfu").direction, "better");
  EXPECT_EQ(find("training.samples_per_s").direction, "better");
  EXPECT_EQ(find("requests.e2e_p50_s").direction, "same");
  std::string text = format_comparison("a.jsonl", "b.jsonl", changes);
  EXPECT_NE(text.find("training.step_p50_s"), std::string::npos);
  Json j = Json::parse(comparison_json("a.jsonl", "b.jsonl", changes));
  EXPECT_EQ(j["metrics"].size(), changes.size());

  // Slower the other way round.
  auto reverse = compare_reports(build_report(b), build_report(a));
  for (const auto& c : reverse) {
    if (c.name == "training.step_p50_s") EXPECT_EQ(c.direction, "worse");
  }
}

TEST(Report, HtmlIsSelfContainedWithItsCharts) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 5; ++i) set.windows.push_back(window(rank, i * 10, 10, 1.0 + 0.1 * i));
  }
  set.requests = {request(0, 0, 10.0, true), request(0, 1, 9.0)};
  set.requests[1].stages[0].name = "<script>";
  Report report = build_report(set, {"a&b.jsonl"});
  std::string html = report_html(report, set);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* title : {"Step time over steps", "Phase breakdown per window", "MFU per window",
                            "End-to-end time per request"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto p = html.find(s); p != std::string::npos; p = html.find(s, p + 1)) ++n;
    return n;
  };
  // Step time, phases per rank, phases per window of each of the two ranks, MFU, requests.
  EXPECT_EQ(count("<svg"), 6u);
  EXPECT_EQ(count("</svg>"), 6u);
  EXPECT_NE(html.find("Phase breakdown per rank (mean per step)"), std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 1, mean per step)"), std::string::npos);
  EXPECT_EQ(count("<script>"), 0u);  // names are escaped
  EXPECT_NE(html.find("a&amp;b.jsonl"), std::string::npos);
  EXPECT_EQ(html.find("http://", 0), html.find("http://www.w3.org/2000/svg"));  // no fetches
}

TEST(Report, SmallNumbersReadInUnitsThatFit) {
  // A CPU run: a small model, GFLOPS against a measured peak, a few seconds left, some calls
  // cached.
  RecordSet set;
  set.requests = {request(0, 0, 1.0), request(0, 1, 1.0)};
  for (auto& r : set.requests) {
    r.dit->params = 364512;
    r.dit->tflops = 0.0123;
    r.dit->peak_tflops = 0.3568;
    r.dit->mfu = 0.0123 / 0.3568;
    r.dit->peak_source = PeakSource::kMeasured;
    r.dit->dtype = Dtype::kFp32;
  }
  set.requests[1].dit->skipped_fwd = 4;
  set.requests[1].dit->effective_fwd = 5.5;
  set.windows = {window(0, 0, 10, 0.02)};
  auto& t = *set.windows[0].throughput;
  t.params = 25300000;
  t.trainable = 1200000;
  t.tflops = 0.0004;
  t.peak_tflops = 1.38;
  t.peak_source = PeakSource::kMeasured;
  set.windows[0].eta_s = 45.0;
  Report report = build_report(set);
  std::string text = format_report(report);
  EXPECT_NE(text.find("  DiT 364.5K params  12.3 GFLOPS  MFU 3.4% of 356.8 GFLOPS per device "
                      "(measured, fp32)"),
            std::string::npos)
      << text;
  // Request 0 computed its 10 calls whole, request 1 came to 5.5 of its 10.
  EXPECT_NE(text.find("cached forwards: 4 of 20 transformer calls skipped, 15.5 full forwards"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  DiT 25.3M params  400.0 MFLOPS"), std::string::npos) << text;
  EXPECT_NE(text.find("of 1.4 TFLOPS per device (measured)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  trainable 1.2M params"), std::string::npos) << text;
  EXPECT_NE(text.find("  ETA 45s"), std::string::npos) << text;
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["requests"]["peak_measured"], true);
  EXPECT_EQ(j["requests"]["params"], 364512);
  EXPECT_EQ(j["requests"]["skipped_fwd"], 4);
  EXPECT_EQ(j["training"]["peak_tflops_per_device"], 1.38);
  EXPECT_EQ(j["training"]["dtype"], "bf16");

  // Long ETAs stay in hours, mid ones read in minutes; big rates stay in TFLOPS.
  set.windows[0].eta_s = 5400.0;
  EXPECT_NE(format_report(build_report(set)).find("  ETA 90.0 min"), std::string::npos);
  set.windows[0].eta_s = 36000.0;
  EXPECT_NE(format_report(build_report(set)).find("  ETA 10.0h"), std::string::npos);
  RecordSet gpu;
  gpu.requests = {request(0, 0, 1.0)};
  EXPECT_NE(format_report(build_report(gpu))
                .find("  DiT 1.42B params  400.0 TFLOPS  MFU 40.4% of "
                      "989.0 TFLOPS per device\n"),
            std::string::npos)
      << format_report(build_report(gpu));
}

TEST(Report, HtmlStepTicksAreWholeNumbers) {
  // Two windows of two steps: their middles are 0.5 and 2.5; ticks must not be.
  RecordSet set;
  set.windows = {window(0, 0, 2, 1.0), window(0, 2, 2, 1.1)};
  std::string html = report_html(build_report(set), set);
  // The x axis row of the line charts (320 high, 50 below the plot, labels 16 under it).
  const std::string row = "y=\"286\" class=\"axis\" text-anchor=";
  std::size_t ticks = 0;
  for (std::size_t p = html.find(row); p != std::string::npos; p = html.find(row, p + 1)) {
    std::size_t open = html.find('>', p) + 1;
    std::string label = html.substr(open, html.find('<', open) - open);
    if (label.find('-') != std::string::npos) continue;  // a bar chart's window label ("0-1")
    ++ticks;
    EXPECT_EQ(label.find('.'), std::string::npos) << label;
  }
  EXPECT_GE(ticks, 4u);  // 0..3 on each of two charts, at least
}

// ---- chrome trace ------------------------------------------------------------------------------

Json trace_of(const std::vector<std::string>& paths) {
  TraceBuilder builder;
  for (const auto& path : paths) {
    std::ifstream in(path);
    builder.add_script(in, path);
  }
  Json j = Json::parse(builder.json());
  EXPECT_EQ(static_cast<std::int64_t>(j["traceEvents"].size()), builder.event_count());
  return j;
}

std::vector<Json> events_of(const Json& trace, const std::string& ph, const std::string& cat) {
  std::vector<Json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

TEST(ChromeTrace, InferenceRequestsEncloseTheirStages) {
  Json trace = trace_of({case_path("inference-1-00.events.jsonl")});
  auto requests = events_of(trace, "X", "request");
  auto stages = events_of(trace, "X", "stage");
  // A nested pipeline call is folded into the outer request, as the engine does.
  EXPECT_EQ(requests.size(), 3u);
  EXPECT_FALSE(stages.empty());
  for (const auto& s : stages) {
    if (s["args"].contains("outside_request")) continue;
    double t0 = s["ts"], t1 = t0 + s["dur"].get<double>();
    bool enclosed = std::any_of(requests.begin(), requests.end(), [&](const Json& r) {
      double r0 = r["ts"], r1 = r0 + r["dur"].get<double>();
      return r["tid"] == s["tid"] && t0 >= r0 - 1e-3 && t1 <= r1 + 1e-3;
    });
    EXPECT_TRUE(enclosed) << s.dump();
  }
  EXPECT_FALSE(events_of(trace, "C", "").empty());  // memory peaks from request_end
  EXPECT_FALSE(events_of(trace, "M", "").empty());
}

TEST(ChromeTrace, TrainingStepsAndPhases) {
  std::string path = case_path("training-2-02.events.jsonl");
  Json trace = trace_of({path});
  std::ifstream in(path);
  std::string line;
  std::size_t phases = 0, optimizer = 0, clips = 0;
  while (std::getline(in, line)) {
    if (line.find("\"ev\": \"phase\"") != std::string::npos) ++phases;
    if (line.find("\"ev\": \"optimizer_step\"") != std::string::npos) ++optimizer;
    if (line.find("\"ev\": \"clip\"") != std::string::npos) ++clips;
  }
  EXPECT_EQ(events_of(trace, "X", "phase").size(), phases);
  EXPECT_EQ(events_of(trace, "X", "optimizer").size(), optimizer);
  EXPECT_EQ(events_of(trace, "X", "clip").size(), clips);
  auto steps = events_of(trace, "X", "step");
  ASSERT_FALSE(steps.empty());
  // Steps follow one another without overlap.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    EXPECT_GE(steps[i]["ts"].get<double>() + 1e-3,
              steps[i - 1]["ts"].get<double>() + steps[i - 1]["dur"].get<double>());
  }
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e.contains("pid") && e.contains("tid") && e["ts"].is_number());
    }
  }
}

TEST(ChromeTrace, OneProcessPerRankAndATrackPerThread) {
  std::string script =
      R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}, "device": null, "rank": 1, "world_size": 2})"
      "\n"
      R"({"ev": "request_begin", "t": 1.0, "thread": 3})"
      "\n"
      R"({"ev": "stage", "name": "transformer", "t0": 1.1, "t1": 1.5, "device_ms": null})"
      "\n"
      R"({"ev": "request_end", "t": 2.0, "peak_alloc_bytes": 1073741824})"
      "\n"
      R"({"ev": "memory", "peak_alloc_bytes": 2147483648, "peak_reserved_bytes": 4294967296})"
      "\n";
  TraceBuilder builder;
  std::istringstream in(script);
  builder.add_script(in, "live.rank1");
  Json trace = Json::parse(builder.json());
  auto requests = events_of(trace, "X", "request");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["pid"], 1);
  EXPECT_EQ(requests[0]["tid"], 4);
  EXPECT_DOUBLE_EQ(requests[0]["ts"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(requests[0]["dur"].get<double>(), 1e6);
  bool named = false;
  for (const auto& e : events_of(trace, "M", "")) {
    if (e["name"] == "thread_name" && e["tid"] == 4) named = e["args"]["name"] == "thread 3";
  }
  EXPECT_TRUE(named);
  auto counters = events_of(trace, "C", "");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_DOUBLE_EQ(counters[1]["args"]["peak_reserved_GiB"].get<double>(), 4.0);
}

TEST(ChromeTrace, ErrorsNameTheLine) {
  auto line_of = [](const std::string& script) {
    TraceBuilder builder;
    std::istringstream in(script);
    try {
      builder.add_script(in, "x");
    } catch (const ScriptError& e) {
      return e.line();
    }
    return 0;
  };
  std::string config = R"({"ev": "config", "env": {}})";
  EXPECT_EQ(line_of(R"({"ev": "request_begin", "t": 1})"), 1);
  EXPECT_EQ(line_of(config + "\n\n{broken\n"), 3);  // a whole line: an error
  EXPECT_EQ(line_of(config + "\n\n{broken"), 0);    // torn (no newline): skipped
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "stage", "name": "x", "t0": "a", "t1": 1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "teleport", "t": 1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "request_begin", "t": 1, "thread": -1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + config), 2);
}

TEST(ChromeTrace, AcceptsEveryConformanceScript) {
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.find(".events.jsonl") == std::string::npos) continue;
    TraceBuilder builder;
    std::ifstream in(path);
    EXPECT_NO_THROW(builder.add_script(in, path)) << path;
    EXPECT_NO_THROW((void)Json::parse(builder.json())) << path;
  }
}

// The first two complete events of one track that overlap without one holding the other, or ""
// when every slice nests (how Perfetto and chrome://tracing stack a track's slices).
std::string nesting_problem(const Json& trace) {
  struct Slice {
    double ts, end;
    std::string name;
  };
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    double ts = e["ts"].get<double>();
    tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
        Slice{ts, ts + e["dur"].get<double>(), e["name"].get<std::string>()});
  }
  constexpr double kSlack = 1e-3;  // microseconds: a nanosecond of rounding
  for (auto& [track, slices] : tracks) {
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
    });
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.ts + kSlack) open.pop_back();
      if (!open.empty() && s.end > open.back()->end + kSlack) {
        return "pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) +
               ": \"" + s.name + "\" [" + std::to_string(s.ts) + ", " + std::to_string(s.end) +
               "] overlaps \"" + open.back()->name + "\" [" + std::to_string(open.back()->ts) +
               ", " + std::to_string(open.back()->end) + "]";
      }
      open.push_back(&s);
    }
  }
  return "";
}

Json trace_of(const std::string& path) {
  TraceBuilder builder;
  std::ifstream in(path);
  builder.add_script(in, path);
  return Json::parse(builder.json());
}

TEST(ChromeTrace, EverySliceNestsInEveryConformanceScript) {
  int scripts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.find(".events.jsonl") == std::string::npos) continue;
    ++scripts;
    EXPECT_EQ(nesting_problem(trace_of(path)), "") << path;
  }
  EXPECT_GT(scripts, 60);
}

// A live run's trace: requests served by two threads at once, and a training loop whose optimizer
// step runs inside its micro-step (so the step closes before the micro-step is left).
TEST(ChromeTrace, EverySliceNestsInALiveTrace) {
  std::string path = ::testing::TempDir() + "vxperf-nesting-" + std::to_string(::getpid());
  std::filesystem::remove(path);
  EngineOptions options;
  options.settings.level = 1;
  options.settings.every = 2;
  options.settings.trace_path = path;
  options.log = [](std::string_view) {};
  Engine engine(std::move(options));
  auto serve = [&engine] {
    for (int r = 0; r < 20; ++r) {
      RequestScope request(engine);
      { StageScope s(kTextEncoder); }
      for (int i = 0; i < 3; ++i) {
        StageScope s(kTransformer, 1024, 1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      { StageScope s(kVaeDecode); }
    }
  };
  std::thread a(serve), b(serve);
  Trainer& trainer = engine.trainer();
  int optimizer = 0;
  for (int step = 0; step < 6; ++step) {
    for (int micro = 0; micro < 2; ++micro) {
      MicroStep m(&trainer);
      { ModelCall fwd(Phase::kForward, 1024, 1, &trainer); }
      { Backward bwd(&trainer); }
      if (micro == 1) {
        Clip clip(&trainer);
      }
      OptimizerStep opt(&optimizer, micro == 1, &trainer);
    }
  }
  a.join();
  b.join();
  engine.shutdown();
  Json trace = trace_of(path);
  EXPECT_EQ(nesting_problem(trace), "");
  // Each serving thread has a track of its own.
  std::set<std::string> threads;
  int requests = 0, micro_steps = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["cat"] == "request") ++requests;
    if (e["ph"] == "X" && e["cat"] == "micro") ++micro_steps;
  }
  EXPECT_EQ(requests, 40);
  EXPECT_EQ(micro_steps, 12);
  EXPECT_EQ(threads.size(), 3u);  // two request threads and training
  EXPECT_EQ(threads.count("training"), 1u);
}

// ---- flops -------------------------------------------------------------------------------------

TEST(Flops, PresetParameterCountsAreExact) {
  EXPECT_EQ(dit_params(*dit_preset("wan2.1-t2v-1.3b")), 1418996800);
  EXPECT_EQ(dit_params(*dit_preset("wan2.1-t2v-14b")), 14288491584);
  EXPECT_FALSE(dit_preset("wan2.2").has_value());
  EXPECT_EQ(dit_preset_names().size(), 2u);
}

TEST(Flops, Tokens) {
  EXPECT_EQ(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 1280, 720, 81).tokens, 75600);
  LatentShape s = dit_tokens(*dit_preset("wan2.1-t2v-1.3b"), 832, 480, 81);
  EXPECT_EQ(s.frames, 21);
  EXPECT_EQ(s.height, 60);
  EXPECT_EQ(s.width, 104);
  EXPECT_EQ(s.tokens, 32760);
  EXPECT_THROW(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 8, 8, 1), std::invalid_argument);
  EXPECT_THROW(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 0, 720, 81), std::invalid_argument);
}

TEST(Flops, ForwardSplitAndRequest) {
  FlopsQuery q;
  q.width = 832;
  q.height = 480;
  q.frames = 81;
  q.steps = 50;
  q.peak_tflops = 989.0;
  q.mfu = 0.5;
  FlopsEstimate e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_NEAR(e.flops_per_forward / 2.9388e14, 1.0, 1e-4);
  EXPECT_DOUBLE_EQ(e.flops_linear, 2.0 * 1418996800.0 * 32760.0);
  EXPECT_DOUBLE_EQ(e.flops_self_attn, 4.0 * 32760.0 * 32760.0 * 30 * 1536);
  EXPECT_DOUBLE_EQ(e.flops_cross_attn, 4.0 * 32760.0 * 512 * 30 * 1536);
  EXPECT_NEAR(e.flops_linear + e.flops_self_attn + e.flops_cross_attn, e.flops_per_forward, 1e3);
  EXPECT_NEAR(e.attention_share, (e.flops_self_attn + e.flops_cross_attn) / e.flops_per_forward,
              1e-12);
  EXPECT_EQ(e.forwards_per_request, 100);  // CFG doubles the forwards
  EXPECT_DOUBLE_EQ(e.flops_per_request, e.flops_per_forward * 100);
  ASSERT_TRUE(e.ideal_s && e.at_mfu_s);
  EXPECT_NEAR(*e.ideal_s, e.flops_per_request / 989e12, 1e-9);
  EXPECT_NEAR(*e.at_mfu_s, *e.ideal_s * 2, 1e-9);

  Json j = Json::parse(flops_json(*dit_preset("wan2.1-t2v-1.3b"), q, e));
  for (const char* key : {"params", "tokens", "flops_per_forward", "attention_share"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["params"], 1418996800);
  EXPECT_EQ(j["tokens"], 32760);

  q.cfg = false;
  q.batch = 2;
  q.peak_tflops.reset();
  e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_EQ(e.forwards_per_request, 100);
  EXPECT_FALSE(e.ideal_s.has_value());
}

TEST(Flops, DensityAndSkipRatioPriceExactly) {
  FlopsQuery q;
  q.width = 832;
  q.height = 480;
  q.frames = 81;
  q.steps = 50;
  FlopsEstimate full = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  q.density = 0.5;
  q.skip_ratio = 0.3;
  FlopsEstimate e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_EQ(e.flops_linear, full.flops_linear);
  EXPECT_EQ(e.flops_self_attn, full.flops_self_attn * 0.5);
  EXPECT_EQ(e.flops_cross_attn, full.flops_cross_attn);  // against the text: dense
  EXPECT_EQ(e.forwards_per_request, 100);
  EXPECT_EQ(e.computed_forwards, 100 * (1.0 - 0.3));
  EXPECT_EQ(e.flops_per_request, e.flops_per_forward * e.computed_forwards);
  Json j = Json::parse(flops_json(*dit_preset("wan2.1-t2v-1.3b"), q, e));
  EXPECT_EQ(j["attn_density"], 0.5);
  EXPECT_EQ(j["skip_ratio"], 0.3);
  EXPECT_EQ(j["dtype"], "bf16");
}

}  // namespace
}  // namespace vxperf::analysis
