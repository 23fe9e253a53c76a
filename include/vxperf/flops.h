// `vxperf flops`: the parameters, tokens, FLOPs and ideal time of a Wan2.1-style DiT from its
// dimensions, priced by the same cost model as the engine's records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/cost_model.h"
#include "vxperf/model.h"
#include "vxperf/presets.h"

namespace vxperf::analysis {

// The presets and their dimensions are the core's (vxperf/presets.h), shared with `vxperf demo`.
using vxperf::dit_preset;
using vxperf::dit_preset_names;
using vxperf::DitDims;

// Exact parameter count (formula in flops.cpp).
std::int64_t dit_params(const DitDims& dims);
// The model description the engine would price this DiT by (vxperf/model.h): its parameters, its
// attention widths (per block a self- and a cross-attention of query width dim) and its text length.
ModelInfo dit_model(const DitDims& dims);

struct LatentShape {
  std::int64_t frames = 0, height = 0, width = 0;  // latent grid before patching
  std::int64_t tokens = 0;
};
// Throws std::invalid_argument on sizes that give no tokens.
LatentShape dit_tokens(const DitDims& dims, std::int64_t width, std::int64_t height,
                       std::int64_t frames);

struct FlopsQuery {
  std::int64_t width = 0, height = 0, frames = 0;
  std::int64_t batch = 1;
  bool cfg = true;  // classifier-free guidance: two forwards per sample per step
  std::int64_t steps = 50;
  std::optional<double> peak_tflops;  // per device
  std::optional<double> mfu;          // assumed utilization for the realistic time
  int devices = 1;
  Dtype dtype = Dtype::kBf16;  // what the peak is for (said in the output when not bf16)
  double density = 1.0;        // share of the self-attention square computed (causal ~0.5)
  double skip_ratio = 0.0;     // share of the forwards a cache skips (priced at nothing)
};

struct FlopsEstimate {
  std::int64_t params = 0;
  LatentShape latent;
  double flops_linear = 0, flops_self_attn = 0, flops_cross_attn = 0;
  double flops_per_forward = 0;  // one sample
  double attention_share = 0;
  std::int64_t forwards_per_request = 0;  // batch x (2 with CFG) x steps
  double computed_forwards = 0;           // those not skipped: forwards x (1 - skip ratio)
  double flops_per_request = 0;           // of the computed forwards
  std::optional<double> ideal_s;          // at peak
  std::optional<double> at_mfu_s;         // at the given MFU
};

FlopsEstimate estimate_flops(const DitDims& dims, const FlopsQuery& query);
std::string format_flops(const DitDims& dims, const FlopsQuery& query, const FlopsEstimate& e);
std::string flops_json(const DitDims& dims, const FlopsQuery& query, const FlopsEstimate& e);

}  // namespace vxperf::analysis
