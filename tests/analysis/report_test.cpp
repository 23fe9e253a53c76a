// The report: records summarized per run and per rank, its text, JSON and HTML, comparisons.
#include "vxperf/report.h"

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

#include "analysis/report_format.h"
#include "analysis_records.h"
#include "vxperf/event_script.h"
#include "vxperf/vxperf.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

// What the text says of a job's ledger of three ranks: its wall, and its goodput at the end.
std::pair<std::string, std::string> job_line(double wall, double goodput) {
  char head[96], tail[48];
  std::snprintf(head, sizeof head, "  job (3 ranks added, rank-seconds): wall %.3fs = productive",
                wall);
  std::snprintf(tail, sizeof tail, "; goodput %.1f%%; ", 100.0 * goodput);
  return {head, tail};
}

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

// Two requests 100 s apart on each of two data-parallel ranks whose layout no source said: the
// rate is over the span they cover (back to back they would make 360 an hour), and the layout
// says that it follows from the world size.
TEST(Report, SaysTheRateIsOverTheSpanAndWhereTheLayoutCameFrom) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    for (std::int64_t req = 0; req < 2; ++req) {
      RequestRecord r = request(rank, req, 10.0);
      r.world_size = 2;
      r.ts = 100.0 + 100.0 * static_cast<double>(req);
      ParallelLayout p;
      p.dp = 2;
      p.dp_replicate = 2;
      p.group = 1;
      p.dp_rank = rank;
      r.parallel = p;
      set.requests.push_back(r);
    }
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.requests && report.requests->requests_per_hour);
  // Four requests from the first start (90 s) to the last end (200 s).
  EXPECT_NEAR(*report.requests->requests_per_hour, 4 * 3600.0 / 110.0, 1e-9);
  std::string text = format_report(report);
  EXPECT_NE(text.find("  rate     130.9 requests/hour (first start to last end, gaps included)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  layout   dp=2  cp=1  tp=1, 1 rank a request (from the world size)"),
            std::string::npos)
      << text;
}

// Two context-parallel groups of two ranks (dp_rank 0: ranks 0 and 1; dp_rank 1: ranks 2 and 3),
// three requests each: six requests, each as long as its slower rank, its energy the group's.
TEST(Report, AContextParallelRequestCountsOnceWithItsGroupsEnergy) {
  RecordSet set;
  for (int rank = 0; rank < 4; ++rank) {
    for (std::int64_t req = 0; req < 3; ++req) {
      double e2e = 10.0 + static_cast<double>(req) + (rank % 2 == 1 ? 0.5 : 0.0);
      RequestRecord r = request(rank, req, e2e);
      r.world_size = 4;
      r.ts = 1000.0 + 20.0 * static_cast<double>(req + 1) + (rank / 2) * 5.0;
      r.readings->energy_j = 100.0 * (rank + 1);
      ParallelLayout p;
      p.dp = 2;
      p.dp_replicate = 2;
      p.cp = 2;
      p.group = 2;
      p.dp_rank = rank / 2;
      p.from = {{"cp", "diffusers"}};
      r.parallel = p;
      set.requests.push_back(r);
    }
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.requests);
  const auto& r = *report.requests;
  EXPECT_EQ(r.count, 6);
  EXPECT_EQ(r.shared_records, 6);
  EXPECT_DOUBLE_EQ(r.e2e_max_s, 12.5);
  EXPECT_DOUBLE_EQ(r.e2e_mean_s, 11.5);  // each request the slower rank's
  ASSERT_TRUE(r.energy && r.energy->per_unit_j);
  EXPECT_EQ(r.energy->records, 6);
  EXPECT_DOUBLE_EQ(r.energy->energy_j, 3 * (100.0 + 200.0 + 300.0 + 400.0));
  EXPECT_DOUBLE_EQ(*r.energy->per_unit_j, 3 * 1000.0 / 6);
  // First start 1020 - 10.5 (rank 1's first), last end 1065: six requests in 55.5 s.
  ASSERT_TRUE(r.requests_per_hour);
  EXPECT_NEAR(*r.requests_per_hour, 6 * 3600.0 / 55.5, 1e-9);
  ASSERT_TRUE(r.layout);
  EXPECT_EQ(r.layout->group, 2);
  // Each rank's own summary keeps its own records.
  ASSERT_EQ(report.ranks.size(), 4u);
  EXPECT_EQ(report.ranks[1].requests, 3);
  std::string text = format_report(report);
  EXPECT_NE(text.find("Requests: 6 measured"), std::string::npos) << text;
  EXPECT_NE(text.find("  layout   dp=2  cp=2  tp=1, 2 ranks a request (cp: diffusers); 6 records "
                      "of the same requests on other ranks counted with them"),
            std::string::npos)
      << text;
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["requests"]["layout"]["group"], 2);
  EXPECT_EQ(j["requests"]["shared_records"], 6);
  // The same through the records reader, as `vxperf report` reads the files.
  std::string lines;
  for (const auto& q : set.requests) lines += to_json_line(q) + "\n";
  Report again = build_report(read_string(lines));
  ASSERT_TRUE(again.requests);
  EXPECT_EQ(again.requests->count, 6);
  EXPECT_EQ(again.requests->layout->from, (LayoutSources{{"cp", "diffusers"}}));
}

