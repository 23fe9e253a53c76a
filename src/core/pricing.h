// Pricing: a request's or a window's FLOPs, rate and MFU from the cost model (vxperf/cost_model.h).
// Pure functions of numbers; the engine and the trainer gather the numbers, these do the sums.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/records.h"

namespace vxperf::detail {

// The per-device peak, asked only when something was priced (it may query the device).
using PeakFn = std::function<std::optional<double>()>;

// One declared transformer and the calls of its stage in one request.
struct PricedStage {
  std::int64_t params = 0;
  std::optional<AttentionWidths> attention;  // usable widths (see usable_widths)
  std::int64_t text_tokens = 0;
  bool called = false;      // its stage ran in this request
  std::int64_t tokens = 0;  // per sample, from its first priced call; 0: unknown
  std::int64_t batch = 1;
  std::int64_t calls = 0;
  double total_ms = 0;
};

// The request's "dit" object: FLOPs over the transformer calls' time, as a job rate against the
// peak of every device (`devices`). nullopt when no call could be priced.
std::optional<DitThroughput> price_request(const std::vector<PricedStage>& stages, int devices,
                                           const PeakFn& per_device_peak);

// The trained model, as the trainer knows it.
struct TrainedModel {
  std::int64_t params = 0;
  std::int64_t trainable = 0;
  bool checkpointing = false;
  std::optional<AttentionWidths> attention;  // usable widths
  std::int64_t text_tokens = 0;
};

// One measured step of a window: what its forwards ran over and how long it took.
struct PricedStep {
  std::optional<std::int64_t> tokens;
  std::int64_t samples = 0;
  double total_s = 0;
};

// Fills the priced half of `t` (samples_per_s, wall_s and dp already set) from the steps that
// carried a token count: sums over sums, local work times `t.dp` as the job rate, against the
// peak of `devices` devices. Leaves `t` unpriced when nothing could be priced.
void price_window(const std::vector<PricedStep>& steps, const TrainedModel& model,
                  bool attention_enabled, std::optional<double> coef_override, int devices,
                  const PeakFn& per_device_peak, TrainThroughput& t);

}  // namespace vxperf::detail
