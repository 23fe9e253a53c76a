// What the engine knows of a transformer model, to price its forwards.
#pragma once

#include <cstdint>
#include <optional>

#include "vxperf/cost_model.h"

namespace vxperf {

struct ModelInfo {
  std::int64_t params = 0;                   // unsharded parameter count
  std::int64_t trainable = -1;               // training only; -1: all of them
  bool checkpointing = false;                // training only: gradient checkpointing on
  std::optional<AttentionWidths> attention;  // nullopt when the widths could not be read
  std::int64_t text_tokens = 0;              // padded text length of cross-attention, 0 unknown
  // The dtype its matmuls run in (its parameters'), which picks the peak; nullopt: unknown (bf16
  // unless VIDEOX_PERF_DTYPE says). Under autocast the parameters say fp32 while the matmuls run
  // in bf16: a front end says that at the call (note_compute_dtype), which wins over this.
  std::optional<Dtype> dtype;
  // Share of the self-attention square it computes: 1 dense, about 0.5 causal, the kept share of
  // a block-sparse mask. VIDEOX_PERF_ATTN_DENSITY overrides it.
  double attn_density = 1.0;
};

}  // namespace vxperf