// Time per denoising step beside time per call (#50): a step is all its transformer calls, every
// expert's. Request 1 is Wan2.2-like, 4 steps split over two experts with guidance run as two
// calls (8 calls, 440 ms: 110 ms a step); request 2 batches guidance (2 steps, 2 calls, 60 ms);
// request 3 says no steps. The summary is over the two that said theirs: 6 steps, 500 ms.
TEST(Report, TimePerDenoisingStepBesideTimePerCall) {
  RecordSet set;
  RequestRecord wan = request(0, 0, 1.0);
  wan.stages = {{"transformer", 4, 200.0, 50.0, 0.0, 50.0, 50.0},
                {"transformer_2", 4, 240.0, 60.0, 0.0, 60.0, 60.0},
                {"vae_dec", 1, 100.0, 100.0, 0.0, 100.0, 100.0}};
  wan.denoising_steps = 4;
  RequestRecord batched = request(0, 1, 1.0);
  batched.stages = {{"transformer", 2, 60.0, 30.0, 0.0, 30.0, 30.0}};
  batched.denoising_steps = 2;
  RequestRecord unsaid = request(0, 2, 1.0);
  set.requests = {wan, batched, unsaid};

  // One request's: its calls' time over its steps.
  ASSERT_TRUE(denoising_step_time(wan));
  EXPECT_EQ(denoising_step_time(wan)->calls, 8);
  EXPECT_DOUBLE_EQ(denoising_step_time(wan)->ms_per_step(), 110.0);
  EXPECT_DOUBLE_EQ(denoising_step_time(wan)->calls_per_step(), 2.0);
  EXPECT_FALSE(denoising_step_time(unsaid));
  RequestRecord no_calls = batched;
  no_calls.stages = {{"vae_dec", 1, 100.0, 100.0, 0.0, 100.0, 100.0}};
  EXPECT_FALSE(denoising_step_time(no_calls));  // steps said, but no transformer ran
  EXPECT_NE(format_log_line(wan).find(" | denoising 4 steps, 110ms/step (2 calls each) | "),
            std::string::npos)
      << format_log_line(wan);
  EXPECT_NE(format_log_line(batched).find(" | denoising 2 steps, 30ms/step (1 call each) | "),
            std::string::npos);
  EXPECT_EQ(format_log_line(unsaid).find("denoising"), std::string::npos);

  // The summary, through the records reader as `vxperf report` reads the files.
  std::string lines;
  for (const auto& q : set.requests) lines += to_json_line(q) + "\n";
  for (const Report& report : {build_report(set), build_report(read_string(lines))}) {
    ASSERT_TRUE(report.requests && report.requests->denoising_step);
    const DenoisingStepSummary& d = *report.requests->denoising_step;
    EXPECT_EQ(d.requests, 2);
    EXPECT_DOUBLE_EQ(d.steps, 3.0);
    EXPECT_DOUBLE_EQ(d.mean_ms, 500.0 / 6.0);
    EXPECT_DOUBLE_EQ(d.calls, 10.0 / 6.0);
    std::string text = format_report(report);
    EXPECT_NE(text.find("  denoising step: 3 steps, mean 83.3ms (1.67 calls each); 2 of 3 "
                        "requests said their steps\n"),
              std::string::npos)
        << text;
    Json j = Json::parse(report_json(report));
    EXPECT_EQ(j["requests"]["denoising_step"]["requests"], 2);
    EXPECT_DOUBLE_EQ(j["requests"]["denoising_step"]["mean_ms"].get<double>(), 500.0 / 6.0);
    EXPECT_DOUBLE_EQ(j["requests"]["denoising_step"]["calls"].get<double>(), 10.0 / 6.0);
    std::string page = report_html(report, ChartData{});
    EXPECT_NE(page.find("3 steps a request, mean 83.3 ms a step (1.67 transformer calls each)"),
              std::string::npos);
    auto metrics = report_metrics(report);
    auto step = std::find_if(metrics.begin(), metrics.end(), [](const Metric& m) {
      return m.name == "requests.denoising_step_ms";
    });
    ASSERT_NE(step, metrics.end());
    EXPECT_DOUBLE_EQ(step->value, 500.0 / 6.0);
  }

  // Without steps said, no form says anything of them.
  RecordSet old;
  old.requests = {unsaid};
  Report report = build_report(old);
  EXPECT_FALSE(report.requests->denoising_step);
  EXPECT_EQ(format_report(report).find("denoising"), std::string::npos);
  EXPECT_FALSE(Json::parse(report_json(report))["requests"].contains("denoising_step"));
  EXPECT_EQ(report_html(report, ChartData{}).find("denoising step"), std::string::npos);
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

// Rank 2's data loading slows by 0.5 s a step from step 10: each of its two slow windows of 10
// steps costs 5 s, all of it in data; NVIDIA Resiliency's scores say it is 2/3 as fast as the
// fastest rank and as its own best.
TEST(Report, WhatAStragglerCost) {
  RecordSet set;
  for (int rank = 0; rank < 4; ++rank) {
    for (std::int64_t first : {0, 10, 20}) {
      TrainWindowRecord w = window(rank, first, 10, 1.0);
      if (rank == 2 && first > 0) {
        w.step_s_p50 = 1.5;
        w.phases_s[0].second += 0.5;  // data
      }
      set.windows.push_back(w);
    }
  }
  Report report = build_report(set);
  const RankSummary& slow = report.ranks[2];
  ASSERT_TRUE(slow.lost_s);
  EXPECT_NEAR(*slow.lost_s, 10.0, 1e-6);
  ASSERT_EQ(slow.lost_phases_s.size(), 1u);
  EXPECT_EQ(slow.lost_phases_s[0].first, "data");
  EXPECT_NEAR(*slow.relative_score, 1.0 / 1.5, 1e-12);
  EXPECT_NEAR(*slow.individual_score, 1.0 / 1.5, 1e-12);
  EXPECT_FALSE(report.ranks[0].lost_s);
  EXPECT_DOUBLE_EQ(*report.ranks[0].relative_score, 1.0);
  std::string text = format_report(report);
  EXPECT_NE(text.find("Slowest rank's cost: rank 2 10.000s above the ranks' per-phase medians in "
                      "the windows it was slowest in (data 10.000s); scores relative 0.67, "
                      "individual 0.67"),
            std::string::npos)
      << text;
  Json j = Json::parse(report_json(report));
  EXPECT_NEAR(j["ranks"][2]["lost_phases_s"]["data"].get<double>(), 10.0, 1e-6);
}

// Each rank's ledger is its latest window's (by time), whatever order the files gave the windows
// in: a line per rank in the text, the record's object in the JSON. Windows of two runs read
// together are said once per rank.
TEST(Report, EachRanksLedgerIsItsLatestWindows) {
  RecordSet set;
  set.windows.push_back(window(1, 10, 10, 2.0));
  set.windows.back().ts = 20;
  set.windows.push_back(window(1, 0, 10, 2.0));
  set.windows.back().ts = 10;
  set.windows.push_back(window(0, 0, 10, 1.0));
  Report report = build_report(set);
  EXPECT_TRUE(report.warnings.empty());
  set.windows.push_back(window(0, 0, 10, 1.0));  // another run's, read with the first
  set.windows.push_back(window(0, 0, 10, 1.0));
  Report twice = build_report(set);
  ASSERT_EQ(twice.warnings.size(), 1u);
  EXPECT_NE(twice.warnings[0].find("rank 0 has two windows from step 0"), std::string::npos);
  ASSERT_EQ(report.ranks.size(), 2u);
  ASSERT_TRUE(report.ranks[1].ledger);
  EXPECT_EQ(report.ranks[1].ledger->steps, 20);  // steps 0-19, not the 10 read last
  const Ledger& l = *report.ranks[1].ledger;
  std::string text = format_report(report);
  char expected[160];
  std::snprintf(expected, sizeof expected,
                "  rank 1: wall %.3fs = productive %.3fs (20 steps x ideal 1.800s) + first step "
                "4.200s",
                l.wall_s, l.productive_s);
  EXPECT_NE(text.find(expected), std::string::npos) << text;
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["ranks"][1]["ledger"]["steps"], 20);
  EXPECT_DOUBLE_EQ(j["ranks"][1]["ledger"]["goodput"].get<double>(), l.goodput);
  EXPECT_EQ(j["ranks"][0]["ledger"]["steps"], 10);
}

