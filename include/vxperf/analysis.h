// Offline analysis of what vxperf writes: records files (JSON lines) summarized into a report,
// event scripts converted to Chrome trace-event files, and the FLOPs of a Wan2.1-style DiT from
// its dimensions. Used by the `report`, `trace` and `flops` commands, their tests and fuzzers.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vxperf/presets.h"
#include "vxperf/records.h"
#include "vxperf/xrank.h"

namespace vxperf::analysis {

// ---- records -----------------------------------------------------------------------------------

// Malformed input: "FILE:LINE: message" (line 0 when the file itself is the problem).
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, int line, const std::string& message)
      : std::runtime_error(file + ":" + (line > 0 ? std::to_string(line) + ":" : "") + " " +
                           message),
        file_(file),
        line_(line) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

struct RecordSet {
  std::vector<RequestRecord> requests;
  std::vector<TrainWindowRecord> windows;
  std::vector<std::string> warnings;  // "FILE:LINE: torn last line skipped"
};

// Appends the records of one JSON-lines stream. A last line without its newline that is not
// complete JSON (a writer killed mid-line) is skipped with a warning; anything else malformed,
// and running out of memory, throws InputError.
void read_records(std::istream& in, const std::string& name, RecordSet& into);
// Reads every file ("-" is standard input). Throws InputError (a directory included).
RecordSet read_record_files(const std::vector<std::string>& paths);

// ---- report ------------------------------------------------------------------------------------

struct StageShare {
  std::string name;
  double mean_ms = 0;  // time in the stage per request
  double calls = 0;    // calls per request
  double share = 0;    // of end-to-end time
};

struct RequestSummary {
  std::int64_t count = 0;   // requests summarized (warmup ones excluded unless all are warmup)
  std::int64_t warmup = 0;  // warmup requests seen
  double e2e_p50_s = 0, e2e_p95_s = 0, e2e_max_s = 0, e2e_mean_s = 0;
  std::vector<StageShare> stages;  // by mean time, largest first
  std::optional<double> tflops, mfu;
  std::optional<std::uint64_t> peak_alloc_bytes, peak_reserved_bytes;
  // What the MFU rests on, from the latest priced request: its parameters, the per-device peak,
  // where that came from ("table", "env", "measured") and the dtype it is for.
  std::optional<std::int64_t> params;
  std::optional<double> peak_tflops;  // per device
  std::string peak_source, dtype;
  // Transformer calls skipped outright and the full forwards all calls came to, over the measured
  // requests; present when some call was skipped or cut short.
  std::optional<std::int64_t> skipped_fwd;
  std::optional<double> effective_fwd;
  std::int64_t transformer_calls = 0;
};

struct TrainSummary {
  std::int64_t windows = 0;
  std::int64_t steps = 0;  // global steps measured (the most any rank reported)
  std::int64_t warmup_excluded = 0;
  // From the windows' percentiles, weighted by their step counts (per-step times are not in the
  // records): the weighted median of window medians, the weighted p95 of window p95s.
  double step_p50_s = 0, step_p95_s = 0;
  std::vector<std::pair<std::string, double>> phase_s;      // mean seconds per step
  std::vector<std::pair<std::string, double>> phase_share;  // of the phases' sum
  std::optional<double> samples_per_s;                      // local, mean over ranks
  std::optional<double> samples_per_s_global;               // local times dp
  int dp = 1;
  std::optional<double> tflops, hw_tflops, mfu, hfu;  // weighted by priced seconds
  std::optional<std::uint64_t> peak_alloc_bytes, peak_reserved_bytes;
  std::optional<double> eta_s;  // from the latest window
  // As RequestSummary's, from the latest priced window (trainable too).
  std::optional<std::int64_t> params, trainable;
  std::optional<double> peak_tflops;
  std::string peak_source, dtype;
  std::optional<std::int64_t> skipped_fwd;
  std::optional<double> effective_fwd;
};

struct RankSummary {
  int rank = 0;
  std::int64_t requests = 0;
  std::optional<double> e2e_p50_s;
  std::int64_t windows = 0;
  std::int64_t steps = 0;
  std::optional<double> step_p50_s, step_p95_s;
  std::optional<double> samples_per_s, tflops, mfu;
  std::optional<std::uint64_t> peak_alloc_bytes;
  std::vector<std::pair<std::string, double>> phase_s;  // mean seconds per step
  // Seconds per step above the ranks' per-phase medians (the straggler rule's measure).
  std::optional<double> excess_s;
};

struct Report {
  std::vector<std::string> sources;
  std::vector<std::string> warnings;
  std::optional<RequestSummary> requests;
  std::optional<TrainSummary> training;
  std::vector<RankSummary> ranks;  // by rank
  // By the core's rule (vxperf::find_stragglers in vxperf/xrank.h, the live view's too): ranks
  // whose time per step above the ranks' per-phase medians exceeds kStragglerMargin of the median
  // step time (the median e2e time for inference-only runs).
  std::vector<int> stragglers;
  std::vector<std::string> straggler_phases;  // per straggler: where most of its excess is
  std::optional<double> rank_median_s;        // the median across ranks they were measured against
};

using vxperf::kStragglerMargin;

Report build_report(const RecordSet& records, std::vector<std::string> sources = {});
std::string format_report(const Report& report);
std::string report_json(const Report& report);  // one JSON object, pretty-printed
// One self-contained HTML page with inline SVG charts.
std::string report_html(const Report& report, const RecordSet& records);

// A report's headline numbers, flattened for comparison.
struct Metric {
  std::string name;
  double value = 0;
  bool lower_is_better = true;
  std::string unit;  // "s", "ms", "%", "TFLOPS", "GiB", "1/s", ""
};
std::vector<Metric> report_metrics(const Report& report);

struct MetricChange {
  std::string name;
  std::optional<double> a, b;
  std::optional<double> change;  // (b - a) / |a|
  std::string direction;         // "better", "worse", "same" (within 0.5%), "n/a"
  std::string unit;
};
std::vector<MetricChange> compare_reports(const Report& a, const Report& b);
std::string format_comparison(const std::string& a_name, const std::string& b_name,
                              const std::vector<MetricChange>& changes);
std::string comparison_json(const std::string& a_name, const std::string& b_name,
                            const std::vector<MetricChange>& changes);

// ---- chrome trace ------------------------------------------------------------------------------

// Converts event scripts (one per rank, say) into one Chrome trace-event JSON document: a process
// per rank, a complete event per stage, phase, clip, optimizer call, micro-step, request and step,
// memory peaks as counters. Throws vxperf::ScriptError (from event_script.h) with the line.
class TraceBuilder {
 public:
  TraceBuilder();
  ~TraceBuilder();
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // A torn last line (no newline, not complete JSON) is skipped with a warning; an empty script
  // is an error, as for replay.
  void add_script(std::istream& script, const std::string& name);
  // "NAME: line N: torn last line skipped (not complete JSON)", one per script that had one.
  const std::vector<std::string>& warnings() const;
  std::string json() const;
  std::int64_t event_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- flops -------------------------------------------------------------------------------------

// The presets and their dimensions are the core's (vxperf/presets.h), shared with `vxperf demo`.
using vxperf::dit_preset;
using vxperf::dit_preset_names;
using vxperf::DitDims;

// Exact parameter count (formula in flops.cpp).
std::int64_t dit_params(const DitDims& dims);

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
