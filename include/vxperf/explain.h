// `vxperf explain`: PyTorch-profiler (Kineto) traces read and analysed the way Holistic Trace
// Analysis 0.6.1 analyses them (temporal breakdown, idle time per stream, communication overlap,
// kernel types and kernels, launch statistics, profiler steps; on request its critical path),
// its numbers equal to HTA's on the same files, and joined with vxperf's records: the loss
// waterfall of each vxperf range.
//
// Thread safety: explain_traces() is reentrant; it starts one worker thread per trace file (at most
// ExplainOptions::threads at once) and joins them before it returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vxperf::explain {

// Microseconds, the traces' unit. Sums are integers after HTA's rounding; they stay doubles so that
// a file HTA leaves unrounded (integer ts, fractional dur) keeps its fractions as HTA does.
struct Temporal {
  double kernel_time_us = 0;   // last device end - first device start, all streams
  double idle_time_us = 0;     // kernel_time - |union of all device rows|
  double compute_time_us = 0;  // |union of computation rows|
  double non_compute_time_us = 0;
  // Percents of kernel_time rounded to 2 decimals as numpy.round does; absent when it is 0.
  std::optional<double> idle_pct, compute_pct, non_compute_pct;
};

// Gaps between consecutive kernels, copies and sets of one stream, by HTA's three causes.
struct StreamIdle {
  std::int64_t stream = 0;
  double host_wait_us = 0, kernel_wait_us = 0, other_us = 0;              // rounded to 2 decimals
  std::optional<double> host_wait_ratio, kernel_wait_ratio, other_ratio;  // absent: no idle time
};

// One row of HTA's per-kernel table: a kernel name (or "others") of one type on one rank.
struct KernelStats {
  std::string name;
  std::string type;        // COMPUTATION, COMMUNICATION, MEMORY
  std::int64_t count = 0;  // device rows (for "others": names)
  double sum_us = 0, max_us = 0, min_us = 0, mean_us = 0, std_us = 0;
};

struct LaunchStats {
  std::int64_t n_events = 0;             // launch calls paired with their device rows
  std::int64_t n_long_runtime = 0;       // launch call > 50 us
  std::int64_t n_long_launch_delay = 0;  // device start - launch end > 100 us
  std::int64_t n_short_gpu = 0;          // launch <= 50 us and the device row shorter than it
};

// The rows of a priced stage's calls by their index within the request: kind "denoising_step" in
// the JSON (its name kept), shown as what they are, one transformer call each ("transformer call
// #3"): a denoising step is one call, or two with classifier-free guidance run as two calls.
inline std::string call_label(const std::string& range, std::int64_t index) {
  return range + " call #" + std::to_string(index);
}

// One vxperf range's device span split into parts that add up to it exactly (seconds).
struct WaterfallRow {
  std::string range;  // the range as it is shown: "denoise", "step" (index), "forward", ...
  std::string kind;  // "request", "stage", "denoising_step" (a call: call_label), "train_step", ...
  std::int64_t step_index = -1;   // for a priced stage's calls: which call (0-based)
  std::int64_t count = 0;         // ranges aggregated
  double host_s = 0;              // the ranges' own (host) duration
  double span_s = 0;              // first start to last end of the device work they launched
  std::optional<double> ideal_s;  // its FLOPs at the priced peak; absent when unknown
  double kernel_excess_s = 0;     // computation beyond ideal (all computation without FLOPs)
  double exposed_comm_s = 0, memory_s = 0;
  double idle_host_wait_s = 0, idle_kernel_wait_s = 0, idle_other_s = 0;
  double other_s = 0;  // device time of rows of none of the three types with nothing else running
  std::optional<double> flops;
  std::optional<double> mfu;  // ideal_s / span_s
};

// HTA's critical path of one instance (or range of instances) of an annotation on one rank:
// critical_path_analysis(rank, annotation, instance_id), then summary() and
// get_critical_path_breakdown() on the graph, as HTA 0.6.1 gives them (docs/EXPLAIN.md, "The
// critical path").
struct CriticalPathBound {
  std::string bound_by;       // HTA's bound type; "" for dependency and sync edges
  double us = 0;              // the sum of its path edges' durations
  std::optional<double> pct;  // of the summary's total (absent when that is 0)
};

// One of the events on the path that cost most: its path edges attributed to it, of one bound type.
struct CriticalPathEvent {
  std::int64_t index = 0;  // position in traceEvents
  std::string name;        // its full name
  std::string bound_by;
  double us = 0;
  std::int64_t edges = 0;
};