// Every rank's final record runs its ledger to its end; the job's ledger adds the ranks' up in
// rank-seconds (the parts still the wall), with the span from the first start to the last end.
TEST(Report, TheJobsLedgerAddsTheRanksThroughTheirEnds) {
  RecordSet set;
  const double after[] = {2.0, 3.0, 7.0};
  double wall = 0, productive = 0, start = 1e9, finish = 0;
  for (int rank = 0; rank < 3; ++rank) {
    TrainWindowRecord w = window(rank, 0, 10, 1.0 + 0.1 * rank);
    w.ts = 1000 + w.ledger->wall_s;  // every rank began at 1000
    set.windows.push_back(w);
    set.ends.push_back(end_of(w, after[rank]));
    wall += w.ledger->wall_s + after[rank];
    productive += w.ledger->productive_s;
    start = std::min(start, w.ts - w.ledger->wall_s);
    finish = std::max(finish, set.ends.back().ts);
  }
  Report report = build_report(set);
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(report.ranks[static_cast<std::size_t>(rank)].ledger);
    EXPECT_DOUBLE_EQ(report.ranks[static_cast<std::size_t>(rank)].ledger->between_steps_s,
                     after[rank]);
  }
  ASSERT_TRUE(report.job_ledger);
  const JobLedger& job = *report.job_ledger;
  EXPECT_EQ(job.ranks, 3);
  EXPECT_DOUBLE_EQ(job.ledger.wall_s, wall);
  EXPECT_DOUBLE_EQ(job.ledger.productive_s, productive);
  EXPECT_DOUBLE_EQ(job.ledger.between_steps_s, 12.0);
  EXPECT_EQ(job.ledger.steps, 30);
  EXPECT_NEAR(job.ledger.ideal_step_s * 30, productive, 1e-9);
  EXPECT_DOUBLE_EQ(job.ledger.goodput, productive / wall);
  const Ledger& l = job.ledger;
  EXPECT_NEAR(l.startup_s + l.setup_s + l.productive_s + l.first_step_excess_s +
                  l.slow_step_excess_s + l.data_wait_s + l.save_s + l.restore_s + l.eval_s +
                  l.between_steps_s + l.lost_progress_s + l.between_attempts_s,
              l.wall_s, 1e-9);
  ASSERT_TRUE(job.span_s);
  EXPECT_NEAR(*job.span_s, finish - start, 1e-9);
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["ledger"]["ranks"], 3);
  EXPECT_DOUBLE_EQ(j["ledger"]["wall_s"].get<double>(), wall);
  EXPECT_NEAR(j["ledger"]["span_s"].get<double>(), finish - start, 1e-9);
  EXPECT_DOUBLE_EQ(j["ranks"][2]["ledger"]["between_steps_s"].get<double>(), 7.0);
  std::string text = format_report(report);
  auto [head, tail] = job_line(wall, productive / wall);
  EXPECT_NE(text.find(head), std::string::npos) << text;
  EXPECT_NE(text.find(tail), std::string::npos) << text;
  EXPECT_NE(text.find("s from the first rank's start to the last one's end"), std::string::npos);
  std::string html = report_html(report, set);
  EXPECT_NE(html.find(">job, per rank</text>"), std::string::npos);
  // Read back from the lines the records file holds, the final records among them.
  std::vector<std::string> text_lines;
  for (const auto& w : set.windows) text_lines.push_back(to_json_line(w));
  for (const auto& e : set.ends) text_lines.push_back(to_json_line(e));
  RecordSet back = read_string(lines(text_lines));
  EXPECT_EQ(back.ends.size(), 3u);
  Report again = build_report(back);
  ASSERT_TRUE(again.job_ledger);
  EXPECT_NEAR(again.job_ledger->ledger.wall_s, wall, 1e-9);
}

// DDP: the all-reduce evens step times out, so the rank whose data loads slowly scores 0.998 on
// its step; phase by phase its data scores low, and the text names it.
TEST(Report, PhaseScoresNameWhatEvenedStepTimesHide) {
  RecordSet set;
  for (int rank = 0; rank < 4; ++rank) {
    for (int first : {0, 10, 20}) {
      TrainWindowRecord w = window(rank, first, 10, rank == 2 ? 1.002 : 1.0);
      const bool slow = rank == 2;
      // Rank 2's data slows in its last window (0.3 s, then 0.4 s): its own best is 0.3.
      const double data = slow ? (first == 20 ? 0.4 : 0.3) : 0.01;
      w.phases_s = {{"data", data}, {"fwd", 0.3}, {"bwd", slow ? 1.002 - 0.3 - data : 0.69}};
      set.windows.push_back(w);
    }
  }
  Report report = build_report(set);
  const RankSummary& slow = report.ranks[2];
  ASSERT_TRUE(slow.relative_score);
  EXPECT_NEAR(*slow.relative_score, 1.0 / 1.002, 1e-12);
  ASSERT_EQ(slow.phase_scores.size(), 3u);
  EXPECT_EQ(slow.phase_scores[0].phase, "data");
  EXPECT_NEAR(slow.phase_scores[0].relative, 0.01 / 0.3, 1e-6);  // its median window's 0.3 s
  EXPECT_NEAR(slow.phase_scores[0].individual, 0.3 / 0.4, 1e-6);
  EXPECT_EQ(slow.phase_scores[1].phase, "fwd");
  EXPECT_NEAR(slow.phase_scores[1].relative, 1.0, 1e-12);
  EXPECT_NEAR(report.ranks[0].phase_scores[0].relative, 1.0, 1e-12);
  ASSERT_TRUE(report.low_score);
  EXPECT_EQ(report.low_score->rank, 2);
  EXPECT_EQ(report.low_score->phase, "data");
  EXPECT_EQ(report.low_score->kind, "relative");
  EXPECT_NEAR(report.low_score->score, 0.01 / 0.3, 1e-6);
  std::string text = format_report(report);
  EXPECT_NE(text.find("Lowest phase score: rank 2 data relative 0.03 (0.300s/step against the "
                      "fastest rank's 0.010s); its step's 1.00"),
            std::string::npos)
      << text;
  Json j = Json::parse(report_json(report));
  EXPECT_NEAR(j["ranks"][2]["phase_scores"]["data"]["relative"].get<double>(), 0.01 / 0.3, 1e-6);
  EXPECT_NEAR(j["ranks"][2]["relative_score"].get<double>(), 1.0 / 1.002, 1e-12);
  EXPECT_EQ(j["low_score"]["rank"], 2);
  EXPECT_EQ(j["low_score"]["phase"], "data");
  // Ranks that agree phase by phase: nothing named.
  RecordSet even;
  for (int rank = 0; rank < 3; ++rank) even.windows.push_back(window(rank, 0, 10, 1.0));
  EXPECT_FALSE(build_report(even).low_score);
  EXPECT_EQ(format_report(build_report(even)).find("Lowest phase score"), std::string::npos);
}

