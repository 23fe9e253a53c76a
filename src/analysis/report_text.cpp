// The report as text (format_report): what `vxperf report` prints.
#include <algorithm>
#include <cstring>

#include "analysis/report_format.h"
#include "analysis/units.h"
#include "base/strings.h"
#include "vxperf/report.h"

namespace vxperf::analysis {

using internal::strprintf;
using report_format::kJoulesPerKwh;
using report_format::reading_text;
namespace {

std::string opt_text(const std::optional<double>& v, const char* format, double scale = 1) {
  return v ? strprintf(format, *v * scale) : std::string("-");
}

// The meter's lines: energy per `unit` and in all, then power, clock, temperature, throttling.
template <class Line>
void energy_lines(Line& line, const EnergySummary& e, const char* unit, const char* over) {
  if (e.records > 0) {
    std::string from;
    for (const auto& f : e.energy_from) from += (from.empty() ? "" : ", ") + f;
    line("  energy   " + opt_text(e.per_unit_j, "%.3f J") + "/" + unit +
         strprintf(", %.3f J over %lld %s", e.energy_j, static_cast<long long>(e.records), over) +
         (from.empty() ? "" : " (from " + from + ")"));
  }
  // The numbers on one line, a mean said unread too ("power - mean, - max"), the others when read;
  // each list on a line of its own.
  std::vector<std::string> device;
  for (const auto& r : e.readings) {
    if (r.show.fold == Fold::kMean || (r.show.fold != Fold::kList && r.value)) {
      device.push_back(reading_text(r));
    }
  }
  line("  device   " + internal::join(device, "  "));
  for (const auto& r : e.readings) {
    if (r.show.fold != Fold::kList) continue;
    line(strprintf("  %-8s ", r.show.label) +
         (r.seen.empty() ? std::string("none seen") : internal::join(r.seen, ", ")));
  }
}

// The summarized record fields that some record read, on one line ("  fields   phase overrun
// 0.012 s mean, 0.050 s max  ...").
template <class Line>
void fields_line(Line& line, const std::vector<ReadingSummary>& fields) {
  std::vector<std::string> read;
  for (const auto& f : fields) {
    if (f.value || !f.seen.empty()) read.push_back(reading_text(f));
  }
  if (!read.empty()) line("  fields   " + internal::join(read, "  "));
}

// "cuda:0 rank 1".
std::string device_label(const DeviceEnergy& d) {
  return strprintf("cuda:%d rank %d", d.device, d.rank);
}

// The job's totals: energy in all, per video and per sample, each device, what went unread.
template <class Line>
void job_energy_lines(Line& line, const JobEnergy& e) {
  std::string head =
      strprintf("Energy (job): %.6f kWh (%.3f J) on %zu device%s", e.energy_j / kJoulesPerKwh,
                e.energy_j, e.devices.size(), e.devices.size() == 1 ? "" : "s");
  for (const auto& r : e.totals) {
    if (r.value) head += "; " + reading_text(r);
  }
  line(head);
  if (e.j_per_video) {
    line(strprintf("  per video   %.3f J over %lld videos (%.3f J of their requests)",
                   *e.j_per_video, static_cast<long long>(e.videos), e.request_energy_j));
  }
  if (e.j_per_sample) {
    line(strprintf("  per sample  %.4f J over %.6g samples (every rank's %.3f J)", *e.j_per_sample,
                   e.samples, e.window_energy_j));
  }
  for (const auto& d : e.devices) {
    line(strprintf("  %-14s %.6f kWh  %.3f J  ", device_label(d).c_str(),
                   d.energy_j / kJoulesPerKwh, d.energy_j) +
         opt_text(d.power_w_mean, "%.1f W") +
         strprintf(" mean over %.3f s (%lld records)", d.seconds,
                   static_cast<long long>(d.records)));
  }
  if (e.shared > 0) {
    line(
        strprintf("  shared      %lld records split their device's energy with others open at the "
                  "same time",
                  static_cast<long long>(e.shared)));
  }
  if (e.unread > 0) {
    std::string which;
    for (const auto& label : e.unread_first) which += (which.empty() ? "" : ", ") + label;
    if (e.unread > static_cast<std::int64_t>(e.unread_first.size())) which += ", ...";
    line(strprintf("  no readings %lld of %lld records: ", static_cast<long long>(e.unread),
                   static_cast<long long>(e.records)) +
         which);
  }
}

// "  layout   dp=4 (2 replicas x 2 shards)  cp=2  tp=1, 2 ranks a request (cp: diffusers, ...)".
std::string layout_line(const ParallelLayout& p, bool requests) {
  std::string text = strprintf("  layout   dp=%d", p.dp);
  if (p.dp_shard > 1) text += strprintf(" (%d x %d sharded)", p.dp_replicate, p.dp_shard);
  text += strprintf("  cp=%d  tp=%d", p.cp, p.tp);
  if (requests) text += strprintf(", %d rank%s a request", p.group, p.group == 1 ? "" : "s");
  std::string from;
  for (const auto& [dim, source] : p.from) {
    from += (from.empty() ? "" : ", ") + dim + ": " + source;
  }
  // No source said a dimension: they follow from the world size alone.
  return text + (from.empty() ? " (from the world size)" : " (" + from + ")");
}

using units::duration;
using units::flops_rate;
using units::gib;
using units::param_count;

std::string pct(const std::optional<double>& fraction) {
  return fraction ? units::percent(*fraction) : std::string("-");
}

std::string flops_cell(const std::optional<double>& tflops) {
  return tflops ? units::flops_cell(*tflops) : std::string("-");
}

// "  DiT 1.42B params  150.3 TFLOPS  MFU 45.1% of 333 TFLOPS per device (measured, fp8)". The
// records say a peak's source only when it was measured (a table or variable peak is the
// reference's own and unmarked), and the dtype only when it is not bf16.
std::string dit_line(const std::optional<std::int64_t>& params, const std::optional<double>& rate,
                     const std::optional<double>& device_rate, const std::string& utilization,
                     const std::optional<double>& peak, const std::string& source,
                     const std::string& dtype) {
  std::string text = "  DiT ";
  if (params) text += param_count(*params) + " params  ";
  text += rate ? flops_rate(*rate) : std::string("-");
  // A job rate of several devices says so, with what one device computed at (the MFU's rate).
  if (rate && device_rate && *rate > *device_rate * 1.0001) {
    text += " job (" + flops_rate(*device_rate) + " per device)";
  }
  text += "  " + utilization;
  if (peak) {
    text += " of " + flops_rate(*peak) + " per device";
    std::string basis = source == "measured" ? source : "";
    if (!dtype.empty() && dtype != "bf16") basis += (basis.empty() ? "" : ", ") + dtype;
    if (!basis.empty()) text += " (" + basis + ")";
  }
  return text;
}

// "  cached forwards: 12 of 40 transformer calls skipped, 25.5 full forwards computed".
std::string skip_line(const std::optional<std::int64_t>& skipped,
                      const std::optional<double>& effective, const char* calls_text) {
  if (!skipped && !effective) return {};
  return strprintf("  cached forwards: %lld %s skipped, %.4g full forwards computed",
                   static_cast<long long>(skipped.value_or(0)), calls_text, effective.value_or(0));
}

// "Partial: ..." what the job's numbers lack (Report::partial); a few files named, then a count.
std::string partial_line(const Partial& p) {
  auto files = [](const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < 3; ++i) {
      text += (i ? ", " : "") + names[i];
    }
    if (names.size() > 3) text += strprintf(" and %zu more", names.size() - 3);
    return text;
  };
  std::vector<std::string> parts;
  if (!p.missing_ranks.empty()) {
    parts.push_back(strprintf("%zu of %d ranks have no training records", p.missing_ranks.size(),
                              p.world_size));
  }
  if (!p.torn_files.empty()) {
    parts.push_back(strprintf("%zu file%s lost %s last line (%s)", p.torn_files.size(),
                              p.torn_files.size() > 1 ? "s" : "",
                              p.torn_files.size() > 1 ? "their" : "its",
                              files(p.torn_files).c_str()));
  }
  if (!p.repeated_files.empty()) {
    std::vector<std::string> names;
    for (const auto& [file, of] : p.repeated_files) names.push_back(file);
    parts.push_back(strprintf("%zu file%s not read, the same as one read before (%s)",
                              p.repeated_files.size(), p.repeated_files.size() > 1 ? "s" : "",
                              files(names).c_str()));
  }
  std::string text = "Partial:";
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : " ") + parts[i];
  return text + " (the warnings say which)";
}

