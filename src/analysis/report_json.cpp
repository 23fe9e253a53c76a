// The report as one JSON object (report_json): what `vxperf report --json` prints.
#include "analysis/report_format.h"
#include "schema/json_visitor.h"
#include "schema/record_writer.h"
#include "vxperf/report.h"

namespace vxperf::analysis {

using report_format::add_readings;
using report_format::Json;
using report_format::kJoulesPerKwh;
using report_format::opt_json;
namespace {

Json job_energy_json(const JobEnergy& e) {
  Json devices = Json::array();
  for (const auto& d : e.devices) {
    devices.push_back({{"rank", d.rank},
                       {"device", "cuda:" + std::to_string(d.device)},
                       {"records", d.records},
                       {"energy_j", d.energy_j},
                       {"kwh", d.energy_j / kJoulesPerKwh},
                       {"seconds", d.seconds},
                       {"power_w_mean", opt_json(d.power_w_mean)}});
  }
  Json j = {{"energy_j", e.energy_j}, {"kwh", e.energy_j / kJoulesPerKwh}};
  add_readings(j, e.totals);
  j.update(Json{{"j_per_video", opt_json(e.j_per_video)},
                {"videos", e.videos},
                {"request_energy_j", e.request_energy_j},
                {"j_per_sample", opt_json(e.j_per_sample)},
                {"samples", e.samples},
                {"window_energy_j", e.window_energy_j},
                {"devices", devices},
                {"records", e.records},
                {"shared", e.shared},
                {"unread", e.unread},
                {"unread_first", e.unread_first}});
  return j;
}

Json energy_json(const EnergySummary& e) {
  Json j = {
      {"records", e.records}, {"energy_j", e.energy_j}, {"per_unit_j", opt_json(e.per_unit_j)}};
  add_readings(j, e.readings);
  j["energy_from"] = e.energy_from;
  return j;
}

// A summary's summarized record fields, each under its key (null when unread; a mean's highest
// beside it), as one object.
Json fields_json(const std::vector<ReadingSummary>& fields) {
  Json j = Json::object();
  add_readings(j, fields);
  return j;
}

// What an MFU rests on, in the report's JSON.
void add_basis(Json& j, const std::optional<std::int64_t>& params,
               const std::optional<double>& peak, const std::string& source,
               const std::string& dtype, const std::optional<std::int64_t>& skipped,
               const std::optional<double>& effective) {
  j["params"] = params ? Json(*params) : Json(nullptr);
  j["peak_tflops_per_device"] = opt_json(peak);
  // Records mark only a measured peak: a table's and the variable's read alike.
  j["peak_measured"] = peak ? Json(source == "measured") : Json(nullptr);
  j["dtype"] = dtype.empty() ? Json(nullptr) : Json(dtype);
  if (skipped) j["skipped_fwd"] = *skipped;
  if (effective) j["effective_fwd"] = *effective;
}

// The requests' time in no stage (report_format::other_stage), or null.
Json other_json(const RequestSummary& r) {
  auto other = report_format::other_stage(r);
  if (!other) return nullptr;
  return {{"mean_ms", other->mean_ms}, {"share", other->share}};
}

// A layout as its record carries it (the field table's object), or null.
Json layout_json(const std::optional<ParallelLayout>& layout) {
  if (!layout) return nullptr;
  internal::JsonVisitor out(Json::object());
  internal::Writer writer(out);
  internal::describe(writer, *layout);
  return std::move(out.json());
}

// A rank's ledger as its records carry it (the field table's object).
Json ledger_json(const Ledger& ledger) {
  internal::JsonVisitor out(Json::object());
  internal::Writer writer(out);
  internal::describe(writer, ledger);
  return std::move(out.json());
}

}  // namespace

std::string report_json(const Report& report) {
  Json j;
  j["sources"] = report.sources;
  j["warnings"] = report.warnings;
  if (const auto& p = report.partial) {
    Json repeated = Json::array();
    for (const auto& [file, of] : p->repeated_files) {
      repeated.push_back({{"file", file}, {"repeats", of}});
    }
    j["partial"] = {{"world_size", p->world_size},
                    {"missing_ranks", p->missing_ranks},
                    {"torn_files", p->torn_files},
                    {"repeated_files", repeated}};
  }
  if (const auto& r = report.requests) {
    Json stages = Json::array();
    for (const auto& s : r->stages) {
      stages.push_back(
          {{"name", s.name}, {"mean_ms", s.mean_ms}, {"calls", s.calls}, {"share", s.share}});
    }
    j["requests"] = {{"count", r->count},
                     {"warmup", r->warmup},
                     {"e2e_s",
                      {{"p50", r->e2e_p50_s},
                       {"p95", r->e2e_p95_s},
                       {"max", r->e2e_max_s},
                       {"mean", r->e2e_mean_s}}},
                     {"stages", stages},
                     {"other", other_json(*r)},
                     {"tflops", opt_json(r->tflops)},
                     {"device_tflops", opt_json(r->device_tflops)},
                     {"mfu", opt_json(r->mfu)},
                     {"peak_alloc_bytes", opt_json(r->peak_alloc_bytes)},
                     {"peak_reserved_bytes", opt_json(r->peak_reserved_bytes)},
                     {"requests_per_hour", opt_json(r->requests_per_hour)},
                     {"shared_records", r->shared_records},
                     {"layout", layout_json(r->layout)}};
    add_basis(j["requests"], r->params, r->peak_tflops, r->peak_source, r->dtype, r->skipped_fwd,
              r->effective_fwd);
    j["requests"]["fields"] = fields_json(r->fields);
    if (const auto& d = r->denoising_step) {
      j["requests"]["denoising_step"] = {{"requests", d->requests},
                                         {"steps", d->steps},
                                         {"mean_ms", d->mean_ms},
                                         {"calls", d->calls}};
    }
    if (r->energy) j["requests"]["energy"] = energy_json(*r->energy);
  } else {
    j["requests"] = nullptr;
  }
  if (const auto& t = report.training) {
    Json phases = Json::object();
    for (std::size_t i = 0; i < t->phase_s.size(); ++i) {
      phases[t->phase_s[i].first] = {{"mean_s", t->phase_s[i].second},
                                     {"share", t->phase_share[i].second}};
    }
    j["training"] = {{"windows", t->windows},
                     {"steps", t->steps},
                     {"warmup_excluded", t->warmup_excluded},
                     {"step_s", {{"p50", t->step_p50_s}, {"p95", t->step_p95_s}}},
                     {"phases", phases},
                     {"samples_per_s", opt_json(t->samples_per_s)},
                     {"samples_per_s_global", opt_json(t->samples_per_s_global)},
                     {"dp", t->dp},
                     {"tflops", opt_json(t->tflops)},
                     {"device_tflops", opt_json(t->device_tflops)},
                     {"hw_tflops", opt_json(t->hw_tflops)},
                     {"mfu", opt_json(t->mfu)},
                     {"hfu", opt_json(t->hfu)},
                     {"peak_alloc_bytes", opt_json(t->peak_alloc_bytes)},
                     {"peak_reserved_bytes", opt_json(t->peak_reserved_bytes)},
                     {"eta_s", opt_json(t->eta_s)},
                     {"layout", layout_json(t->layout)}};
    if (t->steps_run_again > 0) j["training"]["steps_run_again"] = t->steps_run_again;
    add_basis(j["training"], t->params, t->peak_tflops, t->peak_source, t->dtype, t->skipped_fwd,
              t->effective_fwd);
    j["training"]["fields"] = fields_json(t->fields);
    if (t->energy) j["training"]["energy"] = energy_json(*t->energy);
  } else {
    j["training"] = nullptr;
  }
  Json ranks = Json::array();
  for (const auto& rs : report.ranks) {
    Json phases = Json::object();
    for (const auto& [name, seconds] : rs.phase_s) phases[name] = seconds;
    ranks.push_back({{"rank", rs.rank},
                     {"requests", rs.requests},
                     {"e2e_p50_s", opt_json(rs.e2e_p50_s)},
                     {"windows", rs.windows},
                     {"steps", rs.steps},
                     {"step_p50_s", opt_json(rs.step_p50_s)},
                     {"step_p95_s", opt_json(rs.step_p95_s)},
                     {"samples_per_s", opt_json(rs.samples_per_s)},
                     {"tflops", opt_json(rs.tflops)},
                     {"device_tflops", opt_json(rs.device_tflops)},
                     {"mfu", opt_json(rs.mfu)},
                     {"peak_alloc_bytes", opt_json(rs.peak_alloc_bytes)},
                     {"phases_s", phases},
                     {"excess_s", opt_json(rs.excess_s)},
                     {"fields", fields_json(rs.fields)}});
    if (rs.ledger) ranks.back()["ledger"] = ledger_json(*rs.ledger);
    if (rs.relative_score) ranks.back()["relative_score"] = *rs.relative_score;
    if (rs.individual_score) ranks.back()["individual_score"] = *rs.individual_score;
    if (!rs.phase_scores.empty()) {
      Json scores = Json::object();
      for (const PhaseScore& s : rs.phase_scores) {
        scores[s.phase] = {{"relative", s.relative}, {"individual", s.individual}};
      }
      ranks.back()["phase_scores"] = scores;
    }
    if (rs.lost_s) {
      Json lost = Json::object();
      for (const auto& [phase, seconds] : rs.lost_phases_s) lost[phase] = seconds;
      ranks.back()["lost_s"] = *rs.lost_s;
      ranks.back()["lost_phases_s"] = lost;
    }
  }
  j["ranks"] = ranks;
  if (const auto& job = report.job_ledger) {
    j["ledger"] = ledger_json(job->ledger);
    j["ledger"]["ranks"] = job->ranks;
    j["ledger"]["span_s"] = opt_json(job->span_s);
  }
  if (const auto& low = report.low_score) {
    j["low_score"] = {{"rank", low->rank},   {"phase", low->phase},     {"kind", low->kind},
                      {"score", low->score}, {"seconds", low->seconds}, {"against", low->against}};
  }
  if (report.energy) j["energy"] = job_energy_json(*report.energy);
  j["stragglers"] = report.stragglers;
  j["straggler_phases"] = report.straggler_phases;
  j["rank_median_s"] = opt_json(report.rank_median_s);
  return j.dump(2, ' ', false, Json::error_handler_t::replace);  // file names may be any bytes
}

}  // namespace vxperf::analysis