// The report lists phases in the engine's order (its phase table), whatever order the windows
// name them in: vae_dec sits between vae_enc and text_encoder, never after "other" (as it did
// when the report kept a copy of the order that lacked it).
TEST(Report, PhasesInTheEnginesOrderVaeDecodeIncluded) {
  RecordSet set;
  TrainWindowRecord w = window(0, 0, 10, 2.0);
  w.phases_s = {{"other", 0.1},         {"vae_dec", 0.2}, {"fwd", 0.6},
                {"text_encoder", 0.05}, {"vae_enc", 0.3}, {"data", 0.1}};
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

// DDP with a main-process-only validation: rank 0 evaluates 2 s between two steps, outside its
// steps; rank 1 waits for it in its next step's collective, so rank 1 reads as the straggler. The
// report names rank 0's time outside its steps beside the verdict.
TEST(Report, SaysWhenAStragglerMayHaveWaitedForAnotherRanksEvaluation) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    TrainWindowRecord w = window(rank, 0, 10, rank == 1 ? 1.7 : 1.5);
    Ledger l;
    l.eval_s = rank == 0 ? 2.0 : 0.0;
    l.save_s = rank == 0 ? 0.5 : 0.0;
    w.ledger = l;
    set.windows.push_back(w);
  }
  Report report = build_report(set);
  ASSERT_EQ(report.stragglers, std::vector<int>{1});
  const std::string note =
      "rank 0 spent 2.500s outside its steps (saves, restores, evaluations), rank 1 0.000s: a rank "
      "that saves or evaluates alone (a main-process-only validation) holds the others at their "
      "next collective, and that wait is in their steps";
  EXPECT_EQ(report_format::outside_wait_note(report), note);
  EXPECT_NE(format_report(report).find("\n  " + note + "\n"), std::string::npos);
  EXPECT_NE(report_html(report, set).find("<p>" + note + "</p>"), std::string::npos);
  // Alike outside their steps, or none of it: nothing said.
  set.windows[1].ledger = set.windows[0].ledger;
  EXPECT_EQ(report_format::outside_wait_note(build_report(set)), "");
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
  EXPECT_NE(html.find("<title>rank 1 (straggler) data: 0.6 s</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>rank 0 bwd: 1.10 s</title>"), std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 1, straggler, mean per step)"),
            std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 3, mean per step)"), std::string::npos);
}

TEST(Report, TheBuilderGivesTheSameReportWhateverTheRanksInterleaving) {
  // Ranks' records as one file each (build_report) or interleaved as a live merge would hand
  // them over, warmup-only rank included: the same text and JSON.
  RecordSet set;
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 0; i < 5; ++i) {
      set.requests.push_back(request(rank, i, 10.0 + rank + i * 0.5, rank == 2 || i == 0));
      set.windows.push_back(window(rank, i * 10, 10, 1.0 + 0.01 * rank + 0.02 * i));
    }
  }
  Report whole = build_report(set, {"a"});
  ReportBuilder builder;
  for (int i = 0; i < 5; ++i) {
    for (int rank = 2; rank >= 0; --rank) {
      builder.window(set.windows[static_cast<std::size_t>(rank * 5 + i)]);
      builder.request(set.requests[static_cast<std::size_t>(rank * 5 + i)]);
    }
  }
  Report streamed = builder.finish({"a"});
  ASSERT_TRUE(streamed.requests && streamed.training);
  EXPECT_EQ(streamed.requests->count, 8);  // ranks 0 and 1 without their first (warmup)
  EXPECT_EQ(streamed.ranks.size(), 3u);
  EXPECT_EQ(streamed.ranks[2].requests, 5);  // all warmup: all counted
  EXPECT_EQ(format_report(streamed), format_report(whole));
  // Percentiles are over the same numbers whatever their order: exactly equal. (Sums taken in
  // another order may differ in their last bits, so the JSON is not compared whole.)
  EXPECT_EQ(streamed.requests->e2e_p50_s, whole.requests->e2e_p50_s);
  EXPECT_EQ(streamed.requests->e2e_p95_s, whole.requests->e2e_p95_s);
  EXPECT_EQ(streamed.training->step_p50_s, whole.training->step_p50_s);
  EXPECT_EQ(streamed.training->step_p95_s, whole.training->step_p95_s);
  EXPECT_EQ(streamed.stragglers, whole.stragglers);
}

// The step percentiles weigh each window by its steps (a window of no step by one): the smallest
// value whose cumulative weight, the values in ascending order, reaches the quantile. Checked
// against that sorted walk over windows with ties and uneven weights, for the run and each rank.
TEST(Report, StepPercentilesWeighWindowsByTheirSteps) {
  auto sorted_walk = [](std::vector<std::pair<double, double>> values, double q) {
    std::sort(values.begin(), values.end());
    double total = 0, cumulative = 0;
    for (const auto& v : values) total += v.second;
    for (const auto& v : values) {
      cumulative += v.second;
      if (cumulative >= q * total) return v.first;
    }
    return values.back().first;
  };
  std::uint32_t seed = 12345;
  auto next = [&seed](std::uint32_t n) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % n;
  };
  for (int trial = 0; trial < 40; ++trial) {
    RecordSet set;
    std::vector<std::pair<double, double>> p50s, p95s, rank0;
    int windows = 1 + static_cast<int>(next(60));
    for (int i = 0; i < windows; ++i) {
      int rank = static_cast<int>(next(3));
      std::int64_t steps = next(5) == 0 ? 0 : 1 + next(20);
      auto w = window(rank, i * 20, steps == 0 ? 1 : steps, 1.0 + 0.1 * next(8));
      w.steps = steps;
      set.windows.push_back(w);
      double weight = static_cast<double>(std::max<std::int64_t>(steps, 1));
      p50s.emplace_back(w.step_s_p50, weight);
      p95s.emplace_back(w.step_s_p95, weight);
      if (rank == 0) rank0.emplace_back(w.step_s_p50, weight);
    }
    Report report = build_report(set);
    ASSERT_TRUE(report.training);
    EXPECT_EQ(report.training->step_p50_s, sorted_walk(p50s, 0.5)) << "trial " << trial;
    EXPECT_EQ(report.training->step_p95_s, sorted_walk(p95s, 0.95)) << "trial " << trial;
    if (!rank0.empty()) {
      ASSERT_EQ(report.ranks[0].rank, 0);
      EXPECT_EQ(report.ranks[0].step_p50_s, sorted_walk(rank0, 0.5)) << "trial " << trial;
    }
  }
}

// A CPU run's numbers: its MFU is never "0.00%", its rate is in the unit the report uses.
TEST(Report, ComparisonTextKeepsSmallNumbersReadable) {
  const std::vector<MetricChange> changes = {
      {"requests.tflops", 1.017e-05, 3.172e-06, -0.688, "worse", "TFLOPS"},
      {"training.tflops", 0.25, 1989.0, 7955.0, "better", "TFLOPS"},
      {"requests.mfu", std::nullopt, 3.7e-05, std::nullopt, "n/a", ""},
      {"training.mfu", 0.4512, 0.0, -1.0, "worse", ""}};
  const std::string text = format_comparison("a.jsonl", "b.jsonl", changes);
  EXPECT_NE(text.find("10.17 MFLOPS"), std::string::npos) << text;
  EXPECT_NE(text.find("3.172 MFLOPS"), std::string::npos) << text;
  EXPECT_NE(text.find("250 GFLOPS"), std::string::npos) << text;
  EXPECT_NE(text.find("1989 TFLOPS"), std::string::npos) << text;
  EXPECT_NE(text.find("0.0037%"), std::string::npos) << text;
  EXPECT_NE(text.find("45.12%"), std::string::npos) << text;
  EXPECT_NE(text.find("0.00%"), std::string::npos) << text;  // a zero stays zero
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
  // The ledgers: the same share productive, a shorter first step.
  EXPECT_EQ(find("training.goodput").direction, "same");
  EXPECT_EQ(find("training.ledger.first_step_excess_s").direction, "better");
  std::string text = format_comparison("a.jsonl", "b.jsonl", changes);
  EXPECT_NE(text.find("training.step_p50_s"), std::string::npos);
  Json j = Json::parse(comparison_json("a.jsonl", "b.jsonl", changes));
  EXPECT_EQ(j["metrics"].size(), changes.size());

  // The same peak on both sides: the MFUs compare as the rates do.
  EXPECT_EQ(find("training.peak_tflops").direction, "same");

  // Slower the other way round.
  auto reverse = compare_reports(build_report(b), build_report(a));
  for (const auto& c : reverse) {
    if (c.name == "training.step_p50_s") EXPECT_EQ(c.direction, "worse");
  }
}

