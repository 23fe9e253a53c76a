// The Prometheus record sink: requests and windows into series.
#include "vxperf/prometheus_sink.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "prometheus_text.h"

namespace vxperf {
namespace {

using namespace test_prometheus;

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

// Serving: a request of half an hour lands in its bucket; the queue wait and the time to the
// first step where the records say them.
TEST(PrometheusSink, QueueWaitFirstStepAndRequestsToAnHour) {
  PrometheusSink sink;
  Request a = make_request(0, 1700);
  a.record.queue_s = 40;
  a.record.first_step_s = 12;
  sink.on_request(a.record, a.detail);
  Request b = make_request(0, 20);  // a server that says no queue
  sink.on_request(b.record, b.detail);
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="1200.0"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="1800.0"})"), 2);
  EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="3600.0"})"), 2);
  EXPECT_EQ(value_of(s, R"(vxperf_request_queue_seconds_count{rank="0"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_request_queue_seconds_bucket{rank="0",le="30.0"})"), 0);
  EXPECT_EQ(value_of(s, R"(vxperf_request_queue_seconds_bucket{rank="0",le="45.0"})"), 1);
  EXPECT_EQ(value_of(s, R"(vxperf_request_first_step_seconds_count{rank="0"})"), 1);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_request_first_step_seconds_sum{rank="0"})"), 12);
}

// #50: a request that said its denoising steps observes its mean step, its transformer calls'
// time over its steps (25 steps of two 0.3 s calls: 0.6 s); one that did not says nothing.
TEST(PrometheusSink, DenoisingStepOfRequestsThatSaidTheirSteps) {
  PrometheusSink sink;
  Request a = make_request(0, 20);
  for (StageSummary& st : a.record.stages) {
    if (st.name == "transformer") st.total_ms = 300.0 * static_cast<double>(st.count);
  }
  a.record.denoising_steps = 25;
  sink.on_request(a.record, a.detail);
  Request b = make_request(0, 20);
  sink.on_request(b.record, b.detail);
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_request_denoising_step_seconds_count{rank="0"})"), 1);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_request_denoising_step_seconds_sum{rank="0"})"), 0.6);
  EXPECT_EQ(value_of(s, R"(vxperf_request_denoising_step_seconds_bucket{rank="0",le="0.5"})"), 0);
  EXPECT_EQ(value_of(s, R"(vxperf_request_denoising_step_seconds_bucket{rank="0",le="1.0"})"), 1);
}

TEST(PrometheusSink, InFlightAndQueuedAsTheyChange) {
  PrometheusSink sink;
  sink.on_request_load({0, 1, 3});
  sink.on_request_load({0, 2, 2});
  auto s = scrape(sink);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_in_flight{rank="0"})"), 2);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_queued{rank="0"})"), 2);
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
  unpriced.record.readings.reset();
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
  t.priced = mfu.has_value();  // as the engine prices a window: MFU and HFU only with a price
  t.mfu = mfu;
  if (mfu) t.hfu = *mfu * 4 / 3;
  w.throughput = t;
  w.readings = DeviceReadings{1000, 2000};
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

TEST(PrometheusSink, PhasesAndTheStragglersSecondsLost) {
  PrometheusSink sink;
  WindowDetail detail;
  TrainWindowRecord w = make_window(0, {9, 1.0, 1.5}, 1, 0.5, &detail);
  detail.steps[0].phases = {{"data", 8.0}, {"fwd", 1.0}};  // warmup: left out
  detail.steps[1].phases = {{"data", 0.25}, {"fwd", 0.75}};
  detail.steps[2].phases = {{"data", 0.5}, {"fwd", 0.75}, {"bwd", 0.25}};
  CrossRankView view;
  view.lost_s = {0.0, 12.5};
  w.xrank = view;
  sink.on_train_window(w, detail);
  auto s = scrape(sink);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_phase_seconds_total{rank="0",phase="data"})"), 0.75);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_phase_seconds_total{rank="0",phase="fwd"})"), 1.5);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_phase_seconds_total{rank="0",phase="bwd"})"), 0.25);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_straggler_lost_seconds{rank="1"})"), 12.5);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_straggler_lost_seconds{rank="0"})"), 0.0);
}

TEST(PrometheusSink, TheFinalRecordCarriesTheLedgerToTheEnd) {
  PrometheusSink sink;
  TrainEndRecord end;
  end.rank = 1;
  Ledger ledger;
  ledger.wall_s = 10.0;
  ledger.productive_s = 6.0;
  ledger.between_steps_s = 4.0;
  ledger.goodput = 0.6;
  end.ledger = ledger;
  sink.on_train_end(end);
  auto s = scrape(sink);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_goodput{rank="1"})"), 0.6);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_train_ledger_seconds{rank="1",kind="between_steps"})"),
                   4.0);
}

