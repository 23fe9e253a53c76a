// Two reports compared metric by metric: report_metrics, compare_reports and their text and JSON.
#include <cmath>
#include <string>

#include "analysis/report_format.h"
#include "analysis/units.h"
#include "base/strings.h"
#include "vxperf/report.h"

namespace vxperf::analysis {

using internal::strprintf;
using report_format::Json;
using report_format::kJoulesPerKwh;
using report_format::opt_json;
namespace {

using units::kGiB;
// Relative changes smaller than this read as "same" in a comparison.
constexpr double kSameWithin = 0.005;

// The per-device peak an MFU is against: "requests.peak_tflops", "training.peak_tflops".
bool is_peak(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  return dot != std::string::npos && name.substr(dot + 1) == "peak_tflops";
}

}  // namespace

std::vector<Metric> report_metrics(const Report& report) {
  std::vector<Metric> m;
  auto add = [&m](std::string name, const std::optional<double>& v, bool lower, std::string unit) {
    if (v) m.push_back({std::move(name), *v, lower, std::move(unit)});
  };
  auto bytes = [](const std::optional<std::uint64_t>& b) {
    return b ? std::optional<double>(static_cast<double>(*b) / kGiB) : std::nullopt;
  };
  if (const auto& r = report.requests) {
    add("requests.e2e_p50_s", r->e2e_p50_s, true, "s");
    add("requests.e2e_p95_s", r->e2e_p95_s, true, "s");
    add("requests.e2e_max_s", r->e2e_max_s, true, "s");
    add("requests.per_hour", r->requests_per_hour, false, "1/h");
    for (const auto& s : r->stages) add("requests.stage." + s.name + "_ms", s.mean_ms, true, "ms");
    if (const auto& d = r->denoising_step)
      add("requests.denoising_step_ms", d->mean_ms, true, "ms");
    add("requests.tflops", r->tflops, false, "TFLOPS");
    add("requests.mfu", r->mfu, false, "");
    add("requests.peak_tflops", r->peak_tflops, false, "TFLOPS");
    add("requests.peak_alloc_gib", bytes(r->peak_alloc_bytes), true, "GiB");
  }
  if (const auto& t = report.training) {
    add("training.step_p50_s", t->step_p50_s, true, "s");
    add("training.step_p95_s", t->step_p95_s, true, "s");
    for (const auto& [name, seconds] : t->phase_s) {
      add("training.phase." + name + "_s", seconds, true, "s");
    }
    add("training.samples_per_s", t->samples_per_s, false, "1/s");
    add("training.tflops", t->tflops, false, "TFLOPS");
    add("training.mfu", t->mfu, false, "");
    add("training.hfu", t->hfu, false, "");
    add("training.peak_tflops", t->peak_tflops, false, "TFLOPS");
    add("training.peak_alloc_gib", bytes(t->peak_alloc_bytes), true, "GiB");
    add("training.eta_h", t->eta_s ? std::optional<double>(*t->eta_s / 3600.0) : std::nullopt, true,
        "h");
    // The ranks' ledgers together: the job's goodput (its productive time over its wall time)
    // and the seconds of each part that is not productive.
    Ledger job;
    bool any = false;
    for (const auto& rs : report.ranks) {
      if (!rs.ledger) continue;
      any = true;
      add_parts(job, *rs.ledger);
    }
    if (any && job.wall_s > 0) {
      add("training.goodput", job.productive_s / job.wall_s, false, "");
      // The parts always said, then those only where said (start-up and set-up: the process's
      // start known; the rest: a restarted job), so that the rows of runs without them stay as
      // they were.
      for (bool always : {true, false}) {
        for (const LedgerPart& part : kLedgerParts) {
          if (part.seconds == &Ledger::productive_s) continue;  // the goodput above
          if ((part.said != LedgerPart::Said::kWhereNotZero) != always) continue;
          const double v = job.*part.seconds;
          add(std::string("training.ledger.") + part.key,
              always || v != 0 ? std::optional<double>(v) : std::nullopt, true, "s");
        }
      }
    }
  }
  if (const auto& e = report.energy) {
    add("energy.j_per_video", e->j_per_video, true, "J");
    add("energy.j_per_sample", e->j_per_sample, true, "J");
    add("energy.kwh", e->energy_j / kJoulesPerKwh, true, "kWh");
  }
  return m;
}

std::vector<MetricChange> compare_reports(const Report& a, const Report& b) {
  std::vector<Metric> ma = report_metrics(a), mb = report_metrics(b);
  std::vector<MetricChange> out;
  auto find = [](const std::vector<Metric>& ms, const std::string& name) -> const Metric* {
    for (const auto& m : ms) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };
  auto add = [&](const Metric& m) {
    MetricChange c;
    c.name = m.name;
    c.unit = m.unit;
    const Metric* x = find(ma, m.name);
    const Metric* y = find(mb, m.name);
    if (x) c.a = x->value;
    if (y) c.b = y->value;
    c.direction = "n/a";
    if (x && y) {
      double delta = y->value - x->value;
      if (x->value != 0) c.change = delta / std::fabs(x->value);
      double relative = c.change ? std::fabs(*c.change) : (delta == 0 ? 0 : 1);
      if (relative < kSameWithin) {
        c.direction = "same";
      } else if (is_peak(m.name)) {
        // A peak is no better or worse, but an MFU change across two is partly the peak's (a
        // CPU run under torchrun measures one thread's).
        c.direction = "differs";
      } else {
        c.direction = (delta < 0) == m.lower_is_better ? "better" : "worse";
      }
    }
    out.push_back(std::move(c));
  };
  for (const auto& m : ma) add(m);
  for (const auto& m : mb) {
    if (!find(ma, m.name)) add(m);
  }
  // A section both runs have, with an MFU in neither (two CPU runs, say): an "n/a" row where the
  // MFU goes (after the rate, else the section's last row), so that the comparison says why as
  // the report does rather than drop it.
  for (const std::string section : {"requests", "training"}) {
    const bool both = section == "requests" ? a.requests && b.requests : a.training && b.training;
    const std::string name = section + ".mfu";
    if (!both || find(ma, name) || find(mb, name)) continue;
    auto at = out.end();
    for (auto it = out.begin(); it != out.end(); ++it) {
      if (it->name == section + ".tflops") {
        at = it + 1;
        break;
      }
      if (it->name.rfind(section + ".", 0) == 0) at = it + 1;
    }
    MetricChange c;
    c.name = name;
    c.direction = "n/a";
    out.insert(at, std::move(c));
  }
  return out;
}

std::string format_comparison(const std::string& a_name, const std::string& b_name,
                              const std::vector<MetricChange>& changes) {
  std::string out = "A: " + a_name + "\nB: " + b_name + "\n";
  out += strprintf("%-34s %14s %14s %9s  %s\n", "metric", "A", "B", "change", "");
  auto value = [](const std::optional<double>& v, const std::string& unit) {
    if (!v) return std::string("-");
    if (unit.empty()) {  // utilizations: a CPU's MFU of 0.0037% is no "0.00%"
      const double a = std::fabs(*v * 100.0);
      return a >= 0.1 || a == 0 ? strprintf("%.2f%%", *v * 100.0) : units::percent(*v);
    }
    if (unit == "TFLOPS") {  // a small rate in the unit the report gives it in
      const double a = std::fabs(*v);
      if (a > 0 && a < 1e-3) return strprintf("%.4g MFLOPS", *v * 1e6);
      if (a > 0 && a < 1) return strprintf("%.4g GFLOPS", *v * 1e3);
    }
    return strprintf("%.4g %s", *v, unit.c_str());
  };
  // A utilization one side lacks is "n/a", and why an MFU is missing is said once below.
  for (const auto& c : changes) {
    const bool lacks = report_format::lacks_utilization(c);
    auto cell = [&](const std::optional<double>& v) {
      return lacks && !v ? std::string("n/a") : value(v, c.unit);
    };
    out += strprintf(
        "%-34s %14s %14s %9s  %s\n", c.name.c_str(), cell(c.a).c_str(), cell(c.b).c_str(),
        c.change ? strprintf("%+.1f%%", *c.change * 100.0).c_str() : "-", c.direction.c_str());
  }
  for (const std::string& why : report_format::comparison_mfu_missing(changes)) {
    out += why + "\n";
  }
  return out;
}

std::string comparison_json(const std::string& a_name, const std::string& b_name,
                            const std::vector<MetricChange>& changes) {
  Json metrics = Json::array();
  for (const auto& c : changes) {
    metrics.push_back({{"metric", c.name},
                       {"a", opt_json(c.a)},
                       {"b", opt_json(c.b)},
                       {"change", opt_json(c.change)},
                       {"direction", c.direction},
                       {"unit", c.unit}});
  }
  Json j = {{"a", a_name}, {"b", b_name}, {"metrics", metrics}};
  return j.dump(2, ' ', false, Json::error_handler_t::replace);  // file names may be any bytes
}

}  // namespace vxperf::analysis