// Two runs whose MFUs are against different peaks (a CPU run measured with all its threads, then
// under torchrun with one a rank): the peaks are a row of their own, neither better nor worse,
// so that an MFU's change is not read as the run's alone; the page draws no bar for them.
TEST(Report, ComparisonSaysWhenTheMfusAreAgainstDifferentPeaks) {
  RecordSet a, b;
  a.windows = {window(0, 0, 10, 2.0, 0.40)};
  b.windows = {window(0, 0, 10, 2.0, 0.40)};
  a.requests = {request(0, 0, 10.0)};
  b.requests = {request(0, 0, 10.0)};
  b.windows[0].throughput->peak_tflops = 494.5;
  b.windows[0].throughput->mfu = 0.8;
  b.requests[0].dit->peak_tflops = 494.5;
  b.requests[0].dit->mfu = 400.0 / 494.5;
  auto changes = compare_reports(build_report(a), build_report(b));
  std::map<std::string, MetricChange> by_name;
  for (const auto& c : changes) by_name[c.name] = c;
  for (const char* peak : {"training.peak_tflops", "requests.peak_tflops"}) {
    ASSERT_TRUE(by_name.count(peak)) << peak;
    EXPECT_EQ(by_name[peak].direction, "differs") << peak;
    EXPECT_NEAR(*by_name[peak].change, -0.5, 1e-9) << peak;
  }
  EXPECT_EQ(by_name["training.mfu"].direction, "better");
  std::string text = format_comparison("a.jsonl", "b.jsonl", changes);
  EXPECT_NE(text.find("training.peak_tflops"), std::string::npos) << text;
  EXPECT_NE(text.find("-50.0%  differs"), std::string::npos) << text;
  std::string html = comparison_html("a.jsonl", "b.jsonl", changes, ChartData(), ChartData());
  EXPECT_NE(html.find(">differs</span>"), std::string::npos);
  EXPECT_EQ(html.find("training.peak_tflops: "), std::string::npos);  // no bar, no bar's tip
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
  // Step time, phases per rank, the ledger per rank, phases per window of each of the two ranks,
  // MFU, peak memory allocated and reserved per window; requests: their times, their stages,
  // their memory (allocated, reserved).
  EXPECT_EQ(count("<svg"), 12u);
  EXPECT_EQ(count("</svg>"), 12u);
  EXPECT_NE(html.find("Where each rank's loop went (the ledger so far)"), std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per rank (mean per step)"), std::string::npos);
  EXPECT_NE(html.find("Phase breakdown per window (rank 1, mean per step)"), std::string::npos);
  // Two ranks: the rank x window heatmaps, drawn by the page's one script.
  EXPECT_EQ(count("<canvas class=\"heatmap\""), 2u);
  EXPECT_EQ(count("<script>"), 1u);  // the page's own: names are escaped
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
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

// A new user's CPU run: requests priced with no peak for the device, windows with no FLOPs
// priced, steps of 20 ms. Where there is no MFU the report says why, once, in the text, the page
// and a comparison; the step and its phases read in one unit.
TEST(Report, NoMfuSaysWhyAndStepsShareTheirUnit) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    RequestRecord r = request(rank, 0, 0.030);
    r.dit->peak_tflops.reset();
    r.dit->mfu.reset();
    set.requests.push_back(r);
    TrainWindowRecord w = window(rank, 0, 10, 0.020);
    w.throughput->priced = false;
    w.throughput->tflops = 0;
    w.throughput->hw_tflops = 0;
    w.throughput->peak_tflops.reset();
    w.throughput->mfu.reset();
    w.throughput->hfu.reset();
    set.windows.push_back(w);
  }
  Report report = build_report(set);
  const std::string text = format_report(report);
  EXPECT_EQ(text.find("MFU -"), std::string::npos) << text;
  EXPECT_NE(
      text.find("  MFU n/a (no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto)\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  MFU, HFU n/a (no FLOPs priced)\n"), std::string::npos) << text;
  // The rank table's cells say n/a; the sections' lines above said why.
  EXPECT_NE(text.find("     n/a   "), std::string::npos) << text;
  EXPECT_EQ(text.find("MFU n/a for rank"), std::string::npos) << text;
  // 20 ms steps: the phases in ms as well, not "0.012s" beside "20.0ms".
  EXPECT_NE(text.find("  step     p50 20.0ms  p95 24.0ms\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  bwd                    12.0ms    60.0%\n"), std::string::npos) << text;
  // The ranks' table: each time column in the unit that fits it, the page's.
  EXPECT_NE(text.find("     1        1    30.0ms     10    20.0ms    24.0ms "), std::string::npos)
      << text;
  const std::string html = report_html(report, set);
  EXPECT_NE(html.find("n/a (no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto)"),
            std::string::npos);
  EXPECT_NE(html.find("n/a (no FLOPs priced)"), std::string::npos);
  EXPECT_NE(html.find("p50 20.0 ms, p95 24.0 ms"), std::string::npos);
  EXPECT_NE(html.find("<td>12.0 ms</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>30.0 ms</td><td>10</td><td>20.0 ms</td><td>24.0 ms</td>"),
            std::string::npos);

  // One rank priced against a peak, the other not: the rank without one is named, with why.
  set.requests[0].dit->peak_tflops = 989.0;
  set.requests[0].dit->mfu = 400.0 / 989.0;
  set.windows.clear();
  const Report mixed = build_report(set);
  EXPECT_NE(format_report(mixed).find("  MFU n/a for rank 1 (no peak recorded: run the job "
                                      "with VIDEOX_PERF_PEAK_TFLOPS=auto)\n"),
            std::string::npos)
      << format_report(mixed);
  // Compared with a run that has its MFU: which side lacks it, and why.
  RecordSet gpu;
  gpu.requests = {request(0, 0, 0.030)};
  const std::string compared =
      format_comparison("gpu.jsonl", "cpu.jsonl", compare_reports(build_report(gpu), report));
  EXPECT_NE(compared.find("requests.mfu n/a in B: no peak recorded: run the job with "
                          "VIDEOX_PERF_PEAK_TFLOPS=auto\n"),
            std::string::npos)
      << compared;
  const ChartData none;
  const std::string page = comparison_html("gpu.jsonl", "cpu.jsonl",
                                           compare_reports(build_report(gpu), report), none, none);
  EXPECT_NE(page.find("<td>n/a</td>"), std::string::npos);
  EXPECT_NE(page.find("<p>requests.mfu n/a in B: no peak recorded: run the job with "
                      "VIDEOX_PERF_PEAK_TFLOPS=auto</p>"),
            std::string::npos);
  // Two runs without a peak (two CPU runs): the MFU row is kept, n/a on both sides, why said once.
  const std::string both =
      format_comparison("cpu.jsonl", "cpu2.jsonl", compare_reports(report, report));
  const std::string row = "requests.mfu" + std::string(22 + 1 + 11, ' ') + "n/a" +
                          std::string(1 + 11, ' ') + "n/a" + std::string(1 + 8, ' ') + "-  n/a\n";
  EXPECT_NE(both.find(row), std::string::npos) << both;
  EXPECT_NE(both.find("requests.mfu n/a in A and B: no peak recorded: run the job with "
                      "VIDEOX_PERF_PEAK_TFLOPS=auto\n"),
            std::string::npos)
      << both;
}

