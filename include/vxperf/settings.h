// Settings: what the VIDEOX_PERF* environment variables say (or a program's Config, see
// vxperf/config.h, with the environment winning).
//
// Thread safety: Settings is a plain value; parse once, then share read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/cost_model.h"

namespace vxperf {

// Looks up one environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv).
EnvLookup process_env();

struct Settings {
  int level = 0;               // VIDEOX_PERF: 0 off, 1 summaries, 2 also per-step dump
  std::string json_path;       // VIDEOX_PERF_JSON: records file ("" = none)
  std::int64_t warmup = 0;     // VIDEOX_PERF_WARMUP: leading requests/steps kept out of summaries
  bool log_all_ranks = false;  // VIDEOX_PERF_RANKS: "all" logs from every rank, else rank 0
  std::optional<double> peak_tflops;  // VIDEOX_PERF_PEAK_TFLOPS: per-device peak override
  // VIDEOX_PERF_PEAK_TFLOPS=auto: the peak is a measured one (vxperf/peak.h), when a front end
  // measured it or the cache holds it; the table's otherwise.
  bool measure_peak = false;
  // VIDEOX_PERF_DTYPE: the dtype the matmuls run in, which picks the peak; unset: the model's
  // (as a front end read it), else bf16.
  std::optional<Dtype> dtype;
  // VIDEOX_PERF_ATTN_DENSITY: share of the self-attention square computed (causal ~0.5), in
  // (0, 1]; overrides what models declare. Unset: each model's own, else 1.
  std::optional<double> attn_density;
  std::int64_t dit_params = 0;  // VIDEOX_PERF_DIT_PARAMS: transformer parameter override (0 = none)
  bool attn_flops = true;       // VIDEOX_PERF_FLOPS_ATTN: 0 prices linear layers only
  std::int64_t every = 50;      // VIDEOX_PERF_EVERY: training steps per window (at least 1)
  std::int64_t total_steps = 0;  // VIDEOX_PERF_TOTAL_STEPS: planned steps for the ETA (0 = none)
  std::optional<double>
      flops_coef;          // VIDEOX_PERF_FLOPS_COEF: overrides both MFU and HFU multipliers
  std::string trace_path;  // VIDEOX_PERF_TRACE: raw event script of the live run ("" = none)
  int sp = 0;              // VIDEOX_PERF_SP: sequence/context-parallel degree (0 = not given)
  int tp = 0;              // VIDEOX_PERF_TP: tensor-parallel degree (0 = not given)
  int dp_shard = 0;        // VIDEOX_PERF_DP_SHARD: data-parallel ranks one model is sharded over
  std::string prometheus;  // VIDEOX_PERF_PROMETHEUS: "[host:]port" to serve /metrics on ("" = none)
  bool xrank = false;      // VIDEOX_PERF_XRANK: 1 exchanges window numbers across ranks (live view)
  double xrank_timeout_s = 30;  // VIDEOX_PERF_XRANK_TIMEOUT: seconds an exchange may take
  std::optional<double> fps;    // VIDEOX_PERF_FPS: a request's video's fps where it says none
  // VIDEOX_PERF_RUN_ID: a name for this run of the job (a launcher's attempt: Slurm's job id and
  // restart count, say), carried by every record; "" none.
  std::string run_id;
  bool otel = false;  // VIDEOX_PERF_OTEL: 1 makes OpenTelemetry spans of requests (Python)
  // VIDEOX_PERF_TRACKERS: 1 logs each training window through the training framework's
  // experiment trackers (accelerate's log()), 0 never; nullopt: unset, the program decides.
  std::optional<bool> trackers;
  // ---- GPU observability (#20) ----------------------------------------------------------------
  // VIDEOX_PERF_NVML: 0 turns off the NVML readings (energy, power, clocks, temperature,
  // throttling) of requests and windows on CUDA devices; on by default where the library loads.
  bool nvml = true;
  // VIDEOX_PERF_NVTX: 1 emits NVTX ranges (request, stage, step, micro-step, phase) for Nsight
  // Systems; off by default.
  bool nvtx = false;
  // ---- end GPU observability -------------------------------------------------------------------
  // ---- energy and capture ranges (#28) ---------------------------------------------------------
  // VIDEOX_PERF_POWERCAP: 0 turns off the host's CPU package and DRAM energy (cpu_energy_j, from
  // /sys/class/powercap) of requests and windows on CUDA devices; on by default where readable.
  bool powercap = true;
  // VIDEOX_PERF_PROFILE: "steps:A-B" (training) or "requests:A-B" (inference), numbered as the
  // records number them from 0, both ends included ("steps:7": one step). The CUDA profiler
  // (cuProfilerStart / cuProfilerStop) captures exactly those, and a torch profiler handed to
  // vxperf.profile_range() is started and stopped with it. kNone: no range.
  struct CaptureRange {
    enum class Kind : std::uint8_t { kNone, kSteps, kRequests };
    Kind kind = Kind::kNone;
    std::int64_t first = 0, last = 0;
  };
  CaptureRange profile;
  // ---- end energy and capture ranges -----------------------------------------------------------

  bool enabled() const { return level > 0; }

  // Parses every variable over `defaults`: a variable that is set replaces its field, one that is
  // unset (or empty) leaves the default. A value that does not parse (or is out of range) leaves
  // the default in place and adds one human-readable line to `problems`. When VIDEOX_PERF is off,
  // only that variable is read: nothing else matters to a disabled run.
  static Settings parse(const EnvLookup& env, std::vector<std::string>* problems,
                        const Settings& defaults);
  static Settings parse(const EnvLookup& env, std::vector<std::string>* problems) {
    return parse(env, problems, Settings{});
  }

  // These settings written back as the VIDEOX_PERF* variables that reproduce them (for the
  // config line of a trace; the file paths are left out, and so are VIDEOX_PERF_NVML,
  // VIDEOX_PERF_NVTX, VIDEOX_PERF_POWERCAP and VIDEOX_PERF_PROFILE: a replay reads its readings
  // from the trace and emits no ranges).
  std::vector<std::pair<std::string, std::string>> to_env() const;
};

}  // namespace vxperf
