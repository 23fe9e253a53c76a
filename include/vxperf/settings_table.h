// Every VIDEOX_PERF* variable, one row each: its name, the kind of value it takes, its default as
// the environment table of docs/SETTINGS.md states it, and a one-line summary. What `vxperf env`
// lists; a test holds it against what Settings::parse reads and against that table, so a variable
// added to the parser without a row (or a row the docs lack) fails.
//
// Thread safety: constant data.
#pragma once

#include <array>

namespace vxperf {

struct SettingRow {
  const char* name;
  const char* takes;         // the kind of value
  const char* default_text;  // as docs/SETTINGS.md's table says it
  const char* summary;
};

inline constexpr std::array<SettingRow, 27> kSettingRows = {{
    {"VIDEOX_PERF", "0, 1 or 2", "off", "the level: a line per request / window; 2: every step"},
    {"VIDEOX_PERF_JSON", "a path", "none", "one JSON record per request / window appended here"},
    {"VIDEOX_PERF_WARMUP", "a count", "0", "leading requests / steps kept out of the summaries"},
    {"VIDEOX_PERF_RANKS", "0 or all", "0", "which ranks log lines (every rank writes records)"},
    {"VIDEOX_PERF_PEAK_TFLOPS", "a number or auto", "table",
     "the per-device peak MFU is taken against; auto: measured"},
    {"VIDEOX_PERF_DTYPE", "bf16, fp16, fp8, tf32 or fp32",
     "autocast's at the priced call, else accelerate's mixed precision, else the model's "
     "parameters', else bf16",
     "the dtype the matmuls run in, which picks the peak"},
    {"VIDEOX_PERF_ATTN_DENSITY", "a number in (0, 1]", "1",
     "share of the self-attention square computed"},
    {"VIDEOX_PERF_DIT_PARAMS", "a count", "declared", "the transformer's exact parameter count"},
    {"VIDEOX_PERF_FLOPS_ATTN", "0 or 1", "1", "0: price the linear layers only"},
    {"VIDEOX_PERF_EVERY", "a count", "50", "training: global steps per window"},
    {"VIDEOX_PERF_TOTAL_STEPS", "a count", "none", "training: planned steps, for the ETA"},
    {"VIDEOX_PERF_FLOPS_COEF", "a number", "auto", "training: FLOPs multiplier per forward"},
    {"VIDEOX_PERF_TRACE", "a path", "none", "the run's raw events, for vxperf replay"},
    {"VIDEOX_PERF_SP", "a count", "read, else 1", "context/sequence-parallel degree"},
    {"VIDEOX_PERF_TP", "a count", "read, else 1", "tensor-parallel degree"},
    {"VIDEOX_PERF_DP_SHARD", "a count", "read, else 1",
     "data-parallel ranks one model copy is sharded over"},
    {"VIDEOX_PERF_XRANK", "0 or 1", "0", "the live cross-rank view"},
    {"VIDEOX_PERF_XRANK_TIMEOUT", "seconds", "30", "how long one cross-rank exchange may take"},
    {"VIDEOX_PERF_TRACKERS", "0 or 1", "the program's `trackers=` (off)",
     "training windows to accelerate's experiment trackers"},
    {"VIDEOX_PERF_NVML", "0 or 1", "1 (where the library loads)",
     "energy, power, clocks and throttling from NVML"},
    {"VIDEOX_PERF_POWERCAP", "0 or 1", "1 (where readable)",
     "the host's CPU package and DRAM energy from powercap"},
    {"VIDEOX_PERF_NVTX", "0 or 1", "0", "NVTX ranges for Nsight Systems"},
    {"VIDEOX_PERF_PROFILE", "steps:A-B or requests:A-B", "none",
     "the steps or requests the CUDA profiler captures (Nsight)"},
    {"VIDEOX_PERF_PROMETHEUS", "[host:]port", "none", "serve the metrics for Prometheus"},
    {"VIDEOX_PERF_FPS", "a number", "none",
     "frames per second of the videos requests make, where a call says its frames but not its fps"},
    {"VIDEOX_PERF_OTEL", "0 or 1", "0",
     "Python: each request an OpenTelemetry span tree (opentelemetry-api)"},
    {"VIDEOX_PERF_RUN_ID", "a name", "none",
     "names this run (attempt) of the job; every record carries it"},
}};

}  // namespace vxperf
