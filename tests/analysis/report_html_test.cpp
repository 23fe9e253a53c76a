// The report page: heatmaps at a thousand ranks, denoising steps from a log and from a trace, the
// comparison page, units that fit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analysis/units.h"
#include "analysis_records.h"
#include "test_dir.h"
#include "vxperf/event_script.h"
#include "vxperf/report.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The numbers a heatmap is drawn from, as the page embeds them.
Json heatmap_data(const std::string& html, const std::string& id) {
  std::string open = "<script type=\"application/json\" id=\"" + id + "-data\">";
  auto at = html.find(open);
  if (at == std::string::npos) return nullptr;
  at += open.size();
  return Json::parse(html.substr(at, html.find("</script>", at) - at));
}

class TempDir {
 public:
  TempDir() { path_ = testing::fresh_test_dir("vxperf-html"); }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

TEST(ReportHtml, HeatmapsStayReadableAtAThousandRanks) {
  // 1024 ranks, 3 windows; rank 513 spends 1 s more per step loading data in the second.
  RecordSet set;
  for (int rank = 0; rank < 1024; ++rank) {
    for (int i = 0; i < 3; ++i) {
      TrainWindowRecord w = window(rank, i * 10, 10, 1.0);
      if (rank == 513 && i == 1) {
        w.phases_s[0].second += 1.0;
        w.step_s_p50 += 1.0;
      }
      set.windows.push_back(w);
    }
  }
  Report report = build_report(set);
  ASSERT_EQ(report.stragglers, std::vector<int>{513});
  std::string html = report_html(report, set);

  Json excess = heatmap_data(html, "heat-excess");
  ASSERT_TRUE(excess.is_object());
  // Four ranks a row: 256 rows, each cell the largest of its band, with the rank it came from.
  ASSERT_EQ(excess["rows"].size(), 256u);
  ASSERT_EQ(excess["cols"].size(), 3u);
  EXPECT_EQ(excess["rows"][128], "ranks 512-515");
  EXPECT_EQ(excess["cols"][1], "10-19");
  EXPECT_EQ(excess["banded"], true);
  EXPECT_EQ(excess["unit"], "s");
  EXPECT_NEAR(excess["v"][128 * 3 + 1].get<double>(), 1.0, 1e-3);
  EXPECT_EQ(excess["who"][128 * 3 + 1], 513);
  for (std::size_t i = 0; i < excess["v"].size(); ++i) {
    if (i != 128 * 3 + 1) EXPECT_LT(excess["v"][i].get<double>(), 1e-3) << i;
  }
  // The legend marks the straggler margin: 5% of the median step.
  EXPECT_NEAR(excess["mark"].get<double>(), 0.05, 1e-9);
  Json step = heatmap_data(html, "heat-step");
  ASSERT_TRUE(step.is_object());
  EXPECT_NEAR(step["v"][128 * 3 + 1].get<double>(), 2.0, 1e-3);
  EXPECT_NEAR(step["lo"].get<double>(), 1.0, 1e-3);

  // Lines: the median across ranks, the band of all of them, the straggler's own.
  EXPECT_NE(html.find("median across ranks"), std::string::npos);
  EXPECT_NE(html.find("lowest to highest rank"), std::string::npos);
  EXPECT_NE(html.find("rank 513 p50 (straggler)"), std::string::npos);
  // Bars for the 64 ranks with the most excess, not 1024; phase charts for 8 ranks and the
  // straggler.
  EXPECT_NE(html.find("Phase breakdown per rank (mean per step, the 64 ranks with the most "
                      "excess)"),
            std::string::npos);
  EXPECT_NE(html.find("rank 513 (straggler)"), std::string::npos);
  EXPECT_EQ(count(html, "Phase breakdown per window ("), 9u);
  EXPECT_NE(html.find("1015 more ranks"), std::string::npos);
  // The ranks' table scrolls, and its straggler row stands out.
  EXPECT_NE(html.find("<div class=\"scroll\">"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"straggler\">"), 1u);
  // Small enough to open: no per-rank lines of 1024 ranks.
  EXPECT_LT(html.size(), 2u << 20) << html.size();
}

// An event script of three requests (the first warmup), the second with a nested call, and its
// level-2 log from replaying it.
std::string denoising_script() {
  std::string s =
      R"({"ev": "config", "env": {"VIDEOX_PERF": "2", "VIDEOX_PERF_WARMUP": "1"}, "device": "NVIDIA H100 80GB HBM3", "rank": 0, "world_size": 1})"
      "\n"
      R"({"ev": "model", "stage": "transformer", "params": 1000000, "attn": null, "text_tokens": 0})"
      "\n";
  double t = 100;
  for (int req = 0; req < 3; ++req) {
    s += "{\"ev\": \"request_begin\", \"t\": " + std::to_string(t) + "}\n";
    if (req == 1) s += "{\"ev\": \"request_begin\", \"t\": " + std::to_string(t) + "}\n";
    for (int step = 0; step < 4; ++step) {
      double host_s = req == 0 && step == 0 ? 0.9 : 0.2;  // warmup's first call compiles
      double device_ms = step == 3 ? 350.0 : 150.0;       // the device's longer on the last
      s += "{\"ev\": \"stage\", \"name\": \"transformer\", \"t0\": " + std::to_string(t) +
           ", \"t1\": " + std::to_string(t + host_s) +
           ", \"device_ms\": " + std::to_string(device_ms) + ", \"tokens\": 100}\n";
      t += host_s + 0.01;
    }
    s += "{\"ev\": \"stage\", \"name\": \"vae_dec\", \"t0\": " + std::to_string(t) +
         ", \"t1\": " + std::to_string(t + 0.5) + ", \"device_ms\": 400}\n";
    t += 0.6;
    if (req == 1) s += "{\"ev\": \"request_end\", \"t\": " + std::to_string(t) + "}\n";
    s += "{\"ev\": \"request_end\", \"t\": " + std::to_string(t) + "}\n";
  }
  return s + "{\"ev\": \"finish\", \"t\": " + std::to_string(t) + "}\n";
}

struct NoRecords : RecordSink {
  void on_request(const RequestRecord&, const RequestDetail&) override {}
  void on_train_window(const TrainWindowRecord&, const WindowDetail&) override {}
};

TEST(ReportHtml, DenoisingStepsFromATraceAndFromALevel2LogAgree) {
  TempDir dir;
  std::string script = denoising_script();
  std::string log;
  {
    std::istringstream in(script);
    NoRecords records;
    replay(
        in, [&log](std::string_view line) { log += std::string(line) + "\n"; }, records);
  }
  ASSERT_NE(log.find("transformer steps(ms): "), std::string::npos) << log;
  DenoisingSteps from_trace = read_denoising_steps({dir.write("trace.jsonl", script)});
  // Other lines around them, as in a program's stderr.
  DenoisingSteps from_log =
      read_denoising_steps({dir.write("run.log", "loading model\n" + log + "done\n")});
  EXPECT_TRUE(from_trace.warnings.empty());
  EXPECT_TRUE(from_log.warnings.empty());
  ASSERT_EQ(from_trace.requests.size(), 3u);
  ASSERT_EQ(from_log.requests.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto &a = from_trace.requests[i], &b = from_log.requests[i];
    EXPECT_EQ(a.req, static_cast<std::int64_t>(i));
    EXPECT_EQ(b.req, static_cast<std::int64_t>(i));
    EXPECT_EQ(a.warmup, i == 0);
    EXPECT_EQ(b.warmup, i == 0);
    ASSERT_EQ(a.ms.size(), 4u);  // the transformer's calls only
    ASSERT_EQ(b.ms.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(a.ms[k], b.ms[k], 0.05) << i << " " << k;
  }
  // Each call is the larger of its host and device times.
  EXPECT_NEAR(from_trace.requests[0].ms[0], 900.0, 1e-3);
  EXPECT_NEAR(from_trace.requests[1].ms[1], 200.0, 1e-3);
  EXPECT_NEAR(from_trace.requests[1].ms[3], 350.0, 1e-3);

  RecordSet set;
  set.requests = {request(0, 0, 2.0, true), request(0, 1, 1.5), request(0, 2, 1.5)};
  ChartData charts;
  for (const auto& r : set.requests) charts.request(r);
  std::string html = report_html(build_report(set), charts, &from_trace);
  EXPECT_NE(html.find("Transformer calls in order: time of each (warmup dashed)"),
            std::string::npos);
  EXPECT_NE(html.find(">transformer call</text>"), std::string::npos);  // the x axis: calls
  EXPECT_NE(html.find("<title>req#0 (warmup): call 1, 900 ms</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>req#2: call 4, 350 ms</title>"), std::string::npos);
  EXPECT_NE(html.find("stroke-dasharray"), std::string::npos);

  // A file with neither is said, not silently empty.
  DenoisingSteps nothing = read_denoising_steps({dir.write("other.txt", "hello\n{\"a\": 1}\n")});
  EXPECT_TRUE(nothing.requests.empty());
  ASSERT_EQ(nothing.warnings.size(), 1u);
  EXPECT_NE(nothing.warnings[0].find("no transformer calls"), std::string::npos);
  EXPECT_THROW(read_denoising_steps({dir.write("x", "") + ".missing"}), InputError);
}

TEST(ReportHtml, ManyRequestsDrawTheMedianStepAndTheWarmupOnes) {
  DenoisingSteps steps;
  for (int i = 0; i < 30; ++i) {
    DenoisingRequest r{0, i, i < 2, {}};
    for (int k = 0; k < 20; ++k) r.ms.push_back(100.0 + (i < 2 && k == 0 ? 2000.0 : i));
    steps.requests.push_back(r);
  }
  RecordSet set;
  set.requests = {request(0, 0, 2.0)};
  ChartData charts;
  charts.request(set.requests[0]);
  std::string html = report_html(build_report(set), charts, &steps);
  EXPECT_NE(html.find("median of 28 requests"), std::string::npos);
  EXPECT_NE(html.find("fastest to slowest request"), std::string::npos);
  EXPECT_NE(html.find("<title>req#1 (warmup): call 1, 2.10 s</title>"), std::string::npos);
  // The median of requests 2..29 at each call: 100 + 16 ms, on an axis in seconds (the warmup).
  EXPECT_NE(html.find("<title>median of 28 requests: call 3, 28 requests, 0.116 s</title>"),
            std::string::npos);
}

TEST(ReportHtml, TheComparisonIsAPageToo) {
  RecordSet a, b;
  for (int i = 0; i < 3; ++i) {
    a.windows.push_back(window(0, i * 10, 10, 2.0, 0.40));
    b.windows.push_back(window(0, i * 10, 10, 1.5, 0.50));
  }
  a.requests = {request(0, 0, 10.0)};
  b.requests = {request(0, 0, 12.0)};
  ChartData ca, cb;
  for (const auto& w : a.windows) ca.window(w);
  for (const auto& w : b.windows) cb.window(w);
  ca.request(a.requests[0]);
  cb.request(b.requests[0]);
  auto changes = compare_reports(build_report(a), build_report(b));
  std::string html = comparison_html("a&.jsonl", "b.jsonl", changes, ca, cb);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("a&amp;.jsonl"), std::string::npos);
  EXPECT_NE(html.find("<td>training.step_p50_s</td><td>2.00 s</td><td>1.50 s</td><td>-25.0%</td>"
                      "<td><span class=\"better\">better</span></td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>requests.e2e_p50_s</td><td>10.0 s</td><td>12.0 s</td><td>+20.0%</td>"
                      "<td><span class=\"worse\">worse</span></td>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>training.step_p50_s: 2.00 s -&gt; 1.50 s (-25.0%, better)</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>training.mfu: 40.0% -&gt; 50.0% (+25.0%, better)</title>"),
            std::string::npos);
  for (const char* title :
       {"Step time over steps (p50, median across ranks)", "MFU per window (median across ranks)",
        "End-to-end time per request, in input order"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  EXPECT_NE(html.find("<title>A: steps 10-19, 2.00 s</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>B: steps 10-19, 1.50 s</title>"), std::string::npos);
}

// The ledger's chart: its parts (kLedgerParts), a color each, a legend in as many rows as it
// needs, labels of two lines, and the axis to the first nice tick above 21 s of data (25 s, not
// 50).
TEST(ReportHtml, TheLedgerChartFitsItsPartsAndItsData) {
  RecordSet set;
  TrainWindowRecord w = window(0, 0, 10, 1.0);
  Ledger l;
  l.steps = 10;
  l.ideal_step_s = 0.8;
  l.startup_s = 2;
  l.setup_s = 1;
  l.productive_s = 8;
  l.first_step_excess_s = 1;
  l.slow_step_excess_s = 0.5;
  l.data_wait_s = 2;
  l.save_s = 1;
  l.restore_s = 0.5;
  l.eval_s = 1;
  l.between_steps_s = 0.5;
  l.lost_progress_s = 1.5;
  l.between_attempts_s = 2;
  l.wall_s = 21;
  l.goodput = 0.4;
  w.ledger = l;
  set.windows.push_back(w);
  std::string html = report_html(build_report(set), set);
  auto at = html.find("Where each rank's loop went");
  ASSERT_NE(at, std::string::npos);
  std::string chart = html.substr(at, html.find("</svg>", at) - at);
  std::set<std::string> fills;
  std::size_t entries = 0;
  for (auto p = chart.find("class=\"axis legend\""); p != std::string::npos;
       p = chart.find("class=\"axis legend\"", p + 1)) {
    ++entries;
    auto fill = chart.rfind("fill=\"", p);
    fills.insert(chart.substr(fill + 6, 7));
  }
  EXPECT_EQ(entries, std::size(kLedgerParts));
  EXPECT_EQ(fills.size(), std::size(kLedgerParts)) << chart;
  // Its grid's labels: 0, 5, ... 25 (s).
  EXPECT_NE(chart.find("text-anchor=\"end\">25</text>"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("text-anchor=\"end\">50</text>"), std::string::npos) << chart;
  // The legend took a second row: the chart is taller than one row's 320.
  auto open = html.rfind("<svg", at);
  EXPECT_NE(html.substr(open, 120).find("height=\"336\""), std::string::npos)
      << html.substr(open, 120);
  EXPECT_NE(chart.find(">rank 0</text>"), std::string::npos);
  EXPECT_NE(chart.find(">goodput 40%</text>"), std::string::npos);
}

TEST(ReportHtml, UnitsThatFit) {
  using units::in_unit;
  EXPECT_EQ(in_unit(0.000250, units::time_unit(0.0005)), "250 us");
  EXPECT_EQ(in_unit(0.0123, units::time_unit(0.5)), "12.3 ms");
  EXPECT_EQ(in_unit(2.5, units::time_unit(2.5)), "2.50 s");
  EXPECT_EQ(in_unit(1800, units::time_unit(1800)), "30.0 min");
  EXPECT_EQ(in_unit(36000, units::time_unit(36000)), "10.0 h");
  EXPECT_EQ(in_unit(60.0 * (1 << 30), units::bytes_unit(80.0 * (1 << 30))), "60.0 GiB");
  EXPECT_EQ(in_unit(512.0 * (1 << 20), units::bytes_unit(900.0 * (1 << 20))), "512 MiB");
  EXPECT_EQ(in_unit(0.404, {100, "%"}), "40.4 %");
  // Charts pick their axis unit from their largest value: a CPU run's steps read in ms.
  RecordSet set;
  for (int i = 0; i < 3; ++i) set.windows.push_back(window(0, i * 10, 10, 0.02));
  std::string html = report_html(build_report(set), set);
  EXPECT_NE(html.find(">time per step (ms)</text>"), std::string::npos);
  EXPECT_NE(html.find("<title>rank 0 p50: steps 0-9, 20.0 ms</title>"), std::string::npos);
  EXPECT_NE(html.find(">peak memory (GiB)</text>"), std::string::npos);
  EXPECT_NE(html.find("p50 20.0 ms, p95 24.0 ms"), std::string::npos);  // the summary table
}

}  // namespace
}  // namespace vxperf::analysis