TEST(PrometheusSink, WarmupOnlyWindowMakesNoSeries) {
  PrometheusSink sink;
  WindowDetail detail;
  sink.on_train_window(make_window(3, {9, 9}, 2, 0.9, &detail), detail);
  auto s = scrape(sink);
  EXPECT_FALSE(has_prefix(s, "vxperf_train"));
}

// NVML's readings: energy summed over requests and windows, power, clock, temperature and J per
// sample as gauges, each by device; nothing of them without the readings.
TEST(PrometheusSink, EnergyCounterAndDeviceGaugesByDevice) {
  PrometheusSink sink;
  Request plain = make_request(0, 10.0);
  plain.record.device = 0;
  sink.on_request(plain.record, plain.detail);
  EXPECT_FALSE(has_prefix(scrape(sink), "vxperf_energy_joules_total"));
  for (double joules : {1200.5, 800.25}) {
    Request r = make_request(0, 10.0);
    r.record.device = 1;
    r.record.readings->energy_j = joules;
    r.record.readings->power_w_mean = joules / 10;
    r.record.readings->sm_clock_mhz_min = 1410;
    r.record.readings->temp_c_max = 77;
    sink.on_request(r.record, r.detail);
  }
  WindowDetail detail;
  TrainWindowRecord w = make_window(0, {30, 1.6, 1.6}, 1, 0.5, &detail);
  w.device = 1;
  w.readings->energy_j = 99.25;
  w.energy_j_per_sample = 12.5;
  sink.on_train_window(w, detail);
  auto s = scrape(sink);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_energy_joules_total{rank="0",device="cuda:1"})"),
                   1200.5 + 800.25 + 99.25);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_power_watts{rank="0",device="cuda:1"})"), 80.025);
  EXPECT_EQ(value_of(s, R"(vxperf_sm_clock_mhz{rank="0",device="cuda:1"})"), 1410);
  EXPECT_EQ(value_of(s, R"(vxperf_gpu_temperature_celsius{rank="0",device="cuda:1"})"), 77);
  EXPECT_DOUBLE_EQ(
      value_of(s, R"(vxperf_train_energy_joules_per_sample{rank="0",device="cuda:1"})"), 12.5);
  EXPECT_FALSE(has_prefix(s, R"(vxperf_energy_joules_total{rank="0",device="cuda:0"})"));
}

// #28: the host's energy and the videos made, beside the device's energy (joules per video is
// one rate over the other).
TEST(PrometheusSink, HostEnergyAndVideosAreCounters) {
  PrometheusSink sink;
  for (std::int64_t videos : {1, 4}) {
    Request r = make_request(0, 10.0);
    r.record.device = 0;
    r.record.readings->energy_j = 100.0;
    r.record.readings->cpu_energy_j = 12.5;
    if (videos != 1) r.record.videos = videos;
    sink.on_request(r.record, r.detail);
  }
  auto s = scrape(sink);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_cpu_energy_joules_total{rank="0"})"), 25.0);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_videos_total{rank="0"})"), 5.0);
  EXPECT_DOUBLE_EQ(value_of(s, R"(vxperf_energy_joules_total{rank="0",device="cuda:0"})"), 200.0);
}

// docs/SERVING.md's table of metrics names every family the sink keeps, with its labels beyond
// `rank` (the families of record fields come from their rows: a row added there must be
// documented).
TEST(PrometheusSink, TheServingDocNamesEveryMetric) {
  std::ifstream in(VXPERF_METRICS_DOC);
  ASSERT_TRUE(in) << VXPERF_METRICS_DOC;
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t section = doc.find("## Serving metrics: Prometheus");
  ASSERT_NE(section, std::string::npos);
  std::string table = doc.substr(section, doc.find("\n## ", section + 1) - section);
  PrometheusSink sink;
  for (const FamilySnapshot& f : sink.collect()) {
    SCOPED_TRACE(f.name);
    std::size_t at = table.find("`" + f.name);
    ASSERT_NE(at, std::string::npos) << "not in docs/SERVING.md's table";
    std::string row = table.substr(at, table.find('\n', at) - at);
    for (const std::string& label : f.label_names) {
      if (label == "rank") continue;
      EXPECT_NE(row.find("`" + f.name + "{" + label), std::string::npos) << row;
    }
  }
}

}  // namespace
}  // namespace vxperf
