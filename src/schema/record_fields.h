// Every record field, once: the field tables of the records (vxperf/records.h), of the device
// readings (vxperf/device.h) and of the model description (vxperf/model.h).
//
// A table is a function `describe(io, value)` that names each field in order with the rule it is
// written and read by. Four kinds of `io` walk it:
//   - the writer (src/schema/record_writer.h): the JSON line (and any RecordVisitor,
//     vxperf/record_walk.h), in this order, each field present as its rule says;
//   - the reader (src/schema/field_reader.h): a JSON object back into the struct, with the rule's
//     default and checks, a wrong field reported by name (what `vxperf report`, replay and
//     `vxperf trace` read);
//   - the row walk (src/schema/row_walk.h): each row's key and member;
//   - the shown walk (src/schema/show_walk.h): the rows that say how they are shown, with the
//     record's values (the report, the Prometheus series, the trackers, the trace's counters).
// A field added to a record is one member in its struct and one line here; a member without a
// line fails tests/schema/field_coverage_test.cpp.
//
// A row's key may carry how the field is shown beyond its record: show(key, ...) and what follows
// (vxperf/field_show.h): its label and unit, how the report folds it over records, its Prometheus
// series, its tracker name, its charts. The report (text, JSON, page), the Prometheus sink and the
// experiment trackers show each such row, and nothing names it there; the other walks take it for
// its key.
//
// The rules (io.<rule>(key, member, ...)):
//   number, integer, count, small_int, bytes, boolean, string   plain values, with the reader's
//       default when one is given (else required); count: not negative; small_int: 0..1e6; bytes:
//       a count of bytes, absent keeps what the member holds
//   nullable          an optional written as null when empty
//   optional          an optional written only when set (read back: absent is empty)
//   optional_count    an optional integer, not negative, written only when set
//   optional_string, optional_strings   an optional string / array of strings, written only
//       when set (an empty array is written: it says "none seen")
//   unless            written only when it is not the given default
//   flag              a bool written only when true (read back: absent is false)
//   dtype, optional_dtype, peak_source   enums by name (dtype: only when not bf16; peak_source:
//       only when a peak is given and it is not the table's)
//   object, nullable_object, optional_object   a nested object (always / null when empty /
//       only when set); object's fields are those its function names on the io it is handed
//   named_objects, named_numbers, named_strings   an object keyed by each element's name
//       (stages, phases, a layout's sources); named_objects with kAbsentEmpty: absent reads
//       as none
//   numbers, ranks, strings        arrays
//   group             fields present together, and read when the marker field is there
//   device            "cuda:N" and the device readings, only when measured on a device
//   derived           written only: a value the reader recomputes
#pragma once

#include <string>
#include <type_traits>

#include "vxperf/device.h"
#include "vxperf/field_show.h"
#include "vxperf/model.h"
#include "vxperf/records.h"

