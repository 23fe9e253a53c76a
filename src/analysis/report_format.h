// What the report's forms share: the JSON object type, a number or null, joules per kWh, a folded
// reading in words and in JSON, the ranks' table's field columns.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/units.h"
#include "vxperf/report.h"

namespace vxperf::analysis::report_format {

// Ordered: keys come out in the order the report writes them.
using Json = nlohmann::ordered_json;

constexpr double kJoulesPerKwh = 3.6e6;

// The value, or null when the report has none.
Json opt_json(const std::optional<double>& v);
Json opt_json(const std::optional<std::uint64_t>& v);

// A reading's number `v` with the reading's decimals and unit ("150.0 W", "1780 MHz"); "-" when
// none.
std::string reading_value(const ReadingSummary& r, const std::optional<double>& v);
// A reading's value as its fold says it, without its label: "150.0 W mean, 200.0 W max", "min
// 1780 MHz", "max 62 C", "40.000 J", "sw_power_cap, hw_slowdown".
std::string fold_text(const ReadingSummary& r);
// A reading as the report says it, its label then its fold_text: "power 150.0 W mean, 200.0 W
// max" ("power - mean, - max" unread), "SM clock min 1780 MHz", "temp max 62 C", "host CPU and
// DRAM 40.000 J", "throttle sw_power_cap, hw_slowdown".
std::string reading_text(const ReadingSummary& r);
// The ranks' table's columns for the fields shown per rank: one per key some rank holds, in the
// order they first come (each the first rank's summary of it: its label, unit, fold).
std::vector<const ReadingSummary*> rank_field_columns(const std::vector<RankSummary>& ranks);
// A rank's cell in one: its value by the column's fold ("0.012 s"; a list's values), "-" when
// the rank has none.
std::string rank_field_cell(const RankSummary& rank, const ReadingSummary& column);
// Each reading into `j` under its key, null when unread (integers as integers); a mean's highest
// beside it ("power_w_mean", "power_w_max"); a list as an array.
void add_readings(Json& j, const std::vector<ReadingSummary>& readings);

// The requests' end-to-end time in no stage, as a row of the stage table ("other", its calls 0),
// where the stages' shares add up to less than the whole (by 0.05% or more); none otherwise
// (stages that overlap, such as a transformer's device time past its host call, add up to more).
std::optional<StageShare> other_stage(const RequestSummary& r);

// A training's windows, per rank where the ranks wrote as many each: "in 4 windows per rank (8
// over the 2 ranks)", else "in 7 windows over the 2 ranks together"; "in 4 windows" for one rank.
std::string windows_text(const TrainSummary& t);

// Why a section or a rank has no MFU, from its rate (FLOPs were priced where it has one): "no
// FLOPs priced", else "no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto".
std::string mfu_missing(const std::optional<double>& tflops);
// The ranks without an MFU where their section has one (else its line said why), and why: "MFU
// n/a for rank 3 (no FLOPs priced)"; "" when every rank has one.
std::string ranks_mfu_missing(const Report& report);

// A comparison's utilization (MFU, HFU) one side lacks: its cell says "n/a".
bool lacks_utilization(const MetricChange& c);
// Why each side of a comparison that lacks an MFU has none, a line each: "training.mfu n/a in B:
// no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto" (by the side's rate, as
// mfu_missing).
std::vector<std::string> comparison_mfu_missing(const std::vector<MetricChange>& changes);

// The ranks' table's time columns, each in the one unit its largest reads in, in the text and on
// the page: the e2e p50, the step p50 and p95 together, the excess.
struct RankTimeUnits {
  units::Unit e2e, step, excess;
};
RankTimeUnits rank_time_units(const std::vector<RankSummary>& ranks);

// The one unit of a training's times, its step p50 and p95 and its phases, in the text and on
// the page: the one the largest of them reads best in.
units::Unit step_time_unit(const TrainSummary& t);

// "Stragglers: " and this where there are none: "none above the threshold (...)": no rank above the
// straggler rule's threshold (kStragglerMargin of the median step, or of the median e2e p50 for
// requests alone).
std::string no_stragglers_note(bool training);
// What each window's slowest rank cost, without its scores: "Slowest rank's cost: rank 2 10.000s
// above the ranks' per-phase medians in the windows it was slowest in (data 10.000s)". No
// straggler verdict: some rank is the slowest of every window, a straggler or not.
std::string slowest_rank_cost(const RankSummary& rank);
// Where a straggler spent under half the time outside its steps (saves, restores, evaluations)
// another rank did: "rank 0 spent 2.738s outside its steps (...), rank 1 0.000s: ...". A rank
// that saves or evaluates alone (a main-process-only validation) holds the others at their next
// collective, and their wait is in their steps, so the straggler may be the one that waited.
// Empty otherwise.
std::string outside_wait_note(const Report& report);

}  // namespace vxperf::analysis::report_format
