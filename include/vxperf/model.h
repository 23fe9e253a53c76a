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
};

}  // namespace vxperf
