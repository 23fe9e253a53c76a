// `vxperf report`: records summarized per run and per rank (latency, stages, step times, phases,
// MFU, stragglers), as text, JSON and HTML, and two reports compared metric by metric.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vxperf/field_show.h"
#include "vxperf/records.h"
#include "vxperf/records_reader.h"
#include "vxperf/xrank.h"

namespace vxperf::analysis {

struct StageShare {
  std::string name;
  double mean_ms = 0;  // time in the stage per request
  double calls = 0;    // calls per request
  double share = 0;    // of end-to-end time
};

// A device reading, or a record field, folded over records as its row in the field table says
// (its Show, vxperf/field_show.h: key, label, unit, decimals, and its fold: folded() for a
// reading, summarized() for a field, copied into show.fold), what the report's text, JSON and page
// show of it.
struct ReadingSummary {
  Show show;
  bool integral = false;          // an integer reading (SM clock, temperature)
  std::int64_t records = 0;       // records that carried it
  std::optional<double> value;    // kMean: the mean; kMin, kMax: lowest, highest; kSum: the sum
  std::optional<double> max;      // kMean: the highest record's
  std::vector<std::string> seen;  // kList: each value seen, in order of first appearance
};
// The reading of `readings` with this key; nullptr when there is none.
const ReadingSummary* find_reading(const std::vector<ReadingSummary>& readings,
                                   std::string_view key);

// What a device meter (NVML: vxperf/nvml.h) said over the records that carry its readings;
// absent when none does.
struct EnergySummary {
  std::int64_t records = 0;              // records with energy_j
  double energy_j = 0;                   // their sum
  std::optional<double> per_unit_j;      // per request (one video) / per sample (windows)
  std::vector<std::string> energy_from;  // "counter", "power_samples", as seen
  // Every reading the field table folds by its mean, lowest, highest or list (power_w_mean:
  // mean and max; sm_clock_mhz_min; temp_c_max; throttle: the reasons seen), in the table's
  // order, read or not.
  std::vector<ReadingSummary> readings;
};

// The denoising steps of the requests that said theirs (`denoising_steps`): a step is all its
// transformer calls (denoising_step_time, vxperf/records.h), so its time sits beside a call's.
struct DenoisingStepSummary {
  std::int64_t requests = 0;  // of the summary's, those that said their steps
  double steps = 0;           // per request, their mean
  double mean_ms = 0;         // per step: their transformer calls' time over their steps
  double calls = 0;           // per step: their transformer calls over their steps
};

struct RequestSummary {
  std::int64_t count = 0;   // requests summarized (warmup ones excluded unless all are warmup)
  std::int64_t warmup = 0;  // warmup requests seen
  double e2e_p50_s = 0, e2e_p95_s = 0, e2e_max_s = 0, e2e_mean_s = 0;
  std::vector<StageShare> stages;  // by mean time, largest first
  // The job rate the records carry (over `devices` devices each), and the same per device: what
  // one rank computed at, the rate MFU is of.
  std::optional<double> tflops, mfu;
  std::optional<double> device_tflops;
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
  std::optional<DenoisingStepSummary> denoising_step;  // absent when no request said its steps
  std::optional<EnergySummary> energy;
  // Requests over the span from the first one's start to the last one's end; a request computed
  // by a group of ranks (context or tensor parallel) counts once, its latency the slowest rank's,
  // its energy summed over the group.
  std::optional<double> requests_per_hour;
  std::int64_t shared_records = 0;  // records folded into a request of another rank's
  std::int64_t videos = 0;  // the requests generated (RequestOptions::videos; 1 each unless said)
  std::optional<ParallelLayout> layout;  // of the latest record that says it
  // Every field of the request record the field table summarizes (summarized()), in the table's
  // order, read or not; over the measured requests, a request of a group of ranks once.
  std::vector<ReadingSummary> fields;
};

struct TrainSummary {
  std::int64_t windows = 0;  // every rank's
  int ranks = 1;             // that wrote windows
  std::int64_t steps = 0;  // global steps measured (the most any rank reported)
  // Of a restarted job: steps a later attempt ran again (the most of any rank), left out of `steps`.
  std::int64_t steps_run_again = 0;
  std::int64_t warmup_excluded = 0;
  // From the windows' percentiles, weighted by their step counts (per-step times are not in the
  // records): the weighted median of window medians, the weighted p95 of window p95s. Exact while
  // a rank's windows hold at most 128 distinct values (the run's: 65,536), else within a bin of
  // them (ReportBuilder).
  double step_p50_s = 0, step_p95_s = 0;
  std::vector<std::pair<std::string, double>> phase_s;      // mean seconds per step
  std::vector<std::pair<std::string, double>> phase_share;  // of the phases' sum
  std::optional<double> samples_per_s;                      // local, mean over ranks
  std::optional<double> samples_per_s_global;               // local times dp
  int dp = 1;
  std::optional<double> tflops, hw_tflops, mfu, hfu;  // weighted by priced seconds
  std::optional<double> device_tflops;                // tflops per device (RequestSummary's)
  std::optional<std::uint64_t> peak_alloc_bytes, peak_reserved_bytes;
  std::optional<double> eta_s;  // from the latest window
  // As RequestSummary's, from the latest priced window (trainable too).
  std::optional<std::int64_t> params, trainable;
  std::optional<double> peak_tflops;
  std::string peak_source, dtype;
  std::optional<std::int64_t> skipped_fwd;
  std::optional<double> effective_fwd;
  std::optional<EnergySummary> energy;
  std::optional<ParallelLayout> layout;  // of the latest window that says it
  // Every field of the window record the field table summarizes (summarized()), in the table's
  // order, read or not.
  std::vector<ReadingSummary> fields;
};

// What one device used over the job: its records' energy, over the union of their intervals.
struct DeviceEnergy {
  int rank = 0;
  int device = 0;            // its index on that rank ("cuda:N")
  std::int64_t records = 0;  // records with energy_j
  double energy_j = 0;
  double seconds = 0;                  // the union of the records' intervals
  std::optional<double> power_w_mean;  // energy_j over seconds
};

// The job's energy (#28): every record, warmup ones too, present when some record carries
// energy_j. A request computed by several ranks (parallel.group > 1) is one request: its energy
// is its ranks' sum, its videos counted once.
struct JobEnergy {
  double energy_j = 0;  // every record's device energy
  // Every reading the field table folds by its sum, over every record (cpu_energy_j: the host's
  // energy, powercap), in the table's order; a value only where some record read it.
  std::vector<ReadingSummary> totals;
  std::int64_t videos = 0;      // made by the requests that carry energy_j
  double request_energy_j = 0;  // those requests' energy
  std::optional<double> j_per_video;
  double samples = 0;  // the job's samples over the windows that carry energy_j (cp x tp once)
  double window_energy_j = 0;  // those windows' energy, every rank's
  std::optional<double> j_per_sample;
  std::vector<DeviceEnergy> devices;      // by rank, then device
  std::int64_t records = 0;               // records in all
  std::int64_t shared = 0;                // of them, energy_shared
  std::int64_t unread = 0;                // of them, without energy_j
  std::vector<std::string> unread_first;  // the first few of those: "rank 0 req 3"
};

// A rank's NVIDIA Resiliency scores in one phase (NVRx's per section): relative, the fastest
// rank's median over its windows' means of the phase over this rank's; individual, its best
// window's mean over its latest window's (vxperf::relative_scores, individual_score).
struct PhaseScore {
  std::string phase;
  double relative = 1;
  double individual = 1;
};

// The lowest per-phase score below kLowScore among the phases where it costs time: the rank's
// seconds per step above the fastest rank's (relative) or above its own best window's
// (individual) over kStragglerMargin of the median step.
struct LowScore {
  int rank = 0;
  std::string phase;
  std::string kind;  // "relative" or "individual"
  double score = 1;
  double seconds = 0;  // per step in the phase: this rank's median (relative), its latest window's
  double against = 0;  // the fastest rank's median (relative), its best window's (individual)
};

// The job's ledger beside the ranks': every rank's (each its attempts stitched, through its
// final record where it wrote one) added up, in rank-seconds: `wall_s` is the ranks' walls summed
// and each part the ranks' parts summed, so that the parts add up to it exactly as a rank's do;
// `steps` the ranks' steps summed, `ideal_step_s` their ideal steps weighted by their steps
// (productive = ideal x steps still), goodput the productive rank-seconds over the wall ones,
// `attempts` the most of any rank, `recovery_s` the ranks' summed.
struct JobLedger {
  Ledger ledger;
  int ranks = 0;  // whose ledgers it adds
  // From the earliest rank's start to the latest rank's end, on the records' wall clock (absent
  // where a record has no time).
  std::optional<double> span_s;
};

struct RankSummary {
  int rank = 0;
  std::int64_t requests = 0;
  std::optional<double> e2e_p50_s;
  std::int64_t windows = 0;
  std::int64_t steps = 0;
  std::optional<double> step_p50_s, step_p95_s;
  // tflops: the job rate its records carry; device_tflops: its own (the job rate per device).
  std::optional<double> samples_per_s, tflops, mfu, device_tflops;
  std::optional<std::uint64_t> peak_alloc_bytes;
  std::vector<std::pair<std::string, double>> phase_s;  // mean seconds per step
  // Seconds per step above the ranks' per-phase medians (the straggler rule's measure).
  std::optional<double> excess_s;
  // The summarized record fields shown per rank (Show::per_rank), as this rank's records folded
  // them: its windows' then its requests'.
  std::vector<ReadingSummary> fields;
  // Its loop's ledger so far: its latest window's (the highest step_last).
  std::optional<Ledger> ledger;
  // What it cost as a straggler: for each window the ranks ran over the same steps, the slowest
  // rank's (the most above the ranks' per-phase medians) seconds above them times the window's
  // steps, summed for the rank that was slowest, by phase. Absent when it never was. Past 256
  // windows, for each band of windows (their mean per step, their steps).
  std::optional<double> lost_s;
  std::vector<std::pair<std::string, double>> lost_phases_s;
  // NVIDIA Resiliency's straggler scores, from its windows' step p50: relative, the fastest
  // rank's median over its median; individual, its best window's over its latest window's (1:
  // as fast as ever, lower: slower now).
  std::optional<double> relative_score, individual_score;
  // The same scores phase by phase, of the phases it spent time in (the phase table's order):
  // under DDP the collective evens step times out, so a rank slow in its own data or forward
  // scores near 1 on its step and low in that phase.
  std::vector<PhaseScore> phase_scores;
};

// What makes a job's numbers partial, from records read out of several files: ranks of its world
// size that no file holds training records of, files whose last line was torn, files not read as
// the same bytes as an earlier one (a file copied, or named twice). Each is also a warning.
struct Partial {
  int world_size = 0;
  std::vector<int> missing_ranks;
  std::vector<std::string> torn_files;
  std::vector<std::pair<std::string, std::string>> repeated_files;  // not read, the file it repeats
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
  std::optional<JobEnergy> energy;            // the job's totals, when records carry energy
  std::optional<JobLedger> job_ledger;        // when some rank's records carry a ledger
  std::optional<LowScore> low_score;          // the lowest material per-phase score, below 0.9
  std::optional<Partial> partial;             // when the records read miss some of the job
};

using vxperf::kStragglerMargin;

class ChartData;

// The report built one record at a time, in one pass (what `vxperf report` does): it keeps
// per-rank sums and, for the exact percentiles, each request's e2e time (8 bytes), never the
// records. Of the windows it keeps bounded structures, whatever their number: each rank's step
// p50s and p95s with their steps and each phase's seconds per step in a sketch of at most 128
// entries (analysis/value_sketch.h: exact while they hold at most 128 distinct values, else
// bins of them), the ranks' phases per window for the stragglers' cost (up to 256 windows, else
// bands of them: analysis/window_state.h), its attempts' marks (the latest 64 windows', the
// earlier ones paired). The same report as build_report over the same records in the same order.
class ReportBuilder : public RecordHandler {
 public:
  ReportBuilder();
  ~ReportBuilder() override;
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  void request(const RequestRecord& record) override;
  void window(const TrainWindowRecord& record) override;
  void end(const TrainEndRecord& record) override;
  void warning(const std::string& text) override;
  void begin_file(const std::string& name) override;
  void torn_line(const std::string& name) override;
  void repeated_file(const std::string& name, const std::string& earlier) override;
  void bad_line(const std::string& name, int line, const std::string& message) override;
  void end_file(const std::string& name) override;
  // A file's records taken on a worker by a builder of their own, joined here as its file's part
  // and its ranks' state (what a partial of it holds, without its bytes): not when a rank of it,
  // or a request of several ranks of it, came in an earlier file.
  std::unique_ptr<RecordHandler> file_handler() override;
  bool join_file(RecordHandler& file) override;
  // The threads finish() may use, as ReadOptions::threads: 0 (the default), the stragglers' walk
  // and the run's summaries beside the ranks' on threads of their own; 1, this thread alone.
  void set_threads(int threads);
  Report finish(std::vector<std::string> sources = {}) const;