struct CriticalPathInstance {
  std::int64_t first = 0, last = 0;  // HTA's instance_id: (first, last) inclusive
  std::string row;                   // the first annotation row selected ("ProfilerStep#3")
  std::string row_category;          // its category (a GPU-side copy is "gpu_user_annotation")
  // The window, in the file's own microseconds; absent when nothing is selected.
  std::optional<double> window_begin_us, window_end_us;
  // What HTA returns: "ok"; "None" (no such annotation); "raises" (an exception, named in `why`);
  // "False" (critical_path() fails: a sync edge inside one stream, a cycle); "unmodelled" (a case
  // HTA's graph takes in a way vxperf does not reproduce, said in `why`).
  std::string hta = "ok";
  std::string why;        // one line when hta is not "ok"
  bool has_path = false;  // the numbers below are given (hta "ok", or a CPU-only window: `why`)
  double length_us = 0;   // networkx's path length (an edge of weight <= -1 counts 0)
  double summary_total_us = 0;  // the sum of the path edges' own durations (summary()'s total)
  std::int64_t path_nodes = 0;
  std::vector<CriticalPathBound> breakdown;   // summary(), by bound type ("" first)
  std::map<std::string, std::int64_t> edges;  // path edges by HTA's type string
  std::vector<CriticalPathEvent> top_events;  // at most 10, the costliest first
};

struct RankCriticalPath {
  std::string annotation;    // "" : the whole trace
  bool sync_events = false;  // the traces hold cuda_sync events (else HTA warns: no sync edges)
  std::vector<CriticalPathInstance> instances;
  std::int64_t instances_not_analysed = 0;  // past CriticalPathRequest::max_instances
};

// vxperf's own replay (`--replay`, `--what-if`; docs/EXPLAIN.md, "The replay"): a dependency
// graph of every host thread and stream in order, launches, synchronizations, CUDA events and the
// gaps between, each edge its measured time, replayed to give each range's span again; the
// critical path of each range by what bounds it; the graph edited and replayed for what-ifs.

// One edit of the graph: `host`, `comm`, `copies`, `peak`, `kernel:REGEX=FACTOR`, `steps:K`.
struct WhatIfEdit {
  enum class Kind { kHost, kComm, kCopies, kKernel, kPeak, kSkipSteps };
  Kind kind = Kind::kHost;
  std::string spec;        // as written ("kernel:flash.*=0.7")
  std::string pattern;     // kKernel: the regex a kernel's name is searched with
  double factor = 1;       // kKernel: its duration is multiplied by this
  std::int64_t steps = 0;  // kSkipSteps: how many denoising steps of each request are skipped
};

// One what-if (`--what-if=SPEC`): one edit, or several joined by commas ("peak,host"), all
// applied together in one replay.
struct WhatIfSpec {
  std::string spec;               // as written
  std::vector<WhatIfEdit> edits;  // in the order written, each named once
};

// An edit, or edits joined by ',' ("peak,host"; a comma inside a kernel's REGEX stays its own
// unless an edit's name follows it). Throws std::invalid_argument with a line saying what is
// wrong.
WhatIfSpec parse_what_if(const std::string& spec);
// What `--what-if` alone asks for: host, comm, copies, peak, steps:1.
std::vector<WhatIfSpec> standard_what_ifs();

struct ReplayRequest {
  std::vector<WhatIfSpec> what_ifs;
};

// One waterfall row's ranges replayed (sums over the ranges, seconds).
struct ReplayRow {
  std::string range, kind;  // as the waterfall's row
  std::int64_t step_index = -1;
  std::int64_t count = 0;
  double span_s = 0;      // measured: the device span (the host duration without device work)
  double replayed_s = 0;  // the same from the replay
  double error_pct = 0;   // the largest of its ranges' |replayed - measured| / measured
  // The replay's critical path through each range, by bound type: host, launch_overhead,
  // gpu_compute, gpu_communication, copies, sync_wait, device_idle, data_loading. Sums to
  // replayed_s.
  std::map<std::string, double> path_s;
  std::vector<double> what_if_s;  // predicted span per RankReplay::what_ifs (in that order)
  std::vector<double> stacked_s;  // predicted span after each of RankReplay::stacked (in order)
};

struct WhatIfResult {
  std::string what_if;  // the spec
  bool applies = true;  // false: nothing in the trace for it (no FLOPs, no denoising steps); `why`
  std::string why;
  double span_s = 0;       // the requests' and steps' measured spans, summed
  double predicted_s = 0;  // the same after the edit, each at least its device-busy bound
  double gain_s = 0;       // span_s - predicted_s
};

