// What the LibTorch adapter reads off a model (vxperf/torch.h reads live modules), the TorchScript
// file reader behind `vxperf inspect`, and a reading's text and JSON. No Torch header: implemented
// in the vxperf_torch library, included by the command so that its sources build fast.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/cost_model.h"
#include "vxperf/model.h"

namespace vxperf::torch {

// Latent patch size (frames, height, width).
using PatchSize = std::array<std::int64_t, 3>;

// What was read off a model tree.
struct ModelReading {
  std::int64_t params = 0;              // unsharded parameter count
  std::int64_t trainable = 0;           // parameters with requires_grad (unsharded)
  AttentionWidths attention;            // query widths split self/cross; modules == 0: none found
  std::int64_t text_tokens = 0;         // `text_len`, 0 when not advertised
  std::optional<PatchSize> patch_size;  // `patch_size`, when advertised
  bool checkpointing = false;           // a submodule says gradient_checkpointing
  std::optional<Dtype> dtype;           // the most common floating dtype of its parameters

  // As the engine wants it: attention only when some self-attention was found.
  ModelInfo info() const;
};

// How the program runs the model: a sharded model (FSDP-style flat even shards) holds
// 1/world_size of its parameters on each rank, so the counts are multiplied back.
struct ReadOptions {
  int world_size = 1;
  bool sharded = false;
};

// Loads a TorchScript file (torch::jit::load) on the CPU and reads it. Throws std::exception
// with a one-line message when the file cannot be loaded.
ModelReading read_model_file(const std::string& path, const ReadOptions& options = {});

// One line per field, for people.
std::string format_reading(const ModelReading& reading);
// {"params":..,"trainable":..,"attn":{"self":..,"cross":..,"modules":..},"text_tokens":..,
//  "patch_size":[f,h,w] or null,"checkpointing":..}
std::string reading_json(const ModelReading& reading);

}  // namespace vxperf::torch