  // `vxperf report --partial` and `--merge` (docs/COMMANDS.md, "Split and merged"). A partial:
  // what the records read so far give the report and the page (`charts`: ChartData fed the same
  // records), each file's part of the job's sums and each rank's whole state, with `sources`
  // (the files named), as versioned bytes: a file's requests as their sums and each one's time.
  std::string partial(const ChartData& charts, const std::vector<std::string>& sources) const;
  // A partial (named `name` in errors) after what this holds: its files after these, its ranks
  // beside these, its page's points into `charts`, its sources after `sources`. Throws
  // std::invalid_argument: not a report partial of this version, corrupt, a rank this holds
  // already (a rank's records go in one partial), a file with records another partial holds, a
  // request of several ranks another partial holds records of (folded in one run's file order).
  void add_partial(const std::string& bytes, const std::string& name, ChartData& charts,
                   std::vector<std::string>& sources);
  // Whether `e` is what reading threw only because no line was a record (a partial's files may
  // hold none: the merge says so where no partial's did, check_records).
  bool no_records(const InputError& e) const;
  // Throws the InputError reading every partial's files at once would have: no record in any,
  // and a line that was none.
  void check_records() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Report build_report(const RecordSet& records, std::vector<std::string> sources = {});
// Why there is no MFU where a report (or `vxperf watch`) has none: "no FLOPs priced" unless
// `priced`, else "no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto".
const char* mfu_missing_reason(bool priced);
std::string format_report(const Report& report);
std::string report_json(const Report& report);  // one JSON object, pretty-printed

// What the HTML page draws, kept one record at a time: a few numbers per window (about 140
// bytes: step times, phases, MFU, memory, the device readings charted: power, clock) and per
// request (about 60), and the stages of the last requests the bar chart shows; never the records.
class ChartData : public RecordHandler {
 public:
  ChartData();
  ~ChartData() override;
  ChartData(const ChartData&) = delete;
  ChartData& operator=(const ChartData&) = delete;