struct RankReplay {
  std::int64_t nodes = 0, edges = 0, ranges = 0;
  // The largest |replayed - measured| of any row's start or end in the graph (us): 0 up to
  // rounding when the replay reproduces what ran.
  double largest_row_error_us = 0;
  double largest_error_pct = 0;     // over every range
  std::string largest_error_range;  // which ("transformer call #3 of request 0")
  std::vector<ReplayRow> rows;
  std::vector<WhatIfResult> what_ifs;  // in the order asked
  std::vector<std::size_t> ranked;     // what_ifs' indices, the largest gain first
  // The what-ifs stacked greedily (with two that apply or more): the one that gains most, then
  // the one that gains most with it applied, and so on while one gains. Each is a replay of all
  // the edits so far together: its span_s is the previous one's predicted_s (the first's, the
  // measured span), its gain against that.
  std::vector<WhatIfResult> stacked;
};

// What a rank without device events is said to be, once: in its text section, on its page, on
// standard error beside JSON (whose rank has has_device_rows false).
inline constexpr const char* kCpuOnly =
    "the trace has no device activity (a CPU-only profile: record ProfilerActivity.CUDA too for "
    "device time); what it still tells is each range's host time";

struct RankExplanation {
  int rank = 0;
  std::string file;
  bool has_device_rows = true;  // false: a CPU-only profile, host ranges only
  std::vector<std::int64_t> steps;
  Temporal temporal;
  std::vector<StreamIdle> idle_by_stream;
  std::optional<double> comm_comp_overlap_pct;
  std::map<std::string, double> kernel_types;  // this rank's segments by label
  std::vector<KernelStats> kernels;
  LaunchStats launches;
  std::vector<WaterfallRow> waterfall;
  // With records: the trace's `request N` and `step N` ranges that no record holds (by this rank
  // and the number), as runs of consecutive numbers [first, last]. Their waterfall has no FLOPs.
  std::vector<std::pair<std::int64_t, std::int64_t>> requests_without_record, steps_without_record;
  // With ExplainOptions::critical_path.
  std::optional<RankCriticalPath> critical_path;
  // With ExplainOptions::replay.
  std::optional<RankReplay> replay;
};

struct Explanation {
  std::vector<RankExplanation> ranks;              // by rank
  std::map<std::string, double> kernel_types;      // summed over ranks, as HTA does
  std::map<std::string, double> kernel_types_pct;  // rounded to 1 decimal
  std::vector<std::string> problems;               // "FILE: what was wrong", one each
  std::vector<std::string> records_files;          // the records read for the waterfall
  // Those of them that priced some range of the traces (a file whose records match no range, or
  // hold no FLOPs for those they match, is said in `problems` instead).
  std::vector<std::string> flops_from;
};

// What `--critical-path` asks for: HTA's critical_path_analysis(rank, annotation, instance_id)
// on every rank.
struct CriticalPathRequest {
  std::string annotation = "ProfilerStep";  // "": the whole trace (HTA's annotation "")
  bool each = true;  // every instance on its own; else instances [first, last] together
  std::int64_t first = 0, last = 0;
  std::size_t max_instances = 1000;  // with `each`: the most analysed per rank (the rest said)
};

struct ExplainOptions {
  // Records files (JSON lines) for the waterfall's FLOPs; empty: those the traces name, else a
  // records file beside them.
  std::vector<std::string> records;
  unsigned threads = 0;  // 0: the machine's cores
  // HTA's critical path too; every row of the traces is then kept (more memory).
  std::optional<CriticalPathRequest> critical_path;
  // vxperf's own replay and its what-ifs; every row is then kept, as for the critical path.
  std::optional<ReplayRequest> replay;
};

// Reads every trace (files, or directories of *.json / *.json.gz) and analyses it. A file that
// cannot be read is in `problems` and the others are analysed; throws std::invalid_argument only
// for a path that does not exist.
Explanation explain_traces(const std::vector<std::string>& paths, const ExplainOptions& options);

// The same split in two (docs/EXPLAIN.md, "Split and merged"): a partial of some traces (one per
// rank, say, each on a machine of its own), a small versioned JSON document of what each trace
// gives alone (its analyses, in both of HTA's windows where the trace alone cannot tell which the
// job takes, its waterfall, its replay); then the partials merged into the Explanation that
// explain_traces() gives on all their traces at once, equal in every field. Throws
// std::invalid_argument for a path that does not exist and for --critical-path (it takes every
// rank at once).
std::string explain_partial(const std::vector<std::string>& paths, const ExplainOptions& options);
// `documents`: (name, text) of each partial, in the order of their traces. Throws
// std::invalid_argument "NAME: what is wrong" for a document that is not a partial of this
// version of `vxperf explain`, and for partials made with different options or records.
Explanation merge_partials(const std::vector<std::pair<std::string, std::string>>& documents);

// The forms it is shown in.
std::string explanation_json(const Explanation& e);
std::string explanation_text(const Explanation& e);
std::string explanation_html(const Explanation& e);

}  // namespace vxperf::explain