// A CPU run of two ranks: small times in ms, the job's rate beside each device's, an MFU that is
// not "0.0%", the request's time outside every stage as its own row, windows said per rank, and
// the slowest rank's cost never called a straggler's when there is none.
TEST(Report, WordsThatMeanOneThing) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    for (std::int64_t req = 0; req < 3; ++req) {
      RequestRecord r = request(rank, req, 0.030);
      r.dit->params = 200000000;
      r.dit->tflops = 0.010;
      r.dit->devices = 2;
      r.dit->peak_tflops = 2 * 989.0;  // the job's: both devices'
      r.dit->mfu = 0.005 / 989.0;
      set.requests.push_back(r);
    }
    // Two windows a rank; rank 1 a little slower, under the threshold.
    for (std::int64_t first : {0, 10})
      set.windows.push_back(window(rank, first, 10, 2.0 + rank * 0.04));
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.stragglers.empty());
  std::string text = format_report(report);
  EXPECT_NE(text.find("  e2e      p50 30.0ms  p95 30.0ms  max 30.0ms  mean 30.0ms\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  DiT 200.0M params  10.0 GFLOPS job (5.0 GFLOPS per device)  MFU "
                      "0.00051% of 989.0 TFLOPS per device"),
            std::string::npos)
      << text;
  // 800 + 150 of the 1000 ms of each request in stages: 50 ms a request in none.
  EXPECT_NE(text.find("  other                   1.5ms        -          -     5.0%\n"),
            std::string::npos)
      << text;
  // Per request and per call: 10 calls of 2.4 ms.
  EXPECT_NE(text.find("  transformer            24.0ms     10.0      2.4ms    80.0%\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Training: 20 steps of the job, in 2 windows per rank (4 over the 2 "
                      "ranks)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Stragglers: none above the threshold (no rank's time per step above the "
                      "ranks' medians per phase exceeds the least rank's by 5% of the median "
                      "step)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Slowest rank's cost: rank 1 "), std::string::npos) << text;
  EXPECT_EQ(text.find("Straggler cost"), std::string::npos) << text;
  Json j = Json::parse(report_json(report));
  EXPECT_NEAR(j["requests"]["other"]["share"].get<double>(), 0.05, 1e-9);
  EXPECT_NEAR(j["requests"]["device_tflops"].get<double>(), 0.005, 1e-12);
  // A rank that trained shows its training's rate (one device a window here).
  EXPECT_NEAR(j["ranks"][1]["device_tflops"].get<double>(), 300.0, 1e-9);
  std::string html = report_html(report, set);
  EXPECT_NE(html.find("Stragglers: none above the threshold"), std::string::npos);
  EXPECT_NE(html.find("<td>other (in no stage)</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>FLOP/s per device</th>"), std::string::npos);
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

}  // namespace
}  // namespace vxperf::analysis

