// The report's HTML page (report_html): sources, warnings and summary tables, then the charts.
#include <algorithm>

#include "analysis/html_parts.h"
#include "analysis/report_format.h"
#include "analysis/units.h"
#include "base/strings.h"

namespace vxperf::analysis {

using internal::strprintf;
using svg::escape;
using namespace html;
namespace {

// Rows of name and value, the value HTML-escaped.
struct Facts {
  Table t{{"", ""}, {}, {}};
  void add(const std::string& name, const std::string& value) {
    if (!value.empty()) t.rows.push_back({escape(name), escape(value)});
  }
  std::string html() const { return table_html(t, "facts"); }
};

// "570.9 TFLOPS", or for a job rate of several devices "570.9 TFLOPS job (285.5 TFLOPS per
// device)"; empty without a rate.
std::string rate_text(const std::optional<double>& rate, const std::optional<double>& device) {
  if (!rate) return "";
  std::string text = units::flops_rate(*rate);
  if (device && *rate > *device * 1.0001) {
    text += " job (" + units::flops_rate(*device) + " per device)";
  }
  return text;
}

std::string rate_basis(const std::optional<double>& peak, const std::string& source,
                       const std::string& dtype) {
  if (!peak) return "";
  std::string text = "of " + units::flops_rate(*peak) + " per device";
  std::string basis = source.empty() ? "" : source;
  if (!dtype.empty()) basis += (basis.empty() ? "" : ", ") + dtype;
  return basis.empty() ? text : text + " (" + basis + ")";
}

void energy_facts(Facts& f, const std::optional<EnergySummary>& e, const char* unit,
                  const char* over) {
  if (!e) return;
  if (e->records > 0) {
    std::string text = e->per_unit_j ? strprintf("%.3f J/%s, ", *e->per_unit_j, unit) : "";
    text += strprintf("%.3f J over %lld %s", e->energy_j, static_cast<long long>(e->records), over);
    if (!e->energy_from.empty()) text += " (from " + internal::join(e->energy_from, ", ") + ")";
    f.add("energy", text);
  }
  // The numbers read, in one row; each list seen in a row of its own.
  std::vector<std::string> device;
  for (const auto& r : e->readings) {
    if (r.show.fold != Fold::kList && r.value) device.push_back(report_format::reading_text(r));
  }
  if (!device.empty()) f.add("device", internal::join(device, ", "));
  for (const auto& r : e->readings) {
    if (r.show.fold == Fold::kList && !r.seen.empty()) {
      f.add(r.show.label, internal::join(r.seen, ", "));
    }
  }
}

// Each summarized record field some record read, a row of its own.
void field_facts(Facts& f, const std::vector<ReadingSummary>& fields) {
  for (const auto& r : fields) {
    if (r.value || !r.seen.empty()) f.add(r.show.label, report_format::fold_text(r));
  }
}

std::string memory_text(const std::optional<std::uint64_t>& alloc,
                        const std::optional<std::uint64_t>& reserved) {
  if (!alloc) return "";
  auto bytes = [](std::uint64_t b) {
    auto d = static_cast<double>(b);
    return units::in_unit(d, units::bytes_unit(d));
  };
  return bytes(*alloc) + " allocated, " + bytes(reserved.value_or(0)) + " reserved";
}

std::string share_cell(double share) {
  return strprintf("<span class=\"bar\" style=\"width:%.0fpx\"></span> %s",
                   std::clamp(share, 0.0, 1.0) * 120.0, percent(share).c_str());
}

std::string requests_summary(const RequestSummary& r) {
  Facts f;
  std::string measured = std::to_string(r.count);
  if (r.warmup) {
    measured += strprintf(" (%lld warmup %s)", static_cast<long long>(r.warmup),
                          r.warmup == r.count ? "included: all are warmup" : "excluded");
  }
  f.add("requests", measured);
  f.add("end to end", "p50 " + time_text(r.e2e_p50_s) + ", p95 " + time_text(r.e2e_p95_s) +
                          ", max " + time_text(r.e2e_max_s) + ", mean " + time_text(r.e2e_mean_s));
  if (r.params) f.add("DiT", units::param_count(*r.params) + " params");
  f.add("rate", rate_text(r.tflops, r.device_tflops));
  f.add("MFU", r.mfu ? percent(*r.mfu) + " " + rate_basis(r.peak_tflops, r.peak_source, r.dtype)
                     : "n/a (" + report_format::mfu_missing(r.tflops) + ")");
  if (r.skipped_fwd) {
    f.add("cached forwards",
          strprintf("%lld of %lld transformer calls skipped, %.4g full forwards computed",
                    static_cast<long long>(*r.skipped_fwd),
                    static_cast<long long>(r.transformer_calls), r.effective_fwd.value_or(0)));
  }
  if (const auto& d = r.denoising_step) {
    std::string step =
        strprintf("%.4g steps a request, mean ", d->steps) + time_text(d->mean_ms / 1000.0) +
        strprintf(" a step (%.3g transformer call%s each)", d->calls, d->calls == 1.0 ? "" : "s");
    if (d->requests < r.count) {
      step += strprintf("; %lld of %lld requests said their steps",
                        static_cast<long long>(d->requests), static_cast<long long>(r.count));
    }
    f.add("denoising step", step);
  }
  field_facts(f, r.fields);
  f.add("peak memory", memory_text(r.peak_alloc_bytes, r.peak_reserved_bytes));
  energy_facts(f, r.energy, r.videos == r.count ? "request (video)" : "request", "requests");
  Table stages{
      {"stage", "mean per request", "calls per request", "mean per call", "share of end to end"},
      {},
      {}};
  double top = 0;
  for (const auto& s : r.stages) top = std::max(top, s.mean_ms / 1000.0);
  units::Unit unit = units::time_unit(top);
  for (const auto& s : r.stages) {
    const std::string per_call =
        s.calls > 0 ? time_text(s.mean_ms / 1000.0 / s.calls) : std::string("-");
    stages.rows.push_back({escape(s.name), escape(units::in_unit(s.mean_ms / 1000.0, unit)),
                           strprintf("%.1f", s.calls), escape(per_call), share_cell(s.share)});
  }
  if (auto other = report_format::other_stage(r)) {
    stages.rows.push_back({"other (in no stage)",
                           escape(units::in_unit(other->mean_ms / 1000.0, unit)), "-", "-",
                           share_cell(other->share)});
  }
  return "<h3>Requests</h3>\n" + f.html() + table_html(stages);
}

std::string training_summary(const TrainSummary& t) {
  Facts f;
  std::string steps =
      strprintf("%lld%s ", static_cast<long long>(t.steps), t.ranks > 1 ? " of the job," : "") +
      report_format::windows_text(t);
  if (t.warmup_excluded) {
    steps += strprintf(" (%lld warmup excluded)", static_cast<long long>(t.warmup_excluded));
  }
  f.add("steps", steps);
  // The step and its phases in one unit, the text's.
  const units::Unit unit = report_format::step_time_unit(t);
  f.add("step time", "p50 " + units::in_unit(t.step_p50_s, unit) + ", p95 " +
                         units::in_unit(t.step_p95_s, unit));
  if (t.samples_per_s) {
    f.add("samples/s", strprintf("%.3f per rank, dp=%d: %.3f global", *t.samples_per_s, t.dp,
                                 t.samples_per_s_global.value_or(0)));
  }
  if (t.params) {
    std::string text = units::param_count(*t.params) + " params";
    if (t.trainable && *t.trainable != *t.params) {
      text += ", " + units::param_count(*t.trainable) + " trainable";
    }
    f.add("DiT", text);
  }
  f.add("rate", rate_text(t.tflops, t.device_tflops));
  if (t.mfu || t.hfu) {
    f.add("MFU / HFU", (t.mfu ? percent(*t.mfu) : "-") + " / " + (t.hfu ? percent(*t.hfu) : "-") +
                           " " + rate_basis(t.peak_tflops, t.peak_source, t.dtype));
  } else {
    f.add("MFU / HFU", "n/a (" + report_format::mfu_missing(t.tflops) + ")");
  }
  if (t.skipped_fwd) {
    f.add("cached forwards",
          strprintf("%lld forward calls skipped, %.4g full forwards computed",
                    static_cast<long long>(*t.skipped_fwd), t.effective_fwd.value_or(0)));
  }
  field_facts(f, t.fields);
  f.add("peak memory", memory_text(t.peak_alloc_bytes, t.peak_reserved_bytes));
  energy_facts(f, t.energy, "sample", "windows");
  if (t.eta_s) f.add("ETA", units::duration(*t.eta_s));
  Table phases{{"phase", "mean per step", "share of the phases"}, {}, {}};
  for (std::size_t i = 0; i < t.phase_s.size(); ++i) {
    phases.rows.push_back({escape(t.phase_s[i].first),
                           escape(units::in_unit(t.phase_s[i].second, unit)),
                           share_cell(t.phase_share[i].second)});
  }
  return "<h3>Training</h3>\n" + f.html() + table_html(phases);
}

std::string ranks_summary(const Report& report) {
  Table t{{"rank", "requests", "e2e p50", "steps", "step p50", "step p95", "samples/s",
           "FLOP/s per device", "MFU", "peak alloc", "excess"},
          {},
          {}};
  // The fields shown per rank, a column each after the table's own.
  std::vector<const ReadingSummary*> columns = report_format::rank_field_columns(report.ranks);
  for (const ReadingSummary* c : columns) t.head.push_back(c->show.label);
  double top_bytes = 0;
  for (const auto& rs : report.ranks) {
    top_bytes = std::max(top_bytes, static_cast<double>(rs.peak_alloc_bytes.value_or(0)));
  }
  // The text's units, a column's each.
  const auto [e2e, step, excess] = report_format::rank_time_units(report.ranks);
  const units::Unit bytes = units::bytes_unit(top_bytes);
  auto cell = [](const std::optional<double>& v, const units::Unit& u) {
    return v ? escape(units::in_unit(*v, u)) : std::string("-");
  };
  for (const auto& rs : report.ranks) {
    bool slow = is_straggler(report, rs.rank);
    t.rows.push_back(
        {std::to_string(rs.rank) + (slow ? " <b>straggler</b>" : ""), std::to_string(rs.requests),
         cell(rs.e2e_p50_s, e2e), std::to_string(rs.steps), cell(rs.step_p50_s, step),
         cell(rs.step_p95_s, step), rs.samples_per_s ? strprintf("%.3f", *rs.samples_per_s) : "-",
         rs.device_tflops ? escape(units::flops_rate(*rs.device_tflops)) : "-",
         rs.mfu ? percent(*rs.mfu) : "n/a",
         rs.peak_alloc_bytes
             ? escape(units::in_unit(static_cast<double>(*rs.peak_alloc_bytes), bytes))
             : "-",
         cell(rs.excess_s, excess)});
    for (const ReadingSummary* c : columns) {
      t.rows.back().push_back(escape(report_format::rank_field_cell(rs, *c)));
    }
    t.row_class.push_back(slow ? "straggler" : "");
  }
  std::string s = strprintf("<h3>Ranks (%zu)</h3>\n", report.ranks.size());
  s += report.ranks.size() > 16 ? "<div class=\"scroll\">" + table_html(t) + "</div>\n"
                                : table_html(t);
  if (auto why = report_format::ranks_mfu_missing(report); !why.empty()) {
    s += "<p>" + escape(why) + "</p>\n";
  }
  // What each window's slowest rank cost, which is no straggler verdict.
  std::string costs;
  for (const auto& rs : report.ranks) {
    if (rs.lost_s) costs += "<p>" + escape(report_format::slowest_rank_cost(rs)) + "</p>\n";
  }
  if (report.stragglers.empty()) {
    return s + "<p>Stragglers: " +
           escape(report_format::no_stragglers_note(report.training.has_value())) + "</p>\n" +
           costs;
  }
  s += "<p class=\"warn\">Stragglers:";
  for (std::size_t i = 0; i < report.stragglers.size(); ++i) {
    for (const auto& rs : report.ranks) {
      if (rs.rank != report.stragglers[i]) continue;
      double v = report.training ? rs.step_p50_s.value_or(0) : rs.e2e_p50_s.value_or(0);
      s += escape(strprintf(" rank %d (%s, +%s above the ranks' medians, most in %s)", rs.rank,
                            time_text(v).c_str(), time_text(rs.excess_s.value_or(0)).c_str(),
                            report.straggler_phases[i].c_str()));
    }
  }
  s += escape(" against the median " + time_text(report.rank_median_s.value_or(0))) + "</p>\n";
  if (auto note = report_format::outside_wait_note(report); !note.empty()) {
    s += "<p>" + escape(note) + "</p>\n";
  }
  return s + costs;
}

// The job's energy (#28): totals, per video and per sample, a row per device.
std::string energy_summary(const JobEnergy& e) {
  Facts f;
  std::string total =
      strprintf("%.6f kWh (%.3f J) on %zu device%s", e.energy_j / report_format::kJoulesPerKwh,
                e.energy_j, e.devices.size(), e.devices.size() == 1 ? "" : "s");
  f.add("device energy", total);
  for (const auto& r : e.totals) {
    if (r.value) f.add(r.show.label, report_format::reading_value(r, r.value));
  }
  if (e.j_per_video) {
    f.add("per video",
          strprintf("%.3f J over %lld videos", *e.j_per_video, static_cast<long long>(e.videos)));
  }
  if (e.j_per_sample) {
    f.add("per sample",
          strprintf("%.4f J over %.6g samples (every rank's energy)", *e.j_per_sample, e.samples));
  }
  if (e.shared > 0) {
    f.add("shared", strprintf("%lld records split their device's energy with others open then",
                              static_cast<long long>(e.shared)));
  }
  if (e.unread > 0) {
    std::string which = internal::join(e.unread_first, ", ");
    if (e.unread > static_cast<std::int64_t>(e.unread_first.size())) which += ", ...";
    f.add("no readings", strprintf("%lld of %lld records: ", static_cast<long long>(e.unread),
                                   static_cast<long long>(e.records)) +
                             which);
  }
  Table devices{{"device", "kWh", "energy", "mean power", "over", "records"}, {}, {}};
  for (const auto& d : e.devices) {
    devices.rows.push_back(
        {escape(strprintf("cuda:%d rank %d", d.device, d.rank)),
         strprintf("%.6f", d.energy_j / report_format::kJoulesPerKwh),
         strprintf("%.3f J", d.energy_j),
         d.power_w_mean ? strprintf("%.1f W", *d.power_w_mean) : std::string("-"),
         escape(time_text(d.seconds)), std::to_string(d.records)});
  }
  return "<h3>Energy (job)</h3>\n" + f.html() + table_html(devices);
}

std::string summary(const Report& report) {
  std::string s = "<h2>Summary</h2>\n";
  if (!report.requests && !report.training) return s + "<p class=\"empty\">no records</p>\n";
  if (report.requests) s += requests_summary(*report.requests);
  if (report.training) s += training_summary(*report.training);
  if (report.energy) s += energy_summary(*report.energy);
  if (report.ranks.size() > 1) s += ranks_summary(report);
  return s;
}

std::string sources_and_warnings(const std::vector<std::string>& sources,
                                 const std::vector<std::string>& warnings) {
  std::string html;
  auto list = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      html += (i > from ? ", " : "") + std::string("<code>") + escape(sources[i]) + "</code>";
    }
  };
  // A file per rank of a big job: the first few, the rest folded away.
  constexpr std::size_t kShown = 4;
  if (sources.size() > 2 * kShown) {
    html += "<p>";
    list(0, kShown);
    html += strprintf("</p>\n<details><summary>and %zu more files</summary><p>",
                      sources.size() - kShown);
    list(kShown, sources.size());
    html += "</p></details>\n";
  } else if (!sources.empty()) {
    html += "<p>";
    list(0, sources.size());
    html += "</p>\n";
  }
  for (const auto& w : warnings) html += "<p class=\"warn\">" + escape(w) + "</p>\n";
  return html;
}

}  // namespace

// One self-contained page: inline CSS and SVG, one inline script for the heatmaps (drawn on
// canvases from the numbers embedded beside them) and their hover values. Nothing is fetched.
std::string report_html(const Report& report, const ChartData& charts,
                        const DenoisingSteps* steps) {
  const ChartData::Impl& d = charts.impl();
  std::vector<std::string> warnings = report.warnings;
  if (steps) warnings.insert(warnings.end(), steps->warnings.begin(), steps->warnings.end());
  std::string html = page_open("vxperf report") + sources_and_warnings(report.sources, warnings);
  html += summary(report);
  if (!d.windows.empty()) html += training_section(report, d);
  if (!d.requests.empty() || (steps && !steps->requests.empty())) {
    html += request_section(d, steps);
  }
  return html + page_close();
}

std::string report_html(const Report& report, const RecordSet& records) {
  ChartData charts;
  for (const auto& w : records.windows) charts.window(w);
  for (const auto& r : records.requests) charts.request(r);
  return report_html(report, charts);
}

}  // namespace vxperf::analysis