namespace vxperf::internal {

// A named_objects row that may be absent (read back as empty).
inline constexpr bool kAbsentEmpty = false;

// `R` is the struct, const or not: the same table writes (const) and reads.
template <class R, class T>
using Same = std::enable_if_t<std::is_same_v<std::remove_const_t<R>, T>, int>;

// ---- device readings (vxperf/device.h) ----------------------------------------------------------

// The peak memory series, a request's and a window's, each with the kind of peak.
inline constexpr char kPeakMemory[] = "vxperf_peak_memory_bytes";
inline constexpr char kPeakMemoryHelp[] =
    "Peak device memory of the last request: kind=allocated (tensors) or reserved (allocator "
    "cache).";
inline constexpr char kTrainPeakMemory[] = "vxperf_train_peak_memory_bytes";
inline constexpr char kTrainPeakMemoryHelp[] =
    "Peak device memory of the last training window: kind=allocated or reserved.";
// A memory peak's row: logged to the trackers, and one kind of the peak memory series.
constexpr Show peak_memory(const char* key, const char* kind) {
  return show(key)
      .tracked()
      .gauge(kPeakMemory, kPeakMemoryHelp, SeriesLabels::kRank)
      .in_windows(kTrainPeakMemory, kTrainPeakMemoryHelp)
      .kind(kind);
}
// As records carry them (with "device") and the trace's request_end and memory events. The
// meter's fields (NVML) are each present only when read.
// Each reading shows where its Show says (vxperf/field_show.h): the report folds it over records,
// Prometheus keeps a series of it, the trackers log it, the report's page charts it.
template <class Io, class R, Same<R, DeviceReadings> = 0>
void describe(Io& io, R& r) {
  io.bytes(peak_memory("peak_alloc_bytes", "allocated"), r.allocated);
  io.bytes(peak_memory("peak_reserved_bytes", "reserved"), r.reserved);
  io.optional(show("energy_j", "energy", "J", 3)
                  .counter("vxperf_energy_joules_total",
                           "Joules the device used over measured requests and training windows "
                           "(NVML).")
                  .tracked()
                  .charted(kChartRequests, "Energy", "one video"),
              r.energy_j);
  io.optional_string("energy_from", r.energy_from);
  io.flag("energy_shared", r.energy_shared);
  io.optional(show("power_w_mean", "power", "W", 1)
                  .folded(Fold::kMean)
                  .gauge("vxperf_power_watts",
                         "Mean device power over the last request or training window (NVML).")
                  .tracked()
                  .charted(kChartWindows | kChartRequests, "Device power", "mean"),
              r.power_w_mean);
  io.optional_count(show("sm_clock_mhz_min", "SM clock", "MHz")
                        .folded(Fold::kMin)
                        .gauge("vxperf_sm_clock_mhz",
                               "Lowest SM clock read over the last request or training window "
                               "(NVML).")
                        .charted(kChartWindows, "SM clock", "lowest read"),
                    r.sm_clock_mhz_min);
  io.optional_count(show("temp_c_max", "temp", "C")
                        .folded(Fold::kMax)
                        .gauge("vxperf_gpu_temperature_celsius",
                               "Highest GPU temperature read over the last request or training "
                               "window (NVML)."),
                    r.temp_c_max);
  io.optional_strings(show("throttle", "throttle").folded(Fold::kList), r.throttle, "throttle");
  io.optional(show("cpu_energy_j", "host CPU and DRAM", "J", 3)
                  .folded(Fold::kSum)
                  .counter("vxperf_cpu_energy_joules_total",
                           "Joules the host's CPU packages and DRAM used over measured requests "
                           "and training windows (powercap).",
                           SeriesLabels::kRank)
                  .tracked(),
              r.cpu_energy_j);
}

// ---- request records ----------------------------------------------------------------------------

template <class Io, class R, Same<R, StageSummary> = 0>
void describe(Io& io, R& s) {
  io.integer("count", s.count, 0);
  io.number("total_ms", s.total_ms);
  io.number("mean_ms", s.mean_ms, 0.0);
  io.number("std_ms", s.std_ms, 0.0);
  io.number("min_ms", s.min_ms, 0.0);
  io.number("max_ms", s.max_ms, 0.0);
}

// The attention products' share of the FLOPs priced: a request's DiT, a window's step.
constexpr Show attn_share() {
  return show("attn_share", "attention share of FLOPs", "", 3).summarized(Fold::kMean);
}

// What an MFU rests on beyond the reference's fields: each written only when it says something the
// reference would not assume (a table peak, bf16, dense attention, every call a full forward).
template <class Io, class E>
void describe_efficiency_basis(Io& io, E& e) {
  io.peak_source("peak_source", e.peak_source, e.peak_tflops.has_value());
  io.dtype("dtype", e.dtype);
  io.optional_dtype("weights_dtype", e.weights_dtype);
  io.unless("attn_density", e.attn_density, 1.0);
  io.optional_count("skipped_fwd", e.skipped_fwd);
  io.optional("effective_fwd", e.effective_fwd);
}

template <class Io, class R, Same<R, DitThroughput> = 0>
void describe(Io& io, R& d) {
  io.integer("params", d.params, 0);
  io.integer("tokens", d.tokens, 0);
  io.integer("batch", d.batch, 1);
  io.small_int("devices", d.devices, 1);
  io.number("flops_per_fwd", d.flops_per_fwd, 0.0);
  io.number(attn_share(), d.attn_share, 0.0);
  io.number(
      show("tflops").gauge("vxperf_dit_tflops",
                           "Achieved transformer TFLOPS of the last request that ran the DiT.",
                           SeriesLabels::kRank),
      d.tflops, 0.0);
  io.nullable("peak_tflops", d.peak_tflops);
  io.nullable(
      show("mfu").gauge("vxperf_dit_mfu",
                        "Transformer model FLOPs utilization (fraction of peak) of the last "
                        "request that ran the DiT.",
                        SeriesLabels::kRank),
      d.mfu);
  describe_efficiency_basis(io, d);
}

// ---- the parallel layout (vxperf/topology.h) ---------------------------------------------------

// A record's "parallel" object: what its rates and peak were taken with, and where each
// dimension was read ("from": only those some source said).
template <class Io, class R, Same<R, ParallelLayout> = 0>
void describe(Io& io, R& p) {
  io.small_int("dp", p.dp, 1);
  io.small_int("dp_replicate", p.dp_replicate, 1);
  io.small_int("dp_shard", p.dp_shard, 1);
  io.small_int("cp", p.cp, 1);
  io.small_int("tp", p.tp, 1);
  io.small_int("group", p.group, 1);
  io.small_int("dp_rank", p.dp_rank, 0);
  io.named_strings("from", p.from);
}

// What a front end said of the layout, as the trace's config and topology events carry it (0
// where nothing said).
template <class Io, class R, Same<R, ParallelSpec> = 0>
void describe(Io& io, R& p) {
  io.small_int("sp", p.sp, 0);
  io.small_int("tp", p.tp, 0);
  io.small_int("dp_shard", p.dp_shard, 0);
  io.small_int("dp_replicate", p.dp_replicate, 0);
  io.small_int("group", p.group, 0);
  io.integer("dp_rank", p.dp_rank, -1);
  io.named_strings("from", p.from);
}

// The fields every record starts with.
template <class Io, class R>
void describe_head(Io& io, const char* kind, R& r) {
  io.tag("kind", kind);
  io.number("ts", r.ts, 0.0);
  io.small_int("rank", r.rank, 0);
  io.small_int("world_size", r.world_size, 1);
  io.optional_count("attempt", r.attempt);
  io.optional_string("run_id", r.run_id);
}

template <class Io, class R, Same<R, RequestRecord> = 0>
void describe(Io& io, R& r) {
  describe_head(io, "request", r);
  io.integer("req", r.req, 0);
  io.boolean("warmup", r.warmup, false);
  io.number("e2e_s", r.e2e_s);
  io.named_objects("stages", r.stages, "stage");
  io.nullable_object("dit", r.dit);
  io.device("device", r.device, r.readings);
  io.optional_count("videos", r.videos);
  io.optional("energy_j_per_video", r.energy_j_per_video);
  io.optional(show("queue_s", "queue wait", "s", 3).summarized(Fold::kMean), r.queue_s);
  io.optional(show("first_step_s", "time to first call", "s", 3).summarized(Fold::kMean),
              r.first_step_s);
  io.optional_count("denoising_steps", r.denoising_steps);
  io.optional("video_s", r.video_s);
  io.optional(show("realtime_factor", "real-time factor", "x", 2)
                  .summarized(Fold::kMean)
                  .gauge("vxperf_realtime_factor",
                         "Seconds of generation per second of video of the last completed "
                         "request that said its video (frames at fps): below 1 is faster than "
                         "real time.",
                         SeriesLabels::kRank),
              r.realtime_factor);
  io.optional_object("parallel", r.parallel);
}

// ---- training window records --------------------------------------------------------------------

template <class Io, class R, Same<R, TrainThroughput> = 0>
void describe(Io& io, R& t) {
  io.number(
      show("samples_per_s")
          .tracked()
          .gauge("vxperf_train_samples_per_second",
                 "Training samples per second of this rank, last window.", SeriesLabels::kRank),
      t.samples_per_s, 0.0);
  io.number("samples", t.samples, 0.0);
  io.number("wall_s", t.wall_s, 0.0);
  io.small_int("dp", t.dp, 1);
  // Present only when some step of the window could be priced.
  io.group(t.priced, "flops_per_step", [&](auto& io) {
    io.integer("params", t.params, 0);
    io.integer("trainable", t.trainable, t.params);
    io.number("tokens", t.tokens, 0.0);
    io.integer("priced_steps", t.priced_steps, 0);
    io.number("priced_s", t.priced_s, 0.0);
    io.number("flops_coef", t.flops_coef, 0.0);
    io.number("flops_coef_hw", t.flops_coef_hw, 0.0);
    io.string("flops_coef_reason", t.flops_coef_reason);
    io.number("flops_per_step", t.flops_per_step);
    io.number(attn_share(), t.attn_share, 0.0);
    io.small_int("devices", t.devices, 1);
    io.number(show("tflops").tracked(), t.tflops, 0.0);
    io.number(show("hw_tflops").tracked(), t.hw_tflops, 0.0);
    io.nullable("peak_tflops", t.peak_tflops);
    io.nullable(show("mfu").tracked().gauge(
                    "vxperf_train_mfu",
                    "Training model FLOPs utilization (fraction of peak), last priced window.",
                    SeriesLabels::kRank),
                t.mfu);
    io.nullable(show("hfu").tracked().gauge("vxperf_train_hfu",
                                            "Training hardware FLOPs utilization (recomputation "
                                            "included), last priced window.",
                                            SeriesLabels::kRank),
                t.hfu);
    describe_efficiency_basis(io, t);
  });
}

// A rank and its step time, as the view names its fastest and slowest ranks.
template <class Io, class Rank, class V>
void describe_rank_of(Io& io, const char* key, Rank& rank, const V& view, const char* what) {
  io.object(key, what, [&](auto& io) {
    io.small_int("rank", rank, 0);
    auto i = static_cast<std::size_t>(rank);
    io.derived("step_s_p50", i < view.step_s_p50.size() ? view.step_s_p50[i] : 0.0);
  });
}

// One phase's scores by rank, under the phase's name in the view's "phase_scores".
template <class Io, class R, Same<R, PhaseScores> = 0>
void describe(Io& io, R& s) {
  io.numbers("relative", s.relative, "xrank.phase_scores.relative", "xrank");
  io.numbers("individual", s.individual, "xrank.phase_scores.individual", "xrank");
}

template <class Io, class R, Same<R, CrossRankView> = 0>
void describe(Io& io, R& v) {
  io.derived("ranks", v.step_s_p50.size());
  io.numbers("step_s_p50", v.step_s_p50, "xrank.step_s_p50", "xrank");
  io.number("median_s", v.median_s, 0.0);
  describe_rank_of(io, "min", v.min_rank, v, "xrank.min");
  describe_rank_of(io, "max", v.max_rank, v, "xrank.max");
  io.numbers("excess_s", v.excess_s, "xrank.excess_s", "xrank");
  io.ranks("stragglers", v.stragglers, "xrank.stragglers");
  io.strings("straggler_phases", v.straggler_phases, "xrank.straggler_phases");
  io.nullable("samples_per_s", v.samples_per_s);
  io.nullable("tflops", v.tflops);
  io.optional_pair("peak_alloc_bytes", v.peak_alloc, "xrank.peak_alloc_bytes", "rank", "bytes");
  io.number("exchange_s", v.exchange_s, 0.0);
  io.numbers("relative_score", v.relative_score, "xrank.relative_score", "xrank");
  io.numbers("individual_score", v.individual_score, "xrank.individual_score", "xrank");
  io.numbers("lost_s", v.lost_s, "xrank.lost_s", "xrank");
  // Absent from the records of versions before it.
  io.named_objects("phase_scores", v.phase_scores, "xrank phase", kAbsentEmpty);
}

// GB/s of `bytes` over `seconds`, 0 when either is not known.
inline double gb_per_s(const std::optional<std::int64_t>& bytes, double seconds) {
  return bytes && seconds > 0 ? static_cast<double>(*bytes) / seconds / 1e9 : 0.0;
}

template <class Io, class R, Same<R, OutsideSteps> = 0>
void describe(Io& io, R& o) {
  io.integer("saves", o.saves, 0);
  io.number(show("save_s", "checkpoint save", "s", 3).summarized(Fold::kMean), o.save_s,
            0.0);
  io.optional_count("save_bytes", o.save_bytes);
  if (o.save_bytes) io.derived("save_gb_per_s", gb_per_s(o.save_bytes, o.save_s));
  io.integer("restores", o.restores, 0);
  io.number(show("restore_s", "checkpoint restore", "s", 3).summarized(Fold::kMean),
            o.restore_s, 0.0);
  io.optional_count("restore_bytes", o.restore_bytes);
  if (o.restore_bytes) io.derived("restore_gb_per_s", gb_per_s(o.restore_bytes, o.restore_s));
  io.integer("evals", o.evals, 0);
  io.number(show("eval_s", "evaluation", "s", 3).summarized(Fold::kMean), o.eval_s,
            0.0);
}

// The ledger's parts series: each part of a rank's wall time so far, by its kind.
inline constexpr char kLedgerSeconds[] = "vxperf_train_ledger_seconds";
inline constexpr char kLedgerSecondsHelp[] =
    "The training loop's wall time so far by part of its ledger: kind=productive (ideal step x "
    "steps), first_step_excess, slow_step_excess, data_wait, save, restore, eval, between_steps, "
    "startup, setup.";
// A part's row: one kind of the ledger's series.
constexpr Show ledger_part(const char* key, const char* kind) {
  return show(key).gauge(kLedgerSeconds, kLedgerSecondsHelp, SeriesLabels::kRank).kind(kind);
}

template <class Io, class R, Same<R, Ledger> = 0>
void describe(Io& io, R& l) {
  io.number("wall_s", l.wall_s);
  io.count("steps", l.steps);
  io.number("ideal_step_s", l.ideal_step_s);
  for (const LedgerPart& part : kLedgerParts) {
    auto& seconds = l.*part.seconds;
    auto said = [&io, &seconds, &part](auto name) {
      switch (part.said) {
        case LedgerPart::Said::kAlways:
          io.number(name, seconds);
          break;
        case LedgerPart::Said::kAlwaysRead0:
          io.number(name, seconds, 0.0);
          break;
        case LedgerPart::Said::kWhereNotZero:
          io.unless(name, seconds, 0.0);
          break;
      }
    };
    if (part.series) {
      said(ledger_part(part.key, part.series));
    } else {
      said(part.key);
    }
  }
  io.number(show("goodput")
                .tracked()
                .gauge("vxperf_train_goodput",
                       "Productive time (ideal step x steps) over the loop's wall time so far.",
                       SeriesLabels::kRank),
            l.goodput);
  if (l.attempts != 1) io.derived("attempts", l.attempts);
  io.unless("recovery_s", l.recovery_s, 0.0);
}

template <class Io, class R, Same<R, TrainWindowRecord> = 0>
void describe(Io& io, R& r) {
  describe_head(io, "train_window", r);
  io.integer("step_first", r.step_first, 0);
  io.integer("step_last", r.step_last, 0);
  io.count("steps", r.steps);
  io.integer("warmup_excluded", r.warmup_excluded, 0);
  io.number("step_s_p50", r.step_s_p50);
  io.number("step_s_p95", r.step_s_p95);
  io.named_numbers("phases_s", r.phases_s);
  io.number("micro_steps", r.micro_steps, 1.0);
  // The phases outran the step by this (device work of one phase drained inside the next): past a
  // few percent of the step, its phase breakdown is not to be read closely.
  io.number(show("overrun_s", "phase overrun", "s", 3).summarized(Fold::kMean).per_rank(),
            r.overrun_s, 0.0);
  io.device("device", r.device, r.readings);
  io.optional(show("energy_j_per_sample")
                  .tracked()
                  .gauge("vxperf_train_energy_joules_per_sample",
                         "Joules per training sample over the last window (NVML)."),
              r.energy_j_per_sample);
  io.nullable_object("throughput", r.throughput);
  io.optional(show("eta_s").tracked(), r.eta_s);
  io.optional_object("xrank", r.xrank);
  io.optional_object("outside", r.outside);
  io.optional_object("ledger", r.ledger);
  io.optional_object("parallel", r.parallel);
}

// The training's end: the ledger through it (TrainerCore::finish).
template <class Io, class R, Same<R, TrainEndRecord> = 0>
void describe(Io& io, R& r) {
  describe_head(io, "train_end", r);
  io.integer("step_first", r.step_first, 0);
  io.integer("step_last", r.step_last, 0);
  io.count("steps", r.steps);
  io.number("after_last_step_s", r.after_last_step_s, 0.0);
  io.optional_object("ledger", r.ledger);
}

// ---- the model description (vxperf/model.h), as the trace's model events carry it ---------------

template <class Io, class R, Same<R, AttentionWidths> = 0>
void describe(Io& io, R& w) {
  io.integer("self", w.self, 0);
  io.integer("cross", w.cross, 0);
  io.integer("modules", w.modules, 0);
}

// The fields a model declaration is priced by; `training` adds what the trained model says.
// Read back, "trainable" defaults to the parameter count and a density must be valid.
template <class Io, class R, Same<R, ModelInfo> = 0>
void describe(Io& io, R& m, bool training) {
  io.integer("params", m.params, 0);
  if (training) {
    io.integer("trainable", m.trainable, m.params);
    io.boolean("ckpt", m.checkpointing, false);
  }
  io.nullable_object("attn", m.attention);
  io.integer("text_tokens", m.text_tokens, 0);
  io.optional_dtype("dtype", m.dtype);
  io.optional_dtype("storage_dtype", m.storage_dtype);
  io.density("attn_density", m.attn_density);
}

}  // namespace vxperf::internal
