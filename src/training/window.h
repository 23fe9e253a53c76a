// Window aggregation: a window's settled steps into its record. A pure function of its inputs,
// so that the statistics are tested without a trainer.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pricing/pricing.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

// What a window's record needs beyond its steps.
struct WindowContext {
  double ts = 0;  // wall clock at emission
  int rank = 0;
  int world_size = 1;
  int dp = 1;  // data-parallel degree
  std::optional<ParallelLayout> parallel;  // the record's layout (multi-rank runs)
  std::optional<int> device;
  std::optional<DeviceReadings> readings;  // with a device: what it said over the window
  ModelInfo model;  // as priced (priced_model), its trainable count resolved
  bool attention_enabled = true;
  std::optional<double> coef_override;
  std::int64_t total_steps = 0;         // VIDEOX_PERF_TOTAL_STEPS; 0: no ETA
  std::optional<Dtype> dtype_override;  // VIDEOX_PERF_DTYPE
  PeakFn peak_tflops;                   // per device
};

// Warmup steps are kept out of the statistics, unless the window holds nothing else. `steps`
// must not be empty.
TrainWindowRecord aggregate_window(const std::vector<StepRecord>& steps, const WindowContext& ctx);

}  // namespace vxperf::internal
