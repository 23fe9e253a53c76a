#include "training/window.h"

#include <algorithm>
#include <cstring>

#include "base/stats.h"
#include "vxperf/training.h"

namespace vxperf::internal {

TrainWindowRecord aggregate_window(const std::vector<StepRecord>& window,
                                   const WindowContext& ctx) {
  std::vector<const StepRecord*> measured;
  for (const auto& entry : window) {
    if (!entry.warmup) measured.push_back(&entry);
  }
  if (measured.empty()) {
    for (const auto& entry : window) measured.push_back(&entry);
  }
  TrainWindowRecord r;
  r.ts = ctx.ts;
  r.rank = ctx.rank;
  r.world_size = ctx.world_size;
  r.parallel = ctx.parallel;
  r.step_first = window.front().step;
  r.step_last = window.back().step;
  r.steps = static_cast<std::int64_t>(measured.size());
  r.warmup_excluded = static_cast<std::int64_t>(window.size() - measured.size());
  std::vector<double> totals;
  std::vector<double> micro;
  std::vector<double> overrun;
  std::vector<double> samples;
  std::int64_t samples_total = 0;
  for (const StepRecord* e : measured) {
    totals.push_back(e->total_s);
    micro.push_back(static_cast<double>(e->micro_steps));
    overrun.push_back(e->overrun_s);
    samples.push_back(static_cast<double>(e->samples));
    samples_total += e->samples;
  }
  // The wall clock in step order, left to right (the rates' divisor), before sorting for the
  // percentiles.
  double wall_s = plain_sum(totals);
  std::sort(totals.begin(), totals.end());
  r.step_s_p50 = percentile(totals, 50);
  r.step_s_p95 = percentile(totals, 95);
  for (int i = 0; i < kPhaseCount; ++i) {
    const char* name = phase_name(static_cast<Phase>(i));
    std::vector<double> values;
    bool any = false;
    for (const StepRecord* e : measured) {
      double v = 0.0;
      // By the name's characters: the compiler may fold phase_name() into a string literal of
      // the calling file, so the same name can live at two addresses.
      for (const auto& [phase, seconds] : e->phases) {
        if (std::strcmp(phase, name) == 0) v = seconds;
      }
      any = any || v != 0.0;
      values.push_back(v);
    }
    if (any) r.phases_s.emplace_back(name, fmean(values));
  }
  r.micro_steps = fmean(micro);
  r.overrun_s = fmean(overrun);
  r.device = ctx.device;
  r.readings = ctx.readings;

  // Every rate is the window's own work over the window's own wall clock (sum over sum).
  if (wall_s > 0) {
    TrainThroughput t;
    t.samples_per_s = static_cast<double>(samples_total) / wall_s;
    t.samples = fmean(samples);
    t.wall_s = wall_s;
    t.dp = ctx.dp;
    price_window(measured, ctx.model, ctx.attention_enabled, ctx.coef_override, ctx.world_size,
                 ctx.dtype_override, ctx.peak_tflops, t);
    r.throughput = t;
  }
  if (ctx.total_steps != 0) {
    std::int64_t remaining = std::max<std::int64_t>(0, ctx.total_steps - window.back().step - 1);
    r.eta_s = static_cast<double>(remaining) * r.step_s_p50;
  }
  return r;
}

}  // namespace vxperf::internal
