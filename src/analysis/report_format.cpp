// What the report's forms share (report_format.h): absent numbers as JSON nulls, readings.
#include "analysis/report_format.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "base/strings.h"

namespace vxperf::analysis::report_format {

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_json(const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

std::string reading_value(const ReadingSummary& r, const std::optional<double>& v) {
  if (!v) return "-";
  std::string text = internal::strprintf("%.*f", r.show.decimals, *v);
  return *r.show.unit ? text + " " + r.show.unit : text;
}

std::string fold_text(const ReadingSummary& r) {
  switch (r.show.fold) {
    case Fold::kMean:
      return reading_value(r, r.value) + " mean, " + reading_value(r, r.max) + " max";
    case Fold::kMin:
      return "min " + reading_value(r, r.value);
    case Fold::kMax:
      return "max " + reading_value(r, r.value);
    case Fold::kList:
      return internal::join(r.seen, ", ");
    default:
      return reading_value(r, r.value);
  }
}

std::string reading_text(const ReadingSummary& r) {
  // A folded value has a label (tests/schema).
  return std::string(r.show.label) + " " + fold_text(r);
}

std::vector<const ReadingSummary*> rank_field_columns(const std::vector<RankSummary>& ranks) {
  std::vector<const ReadingSummary*> columns;
  for (const auto& rank : ranks) {
    for (const auto& f : rank.fields) {
      bool listed = std::any_of(columns.begin(), columns.end(), [&](const ReadingSummary* c) {
        return std::string_view(c->show.key) == f.show.key;
      });
      if (!listed) columns.push_back(&f);
    }
  }
  return columns;
}

std::string rank_field_cell(const RankSummary& rank, const ReadingSummary& column) {
  const ReadingSummary* r = find_reading(rank.fields, column.show.key);
  if (r == nullptr || (!r->value && r->seen.empty())) return "-";
  return r->show.fold == Fold::kList ? internal::join(r->seen, ", ") : reading_value(*r, r->value);
}

std::optional<StageShare> other_stage(const RequestSummary& r) {
  double share = 1.0, ms = r.e2e_mean_s * 1000.0;
  for (const auto& s : r.stages) {
    share -= s.share;
    ms -= s.mean_ms;
  }
  if (r.stages.empty() || share < 0.0005) return std::nullopt;
  StageShare other;
  other.name = "other";
  other.mean_ms = std::max(ms, 0.0);
  other.share = share;
  return other;
}

std::string mfu_missing(const std::optional<double>& tflops) {
  return mfu_missing_reason(tflops.has_value());
}

std::string ranks_mfu_missing(const Report& report) {
  std::map<std::string, std::string> ranks;  // reason -> ranks
  for (const RankSummary& rs : report.ranks) {
    if (rs.mfu) continue;
    // A rank's MFU is its training's where it trained, else its requests' (RankSummary); where
    // the section has none either, the section's line said why.
    const bool section = rs.windows > 0 ? report.training && report.training->mfu
                                        : report.requests && report.requests->mfu;
    if (!section) continue;
    std::string& list = ranks[mfu_missing(rs.device_tflops)];
    list += (list.empty() ? "" : ", ") + std::to_string(rs.rank);
  }
  std::string text;
  for (const auto& [why, list] : ranks) {
    text += (text.empty() ? "MFU n/a for rank" : "; for rank") +
            std::string(list.find(',') != std::string::npos ? "s " : " ") + list + " (" + why + ")";
  }
  return text;
}

namespace {

// "mfu" of "training.mfu", and where it begins.
std::size_t metric_leaf(const std::string& name) { return name.rfind('.') + 1; }  // 0: no dot

}  // namespace

bool lacks_utilization(const MetricChange& c) {
  const std::string leaf = c.name.substr(metric_leaf(c.name));
  return (leaf == "mfu" || leaf == "hfu") && (!c.a || !c.b);
}

std::vector<std::string> comparison_mfu_missing(const std::vector<MetricChange>& changes) {
  std::vector<std::string> lines;
  for (const MetricChange& c : changes) {
    const std::size_t at = metric_leaf(c.name);
    if (!lacks_utilization(c) || c.name.substr(at) != "mfu") continue;
    // The same section's rate on the same side: FLOPs were priced where there is one.
    const std::string rate = c.name.substr(0, at) + "tflops";
    auto why = [&](bool a) {
      std::optional<double> tflops;
      for (const MetricChange& r : changes) {
        if (r.name == rate) tflops = a ? r.a : r.b;
      }
      return mfu_missing(tflops);
    };
    if (!c.a && !c.b && why(true) == why(false)) {  // one line where both sides lack it alike
      lines.push_back(c.name + " n/a in A and B: " + why(true));
      continue;
    }
    for (const bool a : {true, false}) {
      if (a ? c.a.has_value() : c.b.has_value()) continue;
      lines.push_back(c.name + " n/a in " + (a ? "A" : "B") + ": " + why(a));
    }
  }
  return lines;
}

RankTimeUnits rank_time_units(const std::vector<RankSummary>& ranks) {
  double e2e = 0, step = 0, excess = 0;
  for (const RankSummary& rs : ranks) {
    e2e = std::max(e2e, rs.e2e_p50_s.value_or(0));
    step = std::max({step, rs.step_p50_s.value_or(0), rs.step_p95_s.value_or(0)});
    excess = std::max(excess, rs.excess_s.value_or(0));
  }
  return {units::time_unit(e2e), units::time_unit(step), units::time_unit(excess)};
}

units::Unit step_time_unit(const TrainSummary& t) {
  double top = std::max(t.step_p50_s, t.step_p95_s);
  for (const auto& [name, s] : t.phase_s) top = std::max(top, s);
  return units::time_unit(top);
}

std::string windows_text(const TrainSummary& t) {
  auto windows = [](std::int64_t n) {
    return internal::strprintf("%lld window%s", static_cast<long long>(n), n == 1 ? "" : "s");
  };
  if (t.ranks <= 1) return "in " + windows(t.windows);
  if (t.windows % t.ranks == 0) {
    return "in " + windows(t.windows / t.ranks) +
           internal::strprintf(" per rank (%lld over the %d ranks)",
                               static_cast<long long>(t.windows), t.ranks);
  }
  return "in " + windows(t.windows) + internal::strprintf(" over the %d ranks together", t.ranks);
}

std::string no_stragglers_note(bool training) {
  return internal::strprintf(
      "none above the threshold (no rank's %s above the ranks' median%s exceeds the least rank's "
      "by %.0f%% of the median %s)",
      training ? "time per step" : "e2e p50", training ? "s per phase" : "",
      kStragglerMargin * 100.0, training ? "step" : "e2e p50");
}

std::string outside_wait_note(const Report& report) {
  if (!report.training || report.stragglers.empty()) return "";
  auto outside = [](const RankSummary& r) {
    return r.ledger ? r.ledger->save_s + r.ledger->restore_s + r.ledger->eval_s : 0.0;
  };
  const RankSummary* most = nullptr;
  for (const auto& rs : report.ranks) {
    if (rs.ledger && outside(rs) > 0 && (most == nullptr || outside(rs) > outside(*most))) {
      most = &rs;
    }
  }
  if (most == nullptr) return "";
  std::string waited;
  for (int rank : report.stragglers) {
    for (const auto& rs : report.ranks) {
      if (rs.rank != rank || rs.rank == most->rank || !rs.ledger) continue;
      if (outside(rs) < 0.5 * outside(*most)) {
        waited += internal::strprintf(", rank %d %.3fs", rs.rank, outside(rs));
      }
    }
  }
  if (waited.empty()) return "";
  return internal::strprintf(
      "rank %d spent %.3fs outside its steps (saves, restores, evaluations)%s: a rank that saves "
      "or evaluates alone (a main-process-only validation) holds the others at their next "
      "collective, and that wait is in their steps",
      most->rank, outside(*most), waited.c_str());
}

std::string slowest_rank_cost(const RankSummary& rank) {
  std::string where;
  for (const auto& [phase, seconds] : rank.lost_phases_s) {
    where += internal::strprintf("%s%s %.3fs", where.empty() ? "" : ", ", phase.c_str(), seconds);
  }
  return internal::strprintf(
      "Slowest rank's cost: rank %d %.3fs above the ranks' per-phase medians in the windows it was "
      "slowest in (%s)",
      rank.rank, rank.lost_s.value_or(0), where.c_str());
}

namespace {

Json reading_json(const ReadingSummary& r, const std::optional<double>& v) {
  if (!v) return nullptr;
  return r.integral ? Json(static_cast<std::int64_t>(*v)) : Json(*v);
}

// "power_w_mean" -> "power_w_max"; another key gains "_max".
std::string max_key(const std::string& key) {
  const std::string mean = "_mean";
  if (key.size() > mean.size() && key.compare(key.size() - mean.size(), mean.size(), mean) == 0) {
    return key.substr(0, key.size() - mean.size()) + "_max";
  }
  return key + "_max";
}

}  // namespace

void add_readings(Json& j, const std::vector<ReadingSummary>& readings) {
  for (const auto& r : readings) {
    if (r.show.fold == Fold::kList) {
      j[r.show.key] = r.seen;
      continue;
    }
    j[r.show.key] = reading_json(r, r.value);
    if (r.show.fold == Fold::kMean) j[max_key(r.show.key)] = reading_json(r, r.max);
  }
}

}  // namespace vxperf::analysis::report_format

namespace vxperf::analysis {

const char* mfu_missing_reason(bool priced) {
  return priced ? "no peak recorded: run the job with VIDEOX_PERF_PEAK_TFLOPS=auto"
                : "no FLOPs priced";
}

}  // namespace vxperf::analysis
