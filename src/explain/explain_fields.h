// The fields of each struct a part of `vxperf explain --partial` holds, named once in the order
// written: the schema of that document (explain_part.cpp). `vxperf explain --json` walks HTA's
// per-rank tables' (Temporal to LaunchStats) too (explain_json.cpp). Not in an unnamed namespace:
// partial_io's traits find them by argument lookup.
#pragma once

#include "explain/explain_part.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

template <class IO>
void fields(IO& io, Temporal& t) {
  io("kernel_time_us", t.kernel_time_us);
  io("idle_time_us", t.idle_time_us);
  io("compute_time_us", t.compute_time_us);
  io("non_compute_time_us", t.non_compute_time_us);
  io("idle_pct", t.idle_pct);
  io("compute_pct", t.compute_pct);
  io("non_compute_pct", t.non_compute_pct);
}

template <class IO>
void fields(IO& io, StreamIdle& s) {
  io("stream", s.stream);
  io("host_wait_us", s.host_wait_us);
  io("kernel_wait_us", s.kernel_wait_us);
  io("other_us", s.other_us);
  io("host_wait_ratio", s.host_wait_ratio);
  io("kernel_wait_ratio", s.kernel_wait_ratio);
  io("other_ratio", s.other_ratio);
}

template <class IO>
void fields(IO& io, KernelStats& k) {
  io("name", k.name);
  io("type", k.type);
  io("count", k.count);
  io("sum_us", k.sum_us);
  io("max_us", k.max_us);
  io("min_us", k.min_us);
  io("mean_us", k.mean_us);
  io("std_us", k.std_us);
}

template <class IO>
void fields(IO& io, LaunchStats& l) {
  io("n_events", l.n_events);
  io("n_long_runtime", l.n_long_runtime);
  io("n_long_launch_delay", l.n_long_launch_delay);
  io("n_short_gpu", l.n_short_gpu);
}

template <class IO>
void fields(IO& io, WaterfallRow& w) {
  io("range", w.range);
  io("kind", w.kind);
  io("step_index", w.step_index);
  io("count", w.count);
  io("host_s", w.host_s);
  io("span_s", w.span_s);
  io("ideal_s", w.ideal_s);
  io("kernel_excess_s", w.kernel_excess_s);
  io("exposed_comm_s", w.exposed_comm_s);
  io("memory_s", w.memory_s);
  io("idle_host_wait_s", w.idle_host_wait_s);
  io("idle_kernel_wait_s", w.idle_kernel_wait_s);
  io("idle_other_s", w.idle_other_s);
  io("other_s", w.other_s);
  io("flops", w.flops);
  io("mfu", w.mfu);
}

template <class IO>
void fields(IO& io, ReplayRow& r) {
  io("range", r.range);
  io("kind", r.kind);
  io("step_index", r.step_index);
  io("count", r.count);
  io("span_s", r.span_s);
  io("replayed_s", r.replayed_s);
  io("error_pct", r.error_pct);
  io("path_s", r.path_s);
  io("what_if_s", r.what_if_s);
  io("stacked_s", r.stacked_s);
}

template <class IO>
void fields(IO& io, WhatIfResult& w) {
  io("what_if", w.what_if);
  io("applies", w.applies);
  io("why", w.why);
  io("span_s", w.span_s);
  io("predicted_s", w.predicted_s);
  io("gain_s", w.gain_s);
}

template <class IO>
void fields(IO& io, RankReplay& r) {
  io("nodes", r.nodes);
  io("edges", r.edges);
  io("ranges", r.ranges);
  io("largest_row_error_us", r.largest_row_error_us);
  io("largest_error_pct", r.largest_error_pct);
  io("largest_error_range", r.largest_error_range);
  io("rows", r.rows);
  io("what_ifs", r.what_ifs);
  io("ranked", r.ranked);
  io("stacked", r.stacked);
}

// A window's analyses: analyse_rank's part of a RankExplanation and the steps kept (a partial
// holds no critical path).
template <class IO>
void fields(IO& io, WindowedAnalysis& a) {
  io("has_device_rows", a.rank.has_device_rows);
  io("steps", a.rank.steps);
  io("temporal", a.rank.temporal);
  io("idle_by_stream", a.rank.idle_by_stream);
  io("comm_comp_overlap_pct", a.rank.comm_comp_overlap_pct);
  io("kernel_types", a.rank.kernel_types);
  io("kernels", a.rank.kernels);
  io("launches", a.rank.launches);
  io("problems", a.problems);
}

template <class IO>
void fields(IO& io, TracePart& t) {
  io("file", t.file);
  io("error", t.error);
  io("warnings", t.warnings);
  io("rank", t.rank);
  io("rank_found", t.rank_found);
  io("step_strings", t.step_strings);
  io("analysed", t.analysed);
  io("filtered", t.filtered);
  io("whole", t.whole);
  io("waterfall", t.waterfall);
  io("requests_without_record", t.requests_without_record);
  io("steps_without_record", t.steps_without_record);
  io("matched", t.matched);
  io("priced", t.priced);
  io("replay", t.replay);
  io("replay_problems", t.replay_problems);
}

// After the header (vxperf_partial, command).
template <class IO>
void fields(IO& io, ExplainParts& p) {
  io("replay", p.replay);
  io("what_ifs", p.what_ifs);
  io("records_files", p.records_files);
  io("records_problems", p.records_problems);
  io("traces", p.traces);
}

}  // namespace vxperf::explain