// "productive 1.000s (10 steps x ideal 0.100s) + first step 0.200s + ...": the ledger's parts
// (kLedgerParts) that its report names, the productive part with its steps where asked.
std::string ledger_sum(const Ledger& l, bool steps) {
  std::string text;
  for (const LedgerPart& part : kLedgerParts) {
    if (!ledger_group_said(l, part.group)) continue;
    text += strprintf("%s%s %.3fs", text.empty() ? "" : " + ", part.words, l.*part.seconds);
    if (steps && part.seconds == &Ledger::productive_s) {
      text +=
          strprintf(" (%lld steps x ideal %.3fs)", static_cast<long long>(l.steps), l.ideal_step_s);
    }
  }
  return text;
}

// A denoising step beside the calls of the table above: all of a step's transformer calls.
std::string denoising_step_line(const DenoisingStepSummary& d, std::int64_t requests) {
  std::string text = strprintf("  denoising step: %.4g steps, mean %.1fms (%.3g call%s each)",
                               d.steps, d.mean_ms, d.calls, d.calls == 1.0 ? "" : "s");
  if (d.requests < requests) {
    text += strprintf("; %lld of %lld requests said their steps",
                      static_cast<long long>(d.requests), static_cast<long long>(requests));
  }
  return text;
}

}  // namespace