namespace vxperf::analysis {
namespace {

using namespace test_records;

// NVML's fields through the records file and back: energy per video and per sample, power, clock,
// temperature and throttling in the report's text and JSON.
TEST(Report, EnergyPerVideoAndPerSampleFromTheMetersFields) {
  std::vector<std::string> out;
  for (int i = 0; i < 3; ++i) {
    RequestRecord r = request(0, i, 10.0);
    r.readings->energy_j = 1000.0 + 500.0 * i;
    r.readings->energy_from = "counter";
    r.readings->power_w_mean = 100.0 + 50.0 * i;
    r.readings->sm_clock_mhz_min = 1980 - 100 * i;
    r.readings->temp_c_max = 60 + i;
    r.readings->throttle = i == 2 ? std::vector<std::string>{"sw_power_cap", "hw_slowdown"}
                                  : std::vector<std::string>{};
    out.push_back(to_json_line(r));
  }
  for (int i = 0; i < 2; ++i) {
    TrainWindowRecord w = window(0, 10 * i, 10, 1.0);
    w.readings->energy_j = 30.0 * (i + 1);
    w.readings->energy_from = "power_samples";
    w.readings->power_w_mean = 300.0;
    w.energy_j_per_sample = 5.0 * (i + 1);  // 6 samples each
    out.push_back(to_json_line(w));
  }
  RecordSet set = read_string(lines(out));
  Report report = build_report(set);
  ASSERT_TRUE(report.requests && report.requests->energy);
  const EnergySummary& e = *report.requests->energy;
  EXPECT_EQ(e.records, 3);
  EXPECT_DOUBLE_EQ(e.energy_j, 4500.0);
  EXPECT_DOUBLE_EQ(*e.per_unit_j, 1500.0);
  // The readings the field table folds, by their keys.
  auto reading = [&](const char* key) {
    const ReadingSummary* found = find_reading(e.readings, key);
    EXPECT_NE(found, nullptr) << key;
    return found ? *found : ReadingSummary{};
  };
  EXPECT_DOUBLE_EQ(*reading("power_w_mean").value, 150.0);
  EXPECT_DOUBLE_EQ(*reading("power_w_mean").max, 200.0);
  EXPECT_EQ(reading("sm_clock_mhz_min").value, 1780);
  EXPECT_EQ(reading("temp_c_max").value, 62);
  EXPECT_EQ(reading("throttle").seen, (std::vector<std::string>{"sw_power_cap", "hw_slowdown"}));
  ASSERT_TRUE(report.training && report.training->energy);
  const EnergySummary& t = *report.training->energy;
  EXPECT_DOUBLE_EQ(t.energy_j, 90.0);
  EXPECT_DOUBLE_EQ(*t.per_unit_j, 90.0 / 12);
  std::string text = format_report(report);
  EXPECT_NE(text.find("  energy   1500.000 J/request (video), 4500.000 J over 3 requests (from "
                      "counter)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  device   power 150.0 W mean, 200.0 W max  SM clock min 1780 MHz  temp max "
                      "62 C\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  throttle sw_power_cap, hw_slowdown\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  energy   7.500 J/sample, 90.000 J over 2 windows (from power_samples)\n"),
            std::string::npos)
      << text;
  Json j = Json::parse(report_json(report));
  EXPECT_DOUBLE_EQ(j["requests"]["energy"]["per_unit_j"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(j["training"]["energy"]["per_unit_j"].get<double>(), 7.5);
  std::string html = report_html(report, set);
  EXPECT_NE(html.find("Energy per request (one video)"), std::string::npos);
  EXPECT_NE(html.find("Device power per request (mean)"), std::string::npos);
  EXPECT_NE(html.find("Device power per window (mean)"), std::string::npos);
  EXPECT_EQ(html.find("SM clock per window"), std::string::npos);  // the windows carry none
  EXPECT_NE(html.find("J/request (video)"), std::string::npos);    // the summary's lines
}

TEST(Report, NoMeterFieldsNoEnergyLines) {
  RecordSet set;
  set.requests = {request(0, 0, 10.0)};
  Report report = build_report(set);
  ASSERT_TRUE(report.requests);
  EXPECT_FALSE(report.requests->energy);
  EXPECT_EQ(format_report(report).find("energy"), std::string::npos);
  EXPECT_EQ(report_html(report, set).find("Energy per request"), std::string::npos);
}

}  // namespace
}  // namespace vxperf::analysis

namespace vxperf::analysis {
namespace {

using namespace test_records;

// #28: the job's totals. A context-parallel request of two ranks is one request (its energy the
// ranks' sum, its videos once); two requests served at once on one device count its time once;
// every rank's window energy over the job's samples; what had no readings is named.
TEST(Report, JobEnergyTotalsPerVideoPerSampleAndPerDevice) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    RequestRecord r = request(rank, 0, 10.0);
    r.world_size = 2;
    r.ts = 1010.0;
    r.readings->energy_j = 1000.0 * (rank + 1);
    r.readings->power_w_mean = 100.0 * (rank + 1);  // 10 s each
    r.videos = 4;
    r.energy_j_per_video = *r.readings->energy_j / 4;
    ParallelLayout p;
    p.cp = 2;
    p.group = 2;
    r.parallel = p;
    set.requests.push_back(r);
  }
  // Rank 0, cuda:0: two requests served at once ([1010, 1020] and [1015, 1025]), then one alone.
  for (auto [start, end, joules] :
       {std::tuple{1010.0, 1020.0, 500.0}, std::tuple{1015.0, 1025.0, 500.0}}) {
    RequestRecord r = request(0, set.requests.size(), end - start);
    r.ts = end;
    r.readings->energy_j = joules;
    r.readings->power_w_mean = joules / (end - start);
    r.readings->energy_shared = true;
    set.requests.push_back(r);
  }
  RequestRecord unread = request(1, 7, 3.0);  // a device NVML could not see
  set.requests.push_back(unread);
  // Training on four ranks, two context-parallel pairs: each window took 20 samples per rank,
  // 40 for the job.
  for (int rank = 0; rank < 4; ++rank) {
    TrainWindowRecord w = window(rank, 0, 10, 1.0);
    w.device = 0;  // each rank's cuda:0
    w.readings->energy_j = 400.0;
    w.readings->power_w_mean = 40.0;
    w.energy_j_per_sample = 20.0;
    ParallelLayout p;
    p.dp = 2;
    p.cp = 2;
    w.parallel = p;
    w.readings->cpu_energy_j = 10.0;
    set.windows.push_back(w);
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.energy);
  const JobEnergy& e = *report.energy;
  EXPECT_EQ(e.records, 9);
  EXPECT_DOUBLE_EQ(e.energy_j, 3000.0 + 1000.0 + 1600.0);
  EXPECT_EQ(e.videos, 4 + 1 + 1);  // the group's request once
  EXPECT_DOUBLE_EQ(e.request_energy_j, 4000.0);
  EXPECT_DOUBLE_EQ(*e.j_per_video, 4000.0 / 6);
  EXPECT_DOUBLE_EQ(e.samples, 40.0);
  EXPECT_DOUBLE_EQ(*e.j_per_sample, 1600.0 / 40);
  const ReadingSummary* cpu = find_reading(e.totals, "cpu_energy_j");
  ASSERT_NE(cpu, nullptr);
  EXPECT_DOUBLE_EQ(*cpu->value, 40.0);
  EXPECT_EQ(e.shared, 2);
  EXPECT_EQ(e.unread, 1);
  EXPECT_EQ(e.unread_first, std::vector<std::string>{"rank 1 req 7"});
  // Rank 0's device: the group request [1000, 1010], the two shared ones [1010, 1025]: 25 s, not
  // 30; and its window.
  const DeviceEnergy* d0 = nullptr;
  for (const auto& d : e.devices) {
    if (d.rank == 0 && d.device == 0) d0 = &d;
  }
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(d0->records, 4);
  EXPECT_DOUBLE_EQ(d0->energy_j, 1000.0 + 1000.0 + 400.0);
  ASSERT_EQ(e.devices.size(), 4u);
  std::string text = format_report(report);
  EXPECT_NE(text.find("Energy (job): 0.001556 kWh (5600.000 J) on 4 devices; host CPU and DRAM "
                      "40.000 J\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  per video   666.667 J over 6 videos"), std::string::npos) << text;
  EXPECT_NE(text.find("  per sample  40.0000 J over 40 samples"), std::string::npos) << text;
  EXPECT_NE(text.find("  no readings 1 of 9 records: rank 1 req 7\n"), std::string::npos) << text;
  // The requests' own line: not one video each, so per request.
  EXPECT_NE(text.find("J/request, "), std::string::npos) << text;
  Json j = Json::parse(report_json(report));
  EXPECT_DOUBLE_EQ(j["energy"]["j_per_video"].get<double>(), 4000.0 / 6);
  EXPECT_DOUBLE_EQ(j["energy"]["j_per_sample"].get<double>(), 40.0);
  EXPECT_EQ(j["energy"]["unread_first"][0], "rank 1 req 7");
  EXPECT_EQ(j["energy"]["devices"].size(), 4u);
  std::string html = report_html(report, set);
  EXPECT_NE(html.find("Energy (job)"), std::string::npos);
  EXPECT_NE(html.find("666.667 J over 6 videos"), std::string::npos);
  // Comparisons see the totals.
  bool found = false;
  for (const auto& m : report_metrics(report)) found = found || m.name == "energy.j_per_video";
  EXPECT_TRUE(found);
}

TEST(Report, TheUnionOfADevicesIntervalsCountsOverlapsOnce) {
  RecordSet set;
  // [0, 10], [5, 8] (settled first), [20, 30], then [9, 21] joining them all: [0, 30].
  for (auto [start, end] :
       {std::pair{5.0, 8.0}, std::pair{0.0, 10.0}, std::pair{20.0, 30.0}, std::pair{9.0, 21.0}}) {
    RequestRecord r = request(0, set.requests.size(), end - start);
    r.ts = 1000.0 + end;
    r.readings->energy_j = 100.0 * (end - start);
    r.readings->power_w_mean = 100.0;
    set.requests.push_back(r);
  }
  Report report = build_report(set);
  ASSERT_TRUE(report.energy);
  ASSERT_EQ(report.energy->devices.size(), 1u);
  EXPECT_DOUBLE_EQ(report.energy->devices[0].seconds, 30.0);
  EXPECT_DOUBLE_EQ(*report.energy->devices[0].power_w_mean, 100.0 * (10 + 3 + 10 + 12) / 30.0);
}

// The span is read from times since the epoch, where a second holds only about 2e-7 s of
// precision: a rank that ran from the job's first moment to its last spans it whatever the
// rounding (it was 2e-9 s short, in one run of the 3-rank DDP test in five).
TEST(Report, TheJobsSpanHoldsItsLongestRankWhateverTheRounding) {
  RecordSet set;
  for (int rank = 0; rank < 2; ++rank) {
    TrainWindowRecord w = window(rank, 0, 10, 1.0);
    w.ledger->wall_s = rank == 0 ? 4.996248964259031 : 2.0;
    w.ts = 1765000306.8995614 - (rank == 0 ? 0.0 : 1.0);
    set.windows.push_back(w);
    set.ends.push_back(end_of(w, 0.0));
  }
  const double start = set.ends[0].ts - set.ends[0].ledger->wall_s;
  ASSERT_LT(start + set.ends[0].ledger->wall_s - start, set.ends[0].ledger->wall_s);  // rounds
  Report report = build_report(set);
  ASSERT_TRUE(report.job_ledger && report.job_ledger->span_s);
  EXPECT_EQ(*report.job_ledger->span_s, set.ends[0].ledger->wall_s);
}

// A 4-rank job read from its rank files, as a job among thousands loses them: rank 3's missing,
// rank 2's cut mid-line, rank 1's named twice and also copied. Each is said, the job's numbers are
// marked partial, and rank 1's windows count once.
TEST(Report, AJobReadFromFilesSaysWhatItMisses) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / ("vxperf-partial-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto rank_file = [&dir](int rank) {
    return lines({to_json_line(window(rank, 0, 10, 1.0)), to_json_line(window(rank, 10, 10, 1.0))});
  };
  auto write = [&dir](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string(), std::ios::binary) << text;
    return (dir / name).string();
  };
  std::string r0 = write("rank0.jsonl", rank_file(0));
  std::string r1 = write("rank1.jsonl", rank_file(1));
  std::string copy = write("rank1-copy.jsonl", rank_file(1));
  std::string r2 = write("rank2.jsonl", rank_file(2) + R"({"kind":"train_window","ra)");

