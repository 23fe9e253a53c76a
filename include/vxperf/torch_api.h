// The LibTorch adapter's entry points that need no Torch header: what a model reading holds and
// the TorchScript file reader behind `vxperf inspect`. Implemented in the vxperf_torch library; the
// CLI includes only this so that its translation units stay fast to build.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/cost_model.h"
#include "vxperf/model.h"
#include "vxperf/peak.h"

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

// ---- measured peaks (vxperf/peak.h) -----------------------------------------------------------

struct ProbeOptions {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  Dtype dtype = Dtype::kBf16;
  // Wall time the probe may spend: no GEMM starts once it is used up (sizing included), so it
  // ends within the budget plus one GEMM round.
  double budget_s = 2.0;
  int rounds = 5;          // timed rounds; the best counts
  int threads = 0;         // CPU intra-op threads for the probe; 0: as LibTorch has them
  std::int64_t max_n = 0;  // largest GEMM size tried; 0: 4096 on a CPU, 8192 on a GPU
};

// What a probe did, beyond its result.
struct ProbeStats {
  int rounds = 0;        // timed rounds run
  double longest_s = 0;  // the longest single GEMM round (sizing included)
};

// Measures dense matmul throughput of one device in one dtype: square GEMMs grown until one takes
// a twenty-fifth of the budget, then the best of a few timed rounds, synchronized on a GPU. fp8
// and (on a CPU) tf32 are not measured; nullopt with `why` then, or when the device is absent.
std::optional<MeasuredPeak> probe_peak(const ProbeOptions& options, std::string* why = nullptr,
                                       ProbeStats* stats = nullptr);
// The cache key of "cpu" (with `threads`, 0: LibTorch's) or "cuda[:N]" (the GPU's name).
std::string peak_device_key(const std::string& device, int threads = 0);
// The cached peak of the device and dtype, else a measured one (then cached); nullopt when neither.
std::optional<Calibration> calibrate(const ProbeOptions& options, bool force = false);
// When the process-wide engine wants a measured peak (VIDEOX_PERF_PEAK_TFLOPS=auto), calibrates
// `device` in `dtype` and hands the result to it. Call it before the first timed request or step:
// a probe of a second or two must not land inside one. nullopt when not wanted or not measurable.
std::optional<Calibration> use_measured_peak(const std::string& device, Dtype dtype);

// One line per field, for people.
std::string format_reading(const ModelReading& reading);
// {"params":..,"trainable":..,"attn":{"self":..,"cross":..,"modules":..},"text_tokens":..,
//  "patch_size":[f,h,w] or null,"checkpointing":..}
std::string reading_json(const ModelReading& reading);

}  // namespace vxperf::torch
