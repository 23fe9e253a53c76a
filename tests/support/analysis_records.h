// Records for the analysis tests: requests and windows as a run of several ranks writes them,
// and the conformance cases' files.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "vxperf/records.h"
#include "vxperf/records_reader.h"

namespace vxperf::analysis::test_records {

inline std::string case_path(const std::string& name) {
  return std::string(VXPERF_CASES_DIR) + "/" + name;
}

inline RecordSet read_string(const std::string& text, const std::string& name = "mem.jsonl") {
  std::istringstream in(text);
  RecordSet set;
  read_records(in, name, set);
  return set;
}

inline RequestRecord request(int rank, std::int64_t req, double e2e, bool warmup = false) {
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
  r.readings = DeviceReadings{std::uint64_t{40} << 30, std::uint64_t{60} << 30};
  return r;
}

inline TrainWindowRecord window(int rank, std::int64_t first, std::int64_t steps, double p50,
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
  w.readings = DeviceReadings{std::uint64_t{50} << 30, std::uint64_t{70} << 30};
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
  Ledger l;  // the loop so far: a first step of 3 p50, the rest at p50
  l.steps = first + steps;
  l.ideal_step_s = 0.9 * p50;
  l.productive_s = l.ideal_step_s * static_cast<double>(l.steps);
  l.first_step_excess_s = 2.1 * p50;
  l.data_wait_s = 0.1 * p50 * static_cast<double>(l.steps);
  l.wall_s = l.productive_s + l.first_step_excess_s + l.data_wait_s;
  l.goodput = l.productive_s / l.wall_s;
  w.ledger = l;
  return w;
}

// The training's end after `last`, `after` seconds of its loop past its last step (in
// between_steps_s), its time `after` past the window's.
inline TrainEndRecord end_of(const TrainWindowRecord& last, double after, std::int64_t first = 0) {
  TrainEndRecord e;
  e.ts = last.ts + after;
  e.rank = last.rank;
  e.world_size = last.world_size;
  e.attempt = last.attempt;
  e.step_first = first;
  e.step_last = last.step_last;
  e.steps = last.step_last - first + 1;
  e.after_last_step_s = after;
  Ledger l = *last.ledger;
  l.between_steps_s += after;
  l.wall_s += after;
  l.goodput = l.productive_s / l.wall_s;
  e.ledger = l;
  return e;
}

inline std::string lines(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) out += r + "\n";
  return out;
}

// Records with every field set: the records above with what they leave at its default.
inline RequestRecord full_request() {
  RequestRecord r = request(3, 41, 12.25, /*warmup=*/true);
  r.ts = 1712345678.5;
  r.world_size = 8;
  DitThroughput& d = *r.dit;
  d.batch = 2;
  d.devices = 8;
  d.attn_share = 0.4;
  d.peak_source = PeakSource::kMeasured;
  d.dtype = Dtype::kFp8;
  d.attn_density = 0.5;
  d.skipped_fwd = 12;
  d.effective_fwd = 38.5;
  r.device = 5;
  DeviceReadings& m = *r.readings;
  m.energy_j = 875.5;
  m.energy_from = "power_x_time";
  m.energy_shared = true;
  m.power_w_mean = 218.875;
  m.sm_clock_mhz_min = 1410;
  m.temp_c_max = 71;
  m.throttle = std::vector<std::string>{"sw_power_cap"};
  m.cpu_energy_j = 40.25;
  r.videos = 4;
  r.energy_j_per_video = 875.5 / 4;
  return r;
}

inline TrainWindowRecord full_window() {
  TrainWindowRecord w = window(1, 100, 48, 1.25);
  w.ts = 1712345678.5;
  w.warmup_excluded = 2;
  w.phases_s.emplace_back("other", 0.02);
  w.micro_steps = 2;
  w.overrun_s = 0.001;
  TrainThroughput& t = *w.throughput;
  t.trainable = 1000;
  t.flops_coef_reason = "lora, ckpt on -> 2x/3x";
  t.peak_source = PeakSource::kEnv;
  t.skipped_fwd = 3;
  t.effective_fwd = 93.25;
  CrossRankView v;
  v.step_s_p50 = {1.0, 1.25, 1.0, 1.1};
  v.excess_s = {0, 0.2, 0, 0.05};
  v.median_s = 1.05;
  v.max_rank = 1;
  v.stragglers = {1};
  v.straggler_phases = {"data"};
  v.samples_per_s = 14;
  v.tflops = 480;
  v.peak_alloc = std::make_pair(2, std::uint64_t{70} << 30);
  v.exchange_s = 0.003;
  w.xrank = v;
  return w;
}

}  // namespace vxperf::analysis::test_records
