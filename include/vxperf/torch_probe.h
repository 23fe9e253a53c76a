// The LibTorch adapter's peak probe (VIDEOX_PERF_PEAK_TFLOPS=auto, `vxperf calibrate`): dense
// matmuls timed on one device in one dtype, kept in the peak cache of vxperf/peak.h. No Torch
// header: implemented in the vxperf_torch library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vxperf/cost_model.h"
#include "vxperf/peak.h"

namespace vxperf::torch {

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

}  // namespace vxperf::torch
