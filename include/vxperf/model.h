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
  // The dtype most of its weights are stored in, where a front end read it (fp8 weights cast to
  // bf16 layer by layer, diffusers' layerwise casting): said beside the dtype a record is priced
  // in where the two differ. It never picks the peak.
  std::optional<Dtype> storage_dtype;
  // Share of the self-attention square it computes: 1 dense, about 0.5 causal, the kept share of
  // a block-sparse mask. VIDEOX_PERF_ATTN_DENSITY overrides it.
  double attn_density = 1.0;
};

// What one priced call's blocks computed, as a front end read it from the blocks' own inputs while
// they ran (the Python package does, for every transformer whose blocks it can see): the call's
// tokens per sample and rows, and the share of a full forward at those that its blocks ran (0: no
// block ran, a cache hit; 0.5: every block on half the rows, a skipped guidance branch), and of
// its attention products alone where that differs (a cache that skips the main blocks and runs
// side blocks: VACE's context blocks run their attention over other widths).
struct ForwardWork {
  std::int64_t tokens = 0;    // per sample; 0: not read (the call keeps what it opened with)
  std::int64_t batch = 0;     // rows; 0: not read
  double fraction = -1;       // <0: not read
  double attn_fraction = -1;  // of the attention FLOPs; <0: as `fraction`
};

}  // namespace vxperf