std::string format_report(const Report& report) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  // The warnings are the command's to say, once, on standard error (and in --json's "warnings").
  if (!report.requests && !report.training) {
    line("no records");
    return out;
  }
  if (const auto& p = report.partial) line(partial_line(*p));
  if (const auto& r = report.requests) {
    line(strprintf("Requests: %lld measured%s", static_cast<long long>(r->count),
                   r->warmup
                       ? strprintf(" (%lld warmup %s)", static_cast<long long>(r->warmup),
                                   r->warmup == r->count ? "included: all are warmup" : "excluded")
                             .c_str()
                       : ""));
    const double e2e_top = r->e2e_max_s;
    line("  e2e      p50 " + units::seconds(r->e2e_p50_s, e2e_top) + "  p95 " +
         units::seconds(r->e2e_p95_s, e2e_top) + "  max " + units::seconds(r->e2e_max_s) +
         "  mean " + units::seconds(r->e2e_mean_s, e2e_top));
    if (r->requests_per_hour) {
      // Over the span the requests cover, idle gaps included; the exit summary's reqs/hour is
      // back to back (their summed e2e), so the two differ for spaced-out requests.
      line(strprintf("  rate     %.1f requests/hour (first start to last end, gaps included)",
                     *r->requests_per_hour));
    }
    if (r->layout) {
      line(layout_line(*r->layout, true) +
           (r->shared_records > 0
                ? strprintf("; %lld records of the same requests on other ranks counted with them",
                            static_cast<long long>(r->shared_records))
                : std::string()));
    }
    // Per request and per call: a transformer's calls are not its denoising steps (two calls a
    // step with classifier-free guidance run as two).
    line(strprintf("  %-16s %12s %8s %10s %8s", "stage", "mean/request", "calls", "mean/call",
                   "share"));
    for (const auto& s : r->stages) {
      line(strprintf("  %-16s %10.1fms %8.1f %10s %7.1f%%", s.name.c_str(), s.mean_ms, s.calls,
                     s.calls > 0 ? strprintf("%.1fms", s.mean_ms / s.calls).c_str() : "-",
                     s.share * 100.0));
    }
    // The end-to-end time in no stage, so that the shares add up.
    if (auto other = report_format::other_stage(*r)) {
      line(strprintf("  %-16s %10.1fms %8s %10s %7.1f%%", "other", other->mean_ms, "-", "-",
                     other->share * 100.0));
    }
    if (const auto& d = r->denoising_step) line(denoising_step_line(*d, r->count));
    line(dit_line(
        r->params, r->tflops, r->device_tflops,
        r->mfu ? "MFU " + pct(r->mfu) : "MFU n/a (" + report_format::mfu_missing(r->tflops) + ")",
        r->peak_tflops, r->peak_source, r->dtype));
    if (r->skipped_fwd) {
      line(skip_line(
          r->skipped_fwd, r->effective_fwd,
          strprintf("of %lld transformer calls", static_cast<long long>(r->transformer_calls))
              .c_str()));
    }
    fields_line(line, r->fields);
    if (r->peak_alloc_bytes) {
      line("  peak memory " + gib(*r->peak_alloc_bytes) + " allocated, " +
           gib(r->peak_reserved_bytes.value_or(0)) + " reserved");
    }
    // A request is one video unless some request said it made more (then see the job's lines).
    if (r->energy) {
      energy_lines(line, *r->energy, r->videos == r->count ? "request (video)" : "request",
                   "requests");
    }
  }
  if (const auto& t = report.training) {
    // Steps are the job's (global steps, the most any rank closed); windows per rank.
    line(strprintf("Training: %lld steps%s%s ", static_cast<long long>(t->steps),
                   t->steps_run_again ? strprintf(" (and %lld run again after a restart)",
                                                  static_cast<long long>(t->steps_run_again))
                                            .c_str()
                                      : "",
                   t->ranks > 1 ? " of the job," : "") +
         report_format::windows_text(*t) +
         (t->warmup_excluded
              ? strprintf(" (%lld warmup excluded)", static_cast<long long>(t->warmup_excluded))
              : std::string()));
    // The step and its phases in one unit, the page's.
    const units::Unit unit = report_format::step_time_unit(*t);
    line("  step     p50 " + units::seconds_in(t->step_p50_s, unit) + "  p95 " +
         units::seconds_in(t->step_p95_s, unit));
    if (t->layout) line(layout_line(*t->layout, false));
    line(strprintf("  %-16s %12s %8s", "phase", "mean/step", "share"));
    for (std::size_t i = 0; i < t->phase_s.size(); ++i) {
      line(strprintf("  %-16s %12s %7.1f%%", t->phase_s[i].first.c_str(),
                     units::seconds_in(t->phase_s[i].second, unit).c_str(),
                     t->phase_share[i].second * 100.0));
    }
    line("  " + opt_text(t->samples_per_s, "%.3f samples/s") +
         strprintf(" per rank, dp=%d -> ", t->dp) +
         opt_text(t->samples_per_s_global, "%.3f samples/s global"));
    line(dit_line(t->params, t->tflops, t->device_tflops,
                  t->mfu || t->hfu ? "MFU " + pct(t->mfu) + "  HFU " + pct(t->hfu)
                                   : "MFU, HFU n/a (" + report_format::mfu_missing(t->tflops) + ")",
                  t->peak_tflops, t->peak_source, t->dtype));
    if (t->params && t->trainable && *t->trainable != *t->params) {
      line("  trainable " + param_count(*t->trainable) + " params");
    }
    if (t->skipped_fwd) line(skip_line(t->skipped_fwd, t->effective_fwd, "forward calls"));
    fields_line(line, t->fields);
    if (t->peak_alloc_bytes) {
      line("  peak memory " + gib(*t->peak_alloc_bytes) + " allocated, " +
           gib(t->peak_reserved_bytes.value_or(0)) + " reserved");
    }
    if (t->energy) energy_lines(line, *t->energy, "sample", "windows");
    if (t->eta_s) line("  ETA " + duration(*t->eta_s));
  }
  if (report.energy) job_energy_lines(line, *report.energy);
  if (report.ranks.size() > 1) {
    // The fields shown per rank after the table's own columns, each as wide as its label.
    std::vector<const ReadingSummary*> columns = report_format::rank_field_columns(report.ranks);
    auto field_cells = [&](const auto& cell) {
      std::string text;
      for (const ReadingSummary* c : columns) {
        text += strprintf(" %*s", std::max<int>(9, static_cast<int>(std::strlen(c->show.label))),
                          cell(c).c_str());
      }
      return text;
    };
    line(strprintf("Ranks (%zu):", report.ranks.size()));
    line(strprintf("  %4s %8s %9s %6s %9s %9s %10s %10s %7s %10s %9s", "rank", "requests",
                   "e2e p50", "steps", "step p50", "step p95", "samples/s", "FLOP/s/dev", "MFU",
                   "peak alloc", "excess") +
         field_cells([](const ReadingSummary* c) { return std::string(c->show.label); }));
    // Each time column in the unit its largest reads in, the page's.
    const report_format::RankTimeUnits unit = report_format::rank_time_units(report.ranks);
    auto time = [](const std::optional<double>& s, const units::Unit& u) {
      return s ? units::seconds_in(*s, u) : std::string("-");
    };
    for (const auto& rs : report.ranks) {
      line(strprintf("  %4d %8lld %9s %6lld %9s %9s %10s %10s %7s %10s %9s", rs.rank,
                     static_cast<long long>(rs.requests), time(rs.e2e_p50_s, unit.e2e).c_str(),
                     static_cast<long long>(rs.steps), time(rs.step_p50_s, unit.step).c_str(),
                     time(rs.step_p95_s, unit.step).c_str(),
                     opt_text(rs.samples_per_s, "%.3f").c_str(),
                     flops_cell(rs.device_tflops).c_str(),
                     rs.mfu ? units::percent(*rs.mfu).c_str() : "n/a",
                     rs.peak_alloc_bytes ? gib(*rs.peak_alloc_bytes).c_str() : "-",
                     time(rs.excess_s, unit.excess).c_str()) +
           field_cells(
               [&](const ReadingSummary* c) { return report_format::rank_field_cell(rs, *c); }));
    }
    if (auto why = report_format::ranks_mfu_missing(report); !why.empty()) line("  " + why);
    if (report.stragglers.empty()) {
      line("Stragglers: " + report_format::no_stragglers_note(report.training.has_value()));
    } else {
      std::string text = "Stragglers:";
      for (std::size_t i = 0; i < report.stragglers.size(); ++i) {
        int rank = report.stragglers[i];
        for (const auto& rs : report.ranks) {
          if (rs.rank != rank) continue;
          double v = report.training ? rs.step_p50_s.value_or(0) : rs.e2e_p50_s.value_or(0);
          text += strprintf(" rank %d (%.3fs, +%.3fs above the ranks' medians, most in %s)", rank,
                            v, rs.excess_s.value_or(0), report.straggler_phases[i].c_str());
        }
      }
      text += strprintf(" against the median %.3fs", *report.rank_median_s);
      line(text);
      if (auto note = report_format::outside_wait_note(report); !note.empty()) line("  " + note);
    }
    // What the slowest rank of each window cost, by phase, with its scores: some rank is the
    // slowest of every window, a straggler or not.
    for (const auto& rs : report.ranks) {
      if (!rs.lost_s) continue;
      line(report_format::slowest_rank_cost(rs) +
           strprintf("; scores relative %.2f, individual %.2f", rs.relative_score.value_or(1.0),
                     rs.individual_score.value_or(1.0)));
    }
    // The lowest per-phase score that costs time: where a synchronized job's step scores hide it.
    if (const auto& low = report.low_score) {
      double step = 1.0;
      for (const auto& rs : report.ranks) {
        if (rs.rank != low->rank) continue;
        step = low->kind == "relative" ? rs.relative_score.value_or(1.0)
                                       : rs.individual_score.value_or(1.0);
      }
      line(
          strprintf("Lowest phase score: rank %d %s %s %.2f (%.3fs/step against %s %.3fs); its "
                    "step's %.2f",
                    low->rank, low->phase.c_str(), low->kind.c_str(), low->score, low->seconds,
                    low->kind == "relative" ? "the fastest rank's" : "its best window's",
                    low->against, step));
    }
  }
  // Each rank's loop so far, in the ledger's parts (its latest window's).
  bool ledgers = false;
  for (const auto& rs : report.ranks) ledgers = ledgers || rs.ledger.has_value();
  if (ledgers) {
    line("Ledger (each rank's loop so far: goodput = productive / wall):");
    for (const auto& rs : report.ranks) {
      if (!rs.ledger) continue;
      const Ledger& l = *rs.ledger;
      line(strprintf("  rank %d: wall %.3fs = %s; goodput %.1f%%", rs.rank, l.wall_s,
                     ledger_sum(l, true).c_str(), 100.0 * l.goodput));
      if (l.attempts > 1) {
        line(strprintf("    %lld attempts; recovery (failure to the next attempt's first step) "
                       "%.3fs",
                       static_cast<long long>(l.attempts), l.recovery_s));
      }
    }
    // The ranks' ledgers added up, in rank-seconds (JobLedger), where there are several.
    if (const auto& job = report.job_ledger; job && job->ranks > 1) {
      const Ledger& l = job->ledger;
      std::string span =
          job->span_s
              ? strprintf("; %.3fs from the first rank's start to the last one's end", *job->span_s)
              : std::string();
      line(strprintf("  job (%d ranks added, rank-seconds): wall %.3fs = %s; goodput %.1f%%%s",
                     job->ranks, l.wall_s, ledger_sum(l, false).c_str(), 100.0 * l.goodput,
                     span.c_str()));
    }
  }
  return out;
}

}  // namespace vxperf::analysis