  ReportBuilder builder;
  stream_record_files({r0, r1, r2, r1, copy}, builder);
  Report report = builder.finish();
  ASSERT_TRUE(report.partial);
  EXPECT_EQ(report.partial->world_size, 4);
  EXPECT_EQ(report.partial->missing_ranks, std::vector<int>{3});
  EXPECT_EQ(report.partial->torn_files, std::vector<std::string>{r2});
  using Repeat = std::pair<std::string, std::string>;
  EXPECT_EQ(report.partial->repeated_files, (std::vector<Repeat>{{r1, r1}, {copy, r1}}));
  ASSERT_TRUE(report.training);
  EXPECT_EQ(report.training->windows, 6);  // ranks 0, 1 and 2, two windows each, once
  EXPECT_EQ(report.training->steps, 20);   // the job's, not the ranks' added
  std::string text = format_report(report);
  EXPECT_EQ(text.rfind("Partial: 1 of 4 ranks have no training records; 1 file lost its last "
                       "line (" +
                           r2 + "); 2 files not read, the same as one read before (" + r1 + ", " +
                           copy + ") (the warnings say which)\n",
                       0),
            0u)
      << text;
  auto said = [&report](const std::string& what) {
    return std::count_if(report.warnings.begin(), report.warnings.end(),
                         [&what](const std::string& w) { return w.find(what) != w.npos; });
  };
  EXPECT_EQ(said("no training records of rank 3 in the 5 files given (world size 4): the job's "
                 "numbers are those of its other 3 ranks"),
            1);
  EXPECT_EQ(said(r2 + ":3: torn last line skipped"), 1);
  EXPECT_EQ(said(copy + ": the same bytes as " + r1), 1);
  EXPECT_EQ(said(r1 + ": the same bytes as " + r1), 1);
  Json j = Json::parse(report_json(report));
  EXPECT_EQ(j["partial"]["missing_ranks"], Json::array({3}));
  EXPECT_EQ(j["partial"]["repeated_files"][1], Json({{"file", copy}, {"repeats", r1}}));

  // Every rank's file, each once: nothing partial, nothing said.
  std::string r3 = write("rank3.jsonl", rank_file(3));
  ReportBuilder whole;
  stream_record_files({r0, r1, write("rank2.jsonl", rank_file(2)), r3}, whole);
  Report complete = whole.finish();
  EXPECT_FALSE(complete.partial);
  EXPECT_TRUE(complete.warnings.empty()) << complete.warnings.front();
  EXPECT_EQ(complete.training->windows, 8);
  fs::remove_all(dir);
}

// #51: requests in partials. A context-parallel pair's files in one partial fold each request
// across the files as one run does; a third rank's file in a partial of its own merges beside
// it, the same report to the last digit; the pair's files in two partials are refused.
TEST(Report, PartialsOfRequestsMergeToOneRunsReport) {
  auto feed = [](ReportBuilder& b, ChartData& c, int rank, int count, bool pair) {
    b.begin_file("rank" + std::to_string(rank) + ".jsonl");
    for (int i = 0; i < count; ++i) {
      RequestRecord r = request(rank, i, 1.0 + 0.37 * i + 0.11 * rank, i == 0);
      r.ts = 1000.0 + i;
      if (pair) {
        ParallelLayout p;
        p.cp = 2;
        p.group = 2;
        r.parallel = p;
      }
      b.request(r);
      c.request(r);
    }
  };
  ReportBuilder one;
  ChartData one_charts;
  feed(one, one_charts, 0, 5, true);
  feed(one, one_charts, 1, 5, true);
  feed(one, one_charts, 2, 4, false);
  const Report expected = one.finish({"a", "b", "c"});
  ASSERT_TRUE(expected.requests);
  EXPECT_EQ(expected.requests->count, 4 + 3);  // the pair's 4 once, rank 2's 3 (a warmup each)
  EXPECT_EQ(expected.requests->shared_records, 4);

  ReportBuilder pair, solo;
  ChartData pair_charts, solo_charts;
  feed(pair, pair_charts, 0, 5, true);
  feed(pair, pair_charts, 1, 5, true);
  feed(solo, solo_charts, 2, 4, false);
  ReportBuilder merged;
  ChartData merged_charts;
  std::vector<std::string> sources;
  merged.add_partial(pair.partial(pair_charts, {"a", "b"}), "pair", merged_charts, sources);
  merged.add_partial(solo.partial(solo_charts, {"c"}), "solo", merged_charts, sources);
  EXPECT_EQ(report_json(merged.finish(sources)), report_json(expected));

  ReportBuilder first, second, split;
  ChartData first_charts, second_charts, split_charts;
  feed(first, first_charts, 0, 5, true);
  feed(second, second_charts, 1, 5, true);
  sources.clear();
  split.add_partial(first.partial(first_charts, {"a"}), "a.partial", split_charts, sources);
  try {
    split.add_partial(second.partial(second_charts, {"b"}), "b.partial", split_charts, sources);
    ADD_FAILURE() << "a request of two ranks merged from two partials";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("request 1 of data-parallel rank 0 is computed by ranks "
                                         "in both a.partial and b.partial"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vxperf::analysis
