// The LibTorch adapter's entry points that need no Torch header: what a model reading holds, the
// TorchScript file reader behind `vxperf inspect`, and the embedded demo behind `vxperf demo`.
// Implemented in the vxperf_torch library; the CLI includes only this so that its translation units
// stay fast to build.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/cost_model.h"
#include "vxperf/engine.h"

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

// ---- the embedded text-to-video workload
// ---------------------------------------------------------

struct DemoOptions {
  std::string preset;          // "" (tiny default) or "wan2.1-1.3b"
  std::string device = "cpu";  // "cpu" or "cuda" / "cuda:N"
  std::string dtype = "f32";   // "f32" or "bf16"
  int width = 64, height = 64, frames = 9;
  int steps = 4;    // sampler steps per request
  bool cfg = true;  // classifier-free guidance (a batch of 2 per transformer call)
  double guidance = 5.0;
  int requests = 2;
  int train_steps = 8;  // optimizer steps; 0 skips training
  bool lora = false;    // LoRA adapters on the attention projections, base frozen
  int lora_rank = 4;
  int accum = 2;        // micro-steps per optimizer step
  std::string out_dir;  // "" = a new folder named after the time
  bool metrics = true;
  std::uint64_t seed = 0;
  int threads = 2;  // intra-op threads (fixed so that the digest is reproducible)
  // Model size; 0 keeps the preset's value.
  int dim = 0, layers = 0, heads = 0, ffn = 0, text_len = 0;
};

struct DemoResult {
  std::string digest;   // hex FNV-1a 64 of the last video and the trained weights
  std::string out_dir;  // where records.jsonl and trace.jsonl went ("" with metrics off)
  double seconds = 0;
};

// Runs the demo. Throws std::invalid_argument on bad options, other std::exception on failure.
DemoResult run_demo(const DemoOptions& options);

}  // namespace vxperf::torch