  void request(const RequestRecord& record) override;
  void window(const TrainWindowRecord& record) override;
  void warning(const std::string&) override {}

  // What another ChartData took of the records after this one's, added here as though this one
  // had taken them (`joinable`: whether it can be; not when the other names more phases than
  // are charted, which one reading would have charted by their names' place among all files').
  bool joinable(const ChartData& later) const;
  void join(ChartData& later);

  struct Impl;
  const Impl& impl() const { return *impl_; }
  Impl& impl_mut() { return *impl_; }  // a merge's points (ReportBuilder::add_partial)

 private:
  std::unique_ptr<Impl> impl_;
};

// The transformer calls of requests (DenoisingRequest keeps its name): each call of a transformer
// stage ("transformer", "transformer_2"), in call order, in milliseconds; one or two a denoising
// step, which a log or trace does not tell apart.
struct DenoisingRequest {
  int rank = 0;
  std::int64_t req = 0;
  bool warmup = false;
  std::vector<double> ms;
};
struct DenoisingSteps {
  std::vector<DenoisingRequest> requests;
  std::vector<std::string> warnings;  // "FILE: ..." for a file that held none
};
// Read from level-2 logs (VIDEOX_PERF=2: the "<stage> steps(ms): ..." lines after each request's
// line) or event scripts (VIDEOX_PERF_TRACE: each stage call, the larger of its host and device
// times, as the engine resolves it), told apart line by line. Throws InputError for a file that
// cannot be read.
DenoisingSteps read_denoising_steps(const std::vector<std::string>& paths);

// One self-contained HTML page (inline CSS, SVG and one script, nothing fetched): the summary as
// tables, charts with their values on hover, rank x window heatmaps of step time and of the
// straggler rule's excess, the denoising steps when given.
std::string report_html(const Report& report, const ChartData& charts,
                        const DenoisingSteps* steps = nullptr);
// The same from records in memory.
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
  std::string direction;  // "better", "worse", "same" (within 0.5%), "n/a", "differs" (peaks)
  std::string unit;
};
std::vector<MetricChange> compare_reports(const Report& a, const Report& b);
std::string format_comparison(const std::string& a_name, const std::string& b_name,
                              const std::vector<MetricChange>& changes);
std::string comparison_json(const std::string& a_name, const std::string& b_name,
                            const std::vector<MetricChange>& changes);
// The comparison as an HTML page: the metrics as a table and as bars of their change, and A's and
// B's step times, request times and MFU drawn over each other.
std::string comparison_html(const std::string& a_name, const std::string& b_name,
                            const std::vector<MetricChange>& changes, const ChartData& a,
                            const ChartData& b);

}  // namespace vxperf::analysis
