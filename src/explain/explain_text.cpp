// `vxperf explain`'s text: per rank, HTA's numbers in a few lines, HTA's critical path when asked
// for, then the waterfall of each vxperf range kind (means over the ranges captured, in
// milliseconds).
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/strings.h"
#include "vxperf/explain.h"

namespace vxperf::explain {
namespace {

using internal::strprintf;

std::string pct(const std::optional<double>& v) {
  return v ? strprintf("%.2f%%", *v) : std::string("-");
}

std::string short_name(const std::string& name, std::size_t width) {
  std::string out;
  for (char c : name) out += (c == '\n' || c == '\t') ? ' ' : c;
  if (out.size() > width) out = out.substr(0, width - 3) + "...";
  return out;
}

std::string steps_text(const std::vector<std::int64_t>& steps) {
  // vxperf's own "step N" ranges are no profiler steps: say what was looked for, and what was read.
  if (steps.empty()) return "none (no ProfilerStep#N in the trace: all of it read)";
  if (steps.size() == 1) return std::to_string(steps[0]);
  return std::to_string(steps.front()) + "-" + std::to_string(steps.back()) + " (" +
         std::to_string(steps.size()) + ")";
}

std::string us(double v) {
  return strprintf(v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f us" : "%.3f us", v);
}

void waterfall_text(const RankExplanation& r, bool flops_read, std::string& out);

std::string row_label(const std::string& kind, const std::string& range, std::int64_t index) {
  return kind == "denoising_step" ? "    " + call_label(range, index)
         : kind == "stage" || kind == "phase" || kind == "micro_step" ? "  " + range
                                                                      : range;
}

// A table of the replayed ranges (ms, mean per range): each row's span, then `seconds(row, c)`
// under each of `columns`.
template <class Seconds>
void per_range_text(const char* title, const std::vector<std::string>& columns,
                    const std::vector<ReplayRow>& rows, Seconds seconds, std::string& out) {
  out += std::string("  ") + title + "\n";
  out += strprintf("    %-26s %8s |", "range", "span");
  for (const std::string& c : columns) out += strprintf(" %12s", short_name(c, 12).c_str());
  out += "\n";
  for (const ReplayRow& w : rows) {
    const double ms = 1e3 / static_cast<double>(w.count > 0 ? w.count : 1);
    out +=
        strprintf("    %-26s %8.3f |",
                  short_name(row_label(w.kind, w.range, w.step_index), 26).c_str(), w.span_s * ms);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      out += strprintf(" %12.3f", seconds(w, c) * ms);
    }
    out += "\n";
  }
}

// vxperf's replay: how well it gives the spans again, its critical path per range by bound type,
// the what-ifs ranked by gain and their predicted span per range.
void replay_text(const RankReplay& r, std::string& out) {
  out += strprintf("  replay         vxperf's graph: %" PRId64 " nodes, %" PRId64 " edges, %" PRId64
                   " ranges; largest error of a row's time %.3f us, of a "
                   "replayed span %.4f%%%s\n",
                   r.nodes, r.edges, r.ranges, r.largest_row_error_us, r.largest_error_pct,
                   r.largest_error_range.empty()
                       ? ""
                       : (" (" + short_name(r.largest_error_range, 50) + ")").c_str());
  if (!r.rows.empty()) {
    out += "  replay's critical path (ms, mean per range; parts add up to the replayed span)\n";
    out += strprintf("    %-26s %5s %8s %8s | %8s %8s %8s %8s %8s %8s %8s %8s\n", "range", "n",
                     "span", "replayed", "host", "launch", "compute", "comm", "copies", "syncwait",
                     "devidle", "dataload");
    static const char* kBounds[] = {"host",   "launch_overhead", "gpu_compute", "gpu_communication",
                                    "copies", "sync_wait",       "device_idle", "data_loading"};
    for (const ReplayRow& w : r.rows) {
      const double ms = 1e3 / static_cast<double>(w.count > 0 ? w.count : 1);
      out += strprintf("    %-26s %5" PRId64 " %8.3f %8.3f |",
                       short_name(row_label(w.kind, w.range, w.step_index), 26).c_str(), w.count,
                       w.span_s * ms, w.replayed_s * ms);
      for (const char* b : kBounds) {
        auto it = w.path_s.find(b);
        out += strprintf(" %8.3f", it == w.path_s.end() ? 0.0 : it->second * ms);
      }
      out += "\n";
    }
  }
  if (r.what_ifs.empty()) return;
  out += "  what-if        the requests' and steps' span replayed with the edit (ranked by gain)\n";
  for (std::size_t i : r.ranked) {
    const WhatIfResult& w = r.what_ifs[i];
    if (!w.applies) {
      out += strprintf("    %-24s does not apply: %s\n", short_name(w.what_if, 24).c_str(),
                       w.why.c_str());
      continue;
    }
    out += strprintf("    %-24s %10.3f ms -> %10.3f ms  gain %10.3f ms (%.1f%%)\n",
                     short_name(w.what_if, 24).c_str(), w.span_s * 1e3, w.predicted_s * 1e3,
                     w.gain_s * 1e3, w.span_s > 0 ? w.gain_s / w.span_s * 100 : 0.0);
  }
  // Stacked: shown when it says more than the ranking's first line.
  const bool stacked = r.stacked.size() >= 2;
  if (stacked) {
    out +=
        "  stacked        the best what-if, then the best with it applied, ... (each gain against "
        "the line above)\n";
    for (std::size_t i = 0; i < r.stacked.size(); ++i) {
      const WhatIfResult& w = r.stacked[i];
      out += strprintf("    %-24s %10.3f ms -> %10.3f ms  gain %10.3f ms (%.1f%%)\n",
                       short_name((i == 0 ? "" : "then ") + w.what_if, 24).c_str(), w.span_s * 1e3,
                       w.predicted_s * 1e3, w.gain_s * 1e3,
                       w.span_s > 0 ? w.gain_s / w.span_s * 100 : 0.0);
    }
  }
  if (r.rows.empty()) return;
  std::vector<std::string> ranked;
  for (std::size_t i : r.ranked) ranked.push_back(r.what_ifs[i].what_if);
  per_range_text(
      "what-if per range (ms, mean per range: predicted span)", ranked, r.rows,
      [&](const ReplayRow& w, std::size_t c) {
        const std::size_t i = r.ranked[c];
        return i < w.what_if_s.size() ? w.what_if_s[i] : 0.0;
      },
      out);
  if (!stacked) return;
  std::vector<std::string> stacked_names;
  for (std::size_t i = 0; i < r.stacked.size(); ++i) {
    stacked_names.push_back((i == 0 ? "" : "+") + r.stacked[i].what_if);
  }
  per_range_text(
      "stacked per range (ms, mean per range: predicted span with the what-ifs up to each)",
      stacked_names, r.rows,
      [](const ReplayRow& w, std::size_t c) {
        return c < w.stacked_s.size() ? w.stacked_s[c] : 0.0;
      },
      out);
}

// HTA's critical path per instance: its length, the breakdown by bound type, the path's edges by
// type and the events that cost most.
void critical_path_text(const RankCriticalPath& cp, std::string& out) {
  out += "  critical path  HTA's, " +
         (cp.annotation.empty() ? std::string("the whole trace")
                                : "annotation \"" + short_name(cp.annotation, 60) + "\"") +
         (cp.sync_events ? "\n"
                         : "; no cuda_sync events: no sync edges, the path crosses to the GPU at "
                           "most once\n");
  for (const CriticalPathInstance& i : cp.instances) {
    std::string which = i.first == i.last ? strprintf("%" PRId64, i.first)
                                          : strprintf("%" PRId64 "-%" PRId64, i.first, i.last);
    out += "    instance " + which;
    if (!i.row.empty()) out += "  " + short_name(i.row, 40) + " (" + i.row_category + ")";
    if (i.window_begin_us && i.window_end_us) {
      out += ", window " + us(*i.window_end_us - *i.window_begin_us);
    }
    if (i.hta != "ok") {
      out += "\n      HTA " +
             std::string(i.hta == "None"         ? "returns None"
                         : i.hta == "False"      ? "returns success False"
                         : i.hta == "unmodelled" ? "case vxperf does not model"
                                                 : "raises") +
             ": " + i.why + "\n";
      if (!i.has_path) continue;
      out += "      (given anyway)";
    }
    out += ": path " + us(i.length_us);
    if (i.summary_total_us != i.length_us) out += " (summary total " + us(i.summary_total_us) + ")";
    out += strprintf(", %" PRId64 " nodes\n", i.path_nodes);
    const char* head = "      bound by   ";
    for (const CriticalPathBound& b : i.breakdown) {
      out += strprintf("%s%-28s %12s %8s\n", head,
                       b.bound_by.empty() ? "(dependency, sync)" : b.bound_by.c_str(),
                       us(b.us).c_str(), b.pct ? strprintf("%.2f%%", *b.pct).c_str() : "-");
      head = "                 ";
    }
    std::string edges;
    for (const auto& [type, n] : i.edges) {
      const std::string t = type.rfind("critical_path_", 0) == 0 ? type.substr(14) : type;
      edges += (edges.empty() ? "" : ", ") + t + strprintf(" %" PRId64, n);
    }
    out += "      edges      " + edges + "\n";
    head = "      top events ";
    for (const CriticalPathEvent& e : i.top_events) {
      out += strprintf("%s%12s  x%-4" PRId64 " %-27s %s\n", head, us(e.us).c_str(), e.edges,
                       e.bound_by.c_str(), short_name(e.name, 60).c_str());
      head = "                 ";
    }
  }
}

void rank_text(const RankExplanation& r, bool flops_read, std::string& out) {
  out += strprintf("rank %d  %s\n", r.rank, r.file.c_str());
  if (!r.has_device_rows) {
    out += std::string("  ") + kCpuOnly + "\n";
  } else {
    const Temporal& t = r.temporal;
    out += strprintf("  device time    %.0f us: compute %s, non-compute %s, idle %s\n",
                     t.kernel_time_us, pct(t.compute_pct).c_str(), pct(t.non_compute_pct).c_str(),
                     pct(t.idle_pct).c_str());
    out += "  comm overlap   " +
           (r.comm_comp_overlap_pct
                ? strprintf("%.2f%% of communication under computation\n", *r.comm_comp_overlap_pct)
                : std::string("no communication\n"));
    const char* head = "  kernel types   ";
    for (const auto& [label, us] : r.kernel_types) {
      if (us == 0) continue;
      out += strprintf("%s%-56s %10.0f us\n", head, label.c_str(), us);
      head = "                 ";
    }
    for (const StreamIdle& s : r.idle_by_stream) {
      out += strprintf("  idle, stream %-3" PRId64
                       " host wait %.2f us, kernel wait %.2f us, other %.2f us\n",
                       s.stream, s.host_wait_us, s.kernel_wait_us, s.other_us);
    }
    const LaunchStats& l = r.launches;
    out += strprintf("  launches       %" PRId64 ": %" PRId64 " over 50 us, %" PRId64
                     " started over 100 us late, %" PRId64 " ran shorter than their launch\n",
                     l.n_events, l.n_long_runtime, l.n_long_launch_delay, l.n_short_gpu);
    int shown = 0;
    for (const KernelStats& k : r.kernels) {
      if (shown++ == 5) break;
      out += strprintf("  kernel         %-50s %-13s %10.0f us  x%" PRId64 "\n",
                       short_name(k.name, 50).c_str(), k.type.c_str(), k.sum_us, k.count);
    }
  }
  if (r.critical_path) critical_path_text(*r.critical_path, out);
  waterfall_text(r, flops_read, out);
  if (r.replay) replay_text(*r.replay, out);
}

// `flops_read`: some records priced some range (else the text's end says why none has an MFU).
void waterfall_text(const RankExplanation& r, bool flops_read, std::string& out) {
  if (r.waterfall.empty()) return;
  if (!r.has_device_rows) {
    // No device span to split: the host time alone, not a table of zeros that reads as measured.
    out += "  ranges (ms, mean per range: host time)\n";
    out += strprintf("    %-26s %5s %8s\n", "range", "n", "host");
    for (const WaterfallRow& w : r.waterfall) {
      const double ms = 1e3 / static_cast<double>(w.count > 0 ? w.count : 1);
      out += strprintf("    %-26s %5" PRId64 " %8.3f\n",
                       short_name(row_label(w.kind, w.range, w.step_index), 26).c_str(), w.count,
                       w.host_s * ms);
    }
    return;
  }
  out += "  waterfall (ms, mean per range; parts add up to the device span)\n";
  out += strprintf("    %-26s %5s %8s %8s | %8s %8s %8s %8s %8s %8s %8s %8s %6s\n", "range", "n",
                   "host", "span", "ideal", "excess", "comm", "memory", "other", "hostwait",
                   "kernwait", "idle", "MFU");
  bool off = false, unpriced = false;
  for (const WaterfallRow& w : r.waterfall) {
    const double n = static_cast<double>(w.count > 0 ? w.count : 1);
    const double ms = 1e3 / n;
    const std::string label = row_label(w.kind, w.range, w.step_index);
    out += strprintf("    %-26s %5" PRId64
                     " %8.3f %8.3f | %8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6s\n",
                     short_name(label, 26).c_str(), w.count, w.host_s * ms, w.span_s * ms,
                     w.ideal_s ? strprintf("%.3f", *w.ideal_s * ms).c_str() : "-",
                     w.kernel_excess_s * ms, w.exposed_comm_s * ms, w.memory_s * ms, w.other_s * ms,
                     w.idle_host_wait_s * ms, w.idle_kernel_wait_s * ms, w.idle_other_s * ms,
                     w.mfu ? strprintf("%.1f%%", *w.mfu * 100).c_str() : "n/a");
    off = off || (w.ideal_s && w.kernel_excess_s < 0);
    unpriced = unpriced || !w.mfu;
  }
  if (unpriced && flops_read) {
    out +=
        "  MFU n/a: no FLOPs priced for the range (records price requests, transformer calls, "
        "steps, fwd and bwd)\n";
  }
  if (off) {
    out +=
        "  note: a negative excess means the FLOPs at the peak take longer than the computation "
        "did: the cost model or the peak is off\n";
  }
}

}  // namespace

std::string explanation_text(const Explanation& e) {
  std::string out;
  std::vector<std::int64_t> steps =
      e.ranks.empty() ? std::vector<std::int64_t>{} : e.ranks[0].steps;
  out += strprintf("vxperf explain: %zu rank(s); profiler steps analysed: %s\n", e.ranks.size(),
                   steps_text(steps).c_str());
  for (const RankExplanation& r : e.ranks) {
    out += "\n";
    rank_text(r, !e.flops_from.empty(), out);
  }
  if (!e.kernel_types.empty()) {
    out += "\nkernel types, all ranks:";
    for (const auto& [label, us] : e.kernel_types) {
      auto p = e.kernel_types_pct.find(label);
      out += strprintf("\n  %-60s %12.0f us %6.1f%%", label.c_str(), us,
                       p == e.kernel_types_pct.end() ? 0.0 : p->second);
    }
    out += "\n";
  }
  if (!e.flops_from.empty()) {
    out += "\nFLOPs from:";
    for (const std::string& f : e.flops_from) out += " " + f;
    out += "\n";
  } else {
    bool ranges = false;
    // A rank with no device activity has no ideal time or MFU whatever the records say.
    for (const RankExplanation& r : e.ranks) {
      ranges = ranges || (!r.waterfall.empty() && r.has_device_rows);
    }
    if (ranges) {
      out += e.records_files.empty()
                 ? "\nFLOPs: no records found (--records FILE): no ideal time or MFU\n"
                 : "\nFLOPs: none from the records read (see the problems): no ideal time or "
                   "MFU\n";
    }
  }
  for (const std::string& p : e.problems) out += "problem: " + p + "\n";
  return out;
}

}  // namespace vxperf::explain
