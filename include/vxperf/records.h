// Records: what one request or one training window came to. Plain values holding exactly what
// is serialized: each has one field table (src/schema/record_fields.h) from which its JSON line,
// its reading back and its Prometheus series are made, and its log line is made in
// src/schema/log_lines.cpp; nowhere else.
// What a record summarizes call by call (for the level-2 dump and for sinks) is in vxperf/sink.h.
//
// Field names, nesting and log formats are the reference module's, so existing dashboards keep
// working.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/peak.h"
#include "vxperf/topology.h"

namespace vxperf {

struct StageSummary {
  std::string name;
  std::int64_t count = 0;
  double total_ms = 0, mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0;
};

// How well a priced run used its devices, as request and window records both say it: the rate it
// computed at, the peak it is measured against and what that peak rests on.
struct Efficiency {
  int devices = 1;        // the peak is of this many devices (a job rate over a job peak)
  double attn_share = 0;  // of the FLOPs, the attention products'
  double tflops = 0;
  std::optional<double> peak_tflops;
  std::optional<double> mfu;
  // Beyond the reference: each serialized only when it differs from what the reference assumes
  // (a table peak, bf16, dense attention, every call a full forward).
  PeakSource peak_source = PeakSource::kTable;
  Dtype dtype = Dtype::kBf16;  // what the matmuls ran in: the peak's column
  // The dtype the weights are stored in, where that is not `dtype` (fp8 weights cast to bf16 for
  // each layer's matmul).
  std::optional<Dtype> weights_dtype;
  double attn_density = 1.0;
  std::optional<std::int64_t> skipped_fwd;  // transformer calls skipped outright (cache hits)
  std::optional<double> effective_fwd;      // the full forwards the calls came to
};

// A request's transformer calls, priced.
struct DitThroughput : Efficiency {
  std::int64_t params = 0;
  std::int64_t tokens = 0;
  std::int64_t batch = 1;
  double flops_per_fwd = 0;
};

struct RequestRecord {
  double ts = 0;  // wall-clock seconds since the epoch at settle time
  int rank = 0;
  int world_size = 1;
  // The attempt of the job that wrote it (torchrun's restart count) and the run's name
  // (VIDEOX_PERF_RUN_ID), where said.
  std::optional<std::int64_t> attempt;
  std::optional<std::string> run_id;
  std::int64_t req = 0;
  bool warmup = false;
  double e2e_s = 0;
  std::vector<StageSummary> stages;  // in order of first use
  std::optional<DitThroughput> dit;
  std::optional<int> device;               // device index, serialized as "cuda:N"
  std::optional<DeviceReadings> readings;  // what the device said over the request (with `device`)
  // Videos the request generated, when more than one (RequestOptions::videos), and its energy
  // over them (with readings->energy_j).
  std::optional<std::int64_t> videos;
  std::optional<double> energy_j_per_video;
  // Serving: the seconds it waited in a queue before it began (RequestOptions::queue_s), from its
  // start to the end of its first priced stage's call (the first denoising step's first), and
  // the video's length (frames over fps) with the end-to-end time over it.
  std::optional<double> queue_s;
  std::optional<double> first_step_s;
  // The sampler steps it ran (RequestOptions::denoising_steps, note_denoising_steps): each one
  // all its transformer calls, guidance's included; absent where no front end knew them.
  std::optional<std::int64_t> denoising_steps;
  std::optional<double> video_s;
  std::optional<double> realtime_factor;
  std::optional<ParallelLayout> parallel;  // what it was priced with, on a multi-rank run
};

// A window's rates; the Efficiency fields (and those below `priced`) only when some step of it
// could be priced.
struct TrainThroughput : Efficiency {
  double samples_per_s = 0;
  double samples = 0;
  double wall_s = 0;
  int dp = 1;
  bool priced = false;
  std::int64_t params = 0;
  std::int64_t trainable = 0;
  double tokens = 0;
  std::int64_t priced_steps = 0;
  double priced_s = 0;
  double flops_coef = 0;
  double flops_coef_hw = 0;
  std::string flops_coef_reason;
  double flops_per_step = 0;
  double hw_tflops = 0;
  std::optional<double> hfu;
};

// NVIDIA Resiliency's scores of one phase, by rank: relative, the fastest rank's mean time per
// step in the phase over this rank's; individual, this rank's best window's so far over this
// window's (vxperf::relative_scores). 1 where a rank spent nothing in the phase.
struct PhaseScores {
  std::string name;  // the phase
  std::vector<double> relative;
  std::vector<double> individual;
};

// Every rank's view of one window, on rank 0's record with VIDEOX_PERF_XRANK=1 (vxperf/xrank.h).
struct CrossRankView {
  std::vector<double> step_s_p50;  // by rank
  std::vector<double> excess_s;    // by rank: seconds per step above the ranks' phase medians
  double median_s = 0;             // median step p50 across ranks
  int min_rank = 0, max_rank = 0;  // the fastest and slowest by step p50
  std::vector<int> stragglers;
  std::vector<std::string> straggler_phases;  // per straggler: where most of its excess is
  std::optional<double> samples_per_s;        // the job's: the ranks' local rates, over sp
  std::optional<double> tflops;               // mean of the job rates the ranks priced
  std::optional<std::pair<int, std::uint64_t>> peak_alloc;  // the largest peak and its rank
  double exchange_s = 0;                                    // the exchange, on this rank
  // By rank, NVIDIA Resiliency's scores: relative, the fastest rank's step p50 over its own;
  // individual, its best window p50 so far over this window's.
  std::vector<double> relative_score;
  std::vector<double> individual_score;
  // The same scores phase by phase (of the phases some rank spent time in, in the phase table's
  // order): under DDP the collective evens the step times out, so a rank slow in its own data or
  // forward scores near 1 on its step and low in that phase.
  std::vector<PhaseScores> phase_scores;
  // By rank, the seconds lost so far to it as the slowest rank of a window: its seconds per step
  // above the ranks' per-phase medians times the window's steps.
  std::vector<double> lost_s;
};

// The time a window's loop spent outside its steps, in calls it said (vxperf::CheckpointSave,
// CheckpointRestore, Evaluation; Python's vxperf.checkpoint() and evaluation(), accelerate's
// save_state/load_state, torch.distributed.checkpoint's save/load): never a step's time. The bytes
// where the calls said them.
struct OutsideSteps {
  std::int64_t saves = 0;
  double save_s = 0;
  std::optional<std::int64_t> save_bytes;
  std::int64_t restores = 0;
  double restore_s = 0;
  std::optional<std::int64_t> restore_bytes;
  std::int64_t evals = 0;
  double eval_s = 0;
};

// Where the loop's time went, from its first point (its first step, or a checkpoint restored
// before it) to the close of the window's last step: parts that add up to `wall_s` exactly. A step
// is split into its data wait and its compute; the ideal step is the mean compute of the steps
// after the first at most their median plus three median absolute deviations.
struct Ledger {
  double wall_s = 0;
  std::int64_t steps = 0;
  double ideal_step_s = 0;
  // Before the loop, where the process's start is known: start-up (from it to the training's
  // set-up: Trainer::mark_setup, or the device set) and set-up (from there to the loop's first
  // point: the model, its wrapping, the optimizer).
  double startup_s = 0;
  double setup_s = 0;
  double productive_s = 0;         // ideal step x steps
  double first_step_excess_s = 0;  // the first step's compute beyond the ideal (compile, warmup)
  double slow_step_excess_s = 0;   // the later steps' compute beyond the ideal, net
  double data_wait_s = 0;
  double save_s = 0;
  double restore_s = 0;
  double eval_s = 0;
  double between_steps_s = 0;  // host time in no step and no call outside the steps
  // Across the attempts of a restarted job (`vxperf report` stitches them; a record's own ledger
  // is its attempt's, these left 0): the earlier attempts' time on steps a later one ran again
  // (taken out of their productive, slow-step and data parts), and the time between an attempt's
  // end and the next one's start. Both are parts of `wall_s`.
  double lost_progress_s = 0;
  double between_attempts_s = 0;
  double goodput = 0;  // productive over wall
  // Not parts: the attempts stitched, and the time from each failure to the next attempt's
  // first step (between attempts, then its start-up, set-up and restore).
  std::int64_t attempts = 1;
  double recovery_s = 0;
};

// The ledger's parts, one row each, in the order every form lists them: the records' JSON, the
// report's text, page and comparison, Prometheus and the trackers walk this table (a new part is
// its member above, its row here and where its time is counted).
struct LedgerPart {
  // When a ledger says the part: always; always, and read as 0 where a record lacks it; only
  // where it is not 0 (the process's start, a restarted job's parts).
  enum class Said { kAlways, kAlwaysRead0, kWhereNotZero };
  // The parts the report's line names together, or leaves out together: the loop's, always; the
  // process's start, where known; the restarts', where the job restarted.
  enum class Group { kLoop, kProcessStart, kRestarts };
  double Ledger::*seconds;
  const char* key;     // its JSON name
  const char* words;   // what the report calls it
  const char* series;  // its kind in Prometheus's ledger series, or null (a record never has it)
  Said said;
  Group group;
  bool net;  // can be below zero (steps faster than the ideal, net): drawn from 0
};

inline constexpr LedgerPart kLedgerParts[] = {
    {&Ledger::startup_s, "startup_s", "start-up", "startup", LedgerPart::Said::kWhereNotZero,
     LedgerPart::Group::kProcessStart, false},
    {&Ledger::setup_s, "setup_s", "set-up", "setup", LedgerPart::Said::kWhereNotZero,
     LedgerPart::Group::kProcessStart, false},
    {&Ledger::productive_s, "productive_s", "productive", "productive", LedgerPart::Said::kAlways,
     LedgerPart::Group::kLoop, false},
    {&Ledger::first_step_excess_s, "first_step_excess_s", "first step", "first_step_excess",
     LedgerPart::Said::kAlways, LedgerPart::Group::kLoop, true},
    {&Ledger::slow_step_excess_s, "slow_step_excess_s", "slow steps", "slow_step_excess",
     LedgerPart::Said::kAlways, LedgerPart::Group::kLoop, true},
    {&Ledger::data_wait_s, "data_wait_s", "data", "data_wait", LedgerPart::Said::kAlways,
     LedgerPart::Group::kLoop, false},
    {&Ledger::save_s, "save_s", "save", "save", LedgerPart::Said::kAlwaysRead0,
     LedgerPart::Group::kLoop, false},
    {&Ledger::restore_s, "restore_s", "restore", "restore", LedgerPart::Said::kAlwaysRead0,
     LedgerPart::Group::kLoop, false},
    {&Ledger::eval_s, "eval_s", "eval", "eval", LedgerPart::Said::kAlwaysRead0,
     LedgerPart::Group::kLoop, false},
    {&Ledger::between_steps_s, "between_steps_s", "between steps", "between_steps",
     LedgerPart::Said::kAlways, LedgerPart::Group::kLoop, true},
    {&Ledger::lost_progress_s, "lost_progress_s", "lost progress", nullptr,
     LedgerPart::Said::kWhereNotZero, LedgerPart::Group::kRestarts, false},
    {&Ledger::between_attempts_s, "between_attempts_s", "between attempts", nullptr,
     LedgerPart::Said::kWhereNotZero, LedgerPart::Group::kRestarts, true},
};

// Whether the report names a group's parts for `l`: the loop's always; the others where one of
// them is not 0, or (the restarts') where attempts were stitched.
inline bool ledger_group_said(const Ledger& l, LedgerPart::Group group) {
  if (group == LedgerPart::Group::kLoop) return true;
  if (group == LedgerPart::Group::kRestarts && l.attempts > 1) return true;
  for (const LedgerPart& p : kLedgerParts) {
    if (p.group == group && l.*p.seconds != 0) return true;
  }
  return false;
}

// Adds `from`'s wall time, steps and parts into `into` (a job's ledger over ranks or attempts);
// the ideal step, goodput, attempts and recovery are not sums and are left as they are.
inline void add_parts(Ledger& into, const Ledger& from) {
  into.wall_s += from.wall_s;
  into.steps += from.steps;
  for (const LedgerPart& p : kLedgerParts) into.*p.seconds += from.*p.seconds;
}

struct TrainWindowRecord {
  double ts = 0;
  int rank = 0;
  int world_size = 1;
  std::optional<std::int64_t> attempt;  // as RequestRecord's
  std::optional<std::string> run_id;
  std::int64_t step_first = 0;
  std::int64_t step_last = 0;
  std::int64_t steps = 0;
  std::int64_t warmup_excluded = 0;
  double step_s_p50 = 0;
  double step_s_p95 = 0;
  std::vector<std::pair<std::string, double>> phases_s;  // fixed phase order, non-zero only
  double micro_steps = 0;
  double overrun_s = 0;
  std::optional<int> device;
  std::optional<DeviceReadings> readings;  // what the device said over the window (with `device`)
  // The window's energy over the samples its measured steps took (with readings->energy_j).
  std::optional<double> energy_j_per_sample;
  std::optional<TrainThroughput> throughput;
  std::optional<double> eta_s;
  std::optional<CrossRankView> xrank;  // rank 0 with VIDEOX_PERF_XRANK=1, full windows
  // Checkpoints and evaluations since the previous window went out (this window's, or made after
  // the previous window's last step), when there were any.
  std::optional<OutsideSteps> outside;
  std::optional<Ledger> ledger;  // the loop's so far, through this window's last step
  std::optional<ParallelLayout> parallel;  // what it was priced with, on a multi-rank run
};

// The training's end (TrainerCore::finish: Trainer::finish, the engine's shutdown at exit, a
// launcher's SIGTERM in Python, accelerate's end_training): one record a process, written after
// its last window, carrying the loop's ledger through that moment. vxperf's own: the reference
// writes no such record.
struct TrainEndRecord {
  double ts = 0;
  int rank = 0;
  int world_size = 1;
  std::optional<std::int64_t> attempt;  // as RequestRecord's
  std::optional<std::string> run_id;
  std::int64_t step_first = 0;  // the first and last step this process closed (global numbers)
  std::int64_t step_last = 0;
  std::int64_t steps = 0;  // steps this process closed
  // Seconds from the last step's close to the end: the saves, restores and evaluations after it
  // are in their ledger parts, the rest in between_steps_s. Not a part itself.
  double after_last_step_s = 0;
  std::optional<Ledger> ledger;  // the loop's, through the end (written with one)
};

// One JSON object on one line, without the trailing newline.
std::string to_json_line(const RequestRecord& record);
std::string to_json_line(const TrainWindowRecord& record);
std::string to_json_line(const TrainEndRecord& record);

// The log line, tag included.
std::string format_log_line(const RequestRecord& record);
std::string format_log_line(const TrainWindowRecord& record);

// A request's denoising steps beside its transformer calls: the steps it says it ran, its priced
// stages' calls (every expert's: Wan2.2's `transformer` and `transformer_2` split the steps) and
// their time. One step is all its calls: two with classifier-free guidance run as two, one when
// batched.
struct DenoisingStepTime {
  std::int64_t steps = 0;
  std::int64_t calls = 0;
  double total_ms = 0;
  double ms_per_step() const { return total_ms / static_cast<double>(steps); }
  double calls_per_step() const { return static_cast<double>(calls) / static_cast<double>(steps); }
};
// Absent when the record says no steps (or 0) or ran no priced call.
std::optional<DenoisingStepTime> denoising_step_time(const RequestRecord& record);

}  // namespace vxperf
