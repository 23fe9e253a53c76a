// Pricing: a request's or a window's FLOPs, rate and MFU from the cost model (vxperf/cost_model.h).
// Pure functions of numbers; the engine and the trainer gather the numbers, these do the sums.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/model.h"
#include "vxperf/peak.h"
#include "vxperf/records.h"
#include "vxperf/settings.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

// A per-device peak and where it came from.
struct ResolvedPeak {
  std::optional<double> tflops;
  PeakSource source = PeakSource::kTable;
};
// The per-device peak for a dtype, asked only when something was priced (it may query the
// device).
using PeakFn = std::function<ResolvedPeak(Dtype)>;

// The dtype a price is against: the variable's, else the model's, else bf16 (the reference's).
Dtype priced_dtype(const std::optional<Dtype>& override_dtype, const std::optional<Dtype>& model);
// The attention density a model is priced with: the variable's, else its own when valid, else 1.
double priced_density(const std::optional<double>& override_density, double declared);

// A model as it is priced: VIDEOX_PERF_DIT_PARAMS over its parameters, its widths only when
// usable (and its text length only with them), VIDEOX_PERF_ATTN_DENSITY over its density. The
// rest (trainable, checkpointing, dtype) as declared.
ModelInfo priced_model(const ModelInfo& declared, const Settings& settings);

// Calls of one stage at one length and batch.
struct CallGroup {
  std::int64_t tokens = 0;  // per sample
  std::int64_t batch = 1;
  std::int64_t calls = 0;
  double effective = 0;        // the full forwards they came to (the sum of their fractions)
  double attn_effective = -1;  // ... their attention products' (a call said its own); <0: as that
};

// One declared transformer, as priced (priced_model; its dtype the one its calls ran in when they
// said), and the calls of its stage in one request.
struct PricedStage : ModelInfo {
  bool called = false;      // its stage ran in this request
  std::int64_t tokens = 0;  // per sample, of its first call that said; 0: unknown (not priced)
  std::int64_t batch = 1;
  std::int64_t calls = 0;
  double total_ms = 0;
  std::int64_t skipped_calls = 0;  // calls skipped outright (a fraction of 0)
  // Its calls by length and batch, each priced at its own; empty: every call a full forward at
  // `tokens` x `batch`.
  std::vector<CallGroup> groups;
};

// The request's "dit" object: FLOPs over the transformer calls' time, as a job rate against the
// peak of every device (`devices`). A call that computed part of a forward is priced at that part
// (a skipped one at nothing) while its time still counts. nullopt when no call could be priced.
std::optional<DitThroughput> price_request(const std::vector<PricedStage>& stages, int devices,
                                           const std::optional<Dtype>& dtype_override,
                                           const PeakFn& per_device_peak);

// Fills the priced half of `t` (samples_per_s, wall_s and dp already set) from the measured steps
// that carried a token count: sums over sums, local work times `t.dp` as the job rate, against
// the peak of `devices` devices. A forward that computed part of the model is priced at that
// part, its backward with it. Leaves `t` unpriced when nothing could be priced. `model` as priced
// (priced_model), its trainable count resolved.
void price_window(const std::vector<const StepRecord*>& steps, const ModelInfo& model,
                  bool attention_enabled, std::optional<double> coef_override, int devices,
                  const std::optional<Dtype>& dtype_override, const PeakFn& per_device_peak,
                  TrainThroughput& t);

}  // namespace vxperf::internal
