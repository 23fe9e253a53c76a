// The report: records summarized per run and per rank, as text, JSON and a metric comparison.
#include "vxperf/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/units.h"
#include "base/stats.h"
#include "base/strings.h"
#include "schema/json_visitor.h"
#include "schema/record_writer.h"
#include "vxperf/phases.h"

namespace vxperf::analysis {

using internal::strprintf;
namespace {

using Json = nlohmann::ordered_json;

using units::kGiB;
// Relative changes smaller than this read as "same" in a comparison.
constexpr double kSameWithin = 0.005;

// The core's rule (linear interpolation between closest ranks) over unsorted values, q in [0, 1];
// 0 for no values.
double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  // The rule reads only the two closest ranks: each put in its place by selection, not a full
  // sort (a million requests' sort, twice, was a tenth of the time). Their position as the rule
  // computes it.
  double pos = static_cast<double>(values.size() - 1) * (q * 100.0) / 100.0;
  auto low = values.begin() + static_cast<std::ptrdiff_t>(pos);
  std::nth_element(values.begin(), low, values.end());
  if (low + 1 != values.end()) std::iter_swap(low + 1, std::min_element(low + 1, values.end()));
  return internal::percentile(values, q * 100.0);
}

// The smallest value whose cumulative weight reaches q of the total.
double weighted_percentile(std::vector<std::pair<double, double>> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double total = 0;
  for (const auto& v : values) total += v.second;
  if (total <= 0)
    return percentile(
        [&] {
          std::vector<double> plain;
          for (const auto& v : values) plain.push_back(v.first);
          return plain;
        }(),
        q);
  double cumulative = 0;
  for (const auto& v : values) {
    cumulative += v.second;
    if (cumulative >= q * total) return v.first;
  }
  return values.back().first;
}

// Mean weighted by `weight`, or nullopt without values.
struct WeightedMean {
  double sum = 0, weight = 0;
  void add(double value, double w) {
    sum += value * w;
    weight += w;
  }
  std::optional<double> get() const {
    return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
  }
};

void keep_max(std::optional<std::uint64_t>& into, std::uint64_t value) {
  if (!into || value > *into) into = value;
}

// Names in order of first appearance with a running sum each. Records name the same stages and
// phases in the same order, so the entry after the last one added is tried first.
struct OrderedSums {
  std::vector<std::pair<std::string, double>> entries;
  std::size_t hint = 0;
  void add(const std::string& name, double value) {
    if (hint >= entries.size() || entries[hint].first != name) {
      hint = 0;
      while (hint < entries.size() && entries[hint].first != name) ++hint;
      if (hint == entries.size()) entries.emplace_back(name, 0.0);
    }
    entries[hint++].second += value;
  }
};

// Adds one record's meter readings; `units` is what its energy is per (1 request, its samples; 0
// for another rank's share of a request already counted).
void add_energy(std::optional<EnergySummary>& into, const DeviceReadings& r, double units) {
  if (!r.energy_j && !r.power_w_mean && !r.sm_clock_mhz_min && !r.temp_c_max && !r.throttle) {
    return;
  }
  if (!into) into.emplace();
  EnergySummary& e = *into;
  if (r.energy_j) {
    if (units > 0) ++e.records;
    e.energy_j += *r.energy_j;
    // per_unit_j holds the units until finish_energy.
    e.per_unit_j = e.per_unit_j.value_or(0) + units;
  }
  if (r.power_w_mean) {
    e.power_w_mean = e.power_w_mean.value_or(0) + *r.power_w_mean;
    if (!e.power_w_max || *r.power_w_mean > *e.power_w_max) e.power_w_max = *r.power_w_mean;
  }
  if (r.sm_clock_mhz_min && (!e.sm_clock_mhz_min || *r.sm_clock_mhz_min < *e.sm_clock_mhz_min)) {
    e.sm_clock_mhz_min = r.sm_clock_mhz_min;
  }
  if (r.temp_c_max && (!e.temp_c_max || *r.temp_c_max > *e.temp_c_max)) e.temp_c_max = r.temp_c_max;
  auto note = [](std::vector<std::string>& list, const std::string& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  if (r.throttle) {
    for (const auto& reason : *r.throttle) note(e.throttle, reason);
  }
  if (r.energy_from) note(e.energy_from, *r.energy_from);
}

// The sums to means: `powers` records carried power_w_mean.
void finish_energy(std::optional<EnergySummary>& e, std::int64_t powers) {
  if (!e) return;
  if (e->per_unit_j) {
    e->per_unit_j =
        *e->per_unit_j > 0 ? std::optional<double>(e->energy_j / *e->per_unit_j) : std::nullopt;
  }
  if (e->power_w_mean && powers > 0) *e->power_w_mean /= static_cast<double>(powers);
}

// A request summary's sums, one request at a time (the requests it is over: see RequestSide).
struct RequestAcc {
  std::int64_t count = 0;
  std::vector<double> e2e;  // each request's, for the percentiles
  double e2e_sum = 0;
  std::optional<double> e2e_max;
  std::optional<double> first_start, last_end;  // wall-clock seconds
  OrderedSums stage_ms, stage_calls;
  WeightedMean tflops, mfu;
  double effective = 0;     // full forwards the transformer calls came to
  std::int64_t powers = 0;  // records with power_w_mean
  // A request computed by a group of ranks: (its data-parallel index, its number) -> its place
  // in e2e. The run's sums count it once; a rank's, each of its records.
  bool fold_groups = false;
  std::map<std::pair<int, std::int64_t>, std::size_t> group_requests;
  RequestSummary s;  // the fields taken as they come

  void add_span(const RequestRecord& r) {
    if (r.ts <= 0) return;  // a record without its settle time (a replay's)
    double start = r.ts - r.e2e_s;
    if (!first_start || start < *first_start) first_start = start;
    if (!last_end || r.ts > *last_end) last_end = r.ts;
  }

  // Another rank's record of a request already counted: the request took as long as its slowest
  // rank, and its energy is the group's.
  void fold(const RequestRecord& r, std::size_t index) {
    ++s.shared_records;
    add_span(r);
    double& e2e_s = e2e[index];
    if (r.e2e_s > e2e_s) {
      e2e_sum += r.e2e_s - e2e_s;
      e2e_s = r.e2e_s;
      if (!e2e_max || e2e_s > *e2e_max) e2e_max = e2e_s;
    }
    if (r.peaks) {
      add_energy(s.energy, *r.peaks, 0.0);
      if (r.peaks->power_w_mean) ++powers;
    }
  }

  void add(const RequestRecord& r) {
    if (fold_groups && r.parallel && r.parallel->group > 1) {
      auto [it, fresh] = group_requests.emplace(std::make_pair(r.parallel->dp_rank, r.req),
                                                e2e.size());
      if (!fresh) return fold(r, it->second);
    }
    ++count;
    s.videos += r.videos.value_or(1);
    e2e.push_back(r.e2e_s);
    add_span(r);
    if (r.parallel) s.layout = r.parallel;
    e2e_sum += r.e2e_s;
    if (!e2e_max || r.e2e_s > *e2e_max) e2e_max = r.e2e_s;
    for (const auto& st : r.stages) {
      stage_ms.add(st.name, st.total_ms);
      stage_calls.add(st.name, static_cast<double>(st.count));
    }
    std::int64_t calls = 0;
    for (const auto& st : r.stages) {
      if (st.name.rfind("transformer", 0) == 0) calls += st.count;
    }
    s.transformer_calls += calls;
    // A request without skips computed every call whole.
    effective += r.dit && r.dit->effective_fwd ? *r.dit->effective_fwd : static_cast<double>(calls);
    if (r.dit) {
      const DitThroughput& d = *r.dit;
      tflops.add(d.tflops, 1);
      if (d.mfu) mfu.add(*d.mfu, 1);
      s.params = d.params;
      s.dtype = dtype_name(d.dtype);
      if (d.peak_tflops) {
        s.peak_tflops = *d.peak_tflops / std::max(d.devices, 1);
        s.peak_source = peak_source_name(d.peak_source);
      }
      if (d.effective_fwd) s.skipped_fwd = s.skipped_fwd.value_or(0) + d.skipped_fwd.value_or(0);
    }
    if (r.peaks) {
      keep_max(s.peak_alloc_bytes, r.peaks->allocated);
      keep_max(s.peak_reserved_bytes, r.peaks->reserved);
      add_energy(s.energy, *r.peaks, 1.0);
      if (r.peaks->power_w_mean) ++powers;
    }
  }

  RequestSummary summary(std::int64_t warmup) const {
    RequestSummary out = s;
    finish_energy(out.energy, powers);
    out.warmup = warmup;
    out.count = count;
    double n = static_cast<double>(std::max<std::int64_t>(count, 1));
    out.e2e_p50_s = percentile(e2e, 0.5);
    out.e2e_p95_s = percentile(e2e, 0.95);
    if (first_start && *last_end > *first_start) {
      out.requests_per_hour = static_cast<double>(count) * 3600.0 / (*last_end - *first_start);
    }
    out.e2e_max_s = e2e_max.value_or(0);
    out.e2e_mean_s = e2e_sum / n;
    // Both sums saw the same names in the same order.
    for (std::size_t i = 0; i < stage_ms.entries.size(); ++i) {
      const auto& [name, ms] = stage_ms.entries[i];
      StageShare share;
      share.name = name;
      share.mean_ms = ms / n;
      share.calls = stage_calls.entries[i].second / n;
      share.share = e2e_sum > 0 ? ms / 1000.0 / e2e_sum : 0;
      out.stages.push_back(share);
    }
    std::stable_sort(
        out.stages.begin(), out.stages.end(),
        [](const StageShare& a, const StageShare& b) { return a.mean_ms > b.mean_ms; });
    out.tflops = tflops.get();
    out.mfu = mfu.get();
    if (out.skipped_fwd) out.effective_fwd = effective;
    return out;
  }
};

// Requests of one rank or of the run (`fold_groups`: a request of several ranks once): warmup
// ones are excluded unless all are warmup, so both sets are summed and the choice made at the end.
struct RequestSide {
  RequestAcc measured, warmup;
  explicit RequestSide(bool fold_groups) {
    measured.fold_groups = fold_groups;
    warmup.fold_groups = fold_groups;
  }
  void add(const RequestRecord& r) { (r.warmup ? warmup : measured).add(r); }
  std::int64_t total() const { return measured.count + warmup.count; }
  bool all_warmup() const { return measured.count == 0; }
  const RequestAcc& chosen() const { return all_warmup() ? warmup : measured; }
  RequestSummary summary() const { return chosen().summary(warmup.count); }
};

// Per-rank entries, looked up by rank. Records come a rank's file at a time, so the last rank's
// entry is kept at hand rather than looked up for each record (a map's references stay valid as
// it grows; a copy looks its own up again).
template <typename Entry>
class ByRank {
 public:
  ByRank() = default;
  ByRank(const ByRank& other) : map_(other.map_) {}
  ByRank& operator=(const ByRank& other) {
    map_ = other.map_;
    last_ = nullptr;
    return *this;
  }
  Entry& operator[](int rank) {
    if (last_ == nullptr || last_rank_ != rank) {
      last_ = &map_[rank];
      last_rank_ = rank;
    }
    return *last_;
  }
  auto begin() const { return map_.begin(); }
  auto end() const { return map_.end(); }

 private:
  std::map<int, Entry> map_;
  int last_rank_ = 0;
  Entry* last_ = nullptr;
};

// A training summary's sums, one window at a time.
struct TrainAcc {
  std::int64_t windows = 0;
  bool keep_values = true;  // each window's p50 and p95 with its weight (a rank's)
  struct RankSums {
    std::int64_t steps = 0, warmup = 0;
    double samples = 0, wall_s = 0;
  };
  ByRank<RankSums> by_rank;
  std::vector<std::pair<double, double>> p50s, p95s;
  OrderedSums phases;
  double phase_steps = 0;
  WeightedMean tflops, hw_tflops, mfu, hfu;
  bool have_latest = false;  // the window the ETA is taken from
  std::int64_t latest_step = 0;
  int latest_rank = 0;
  double latest_eta = 0;
  std::int64_t powers = 0;  // windows with power_w_mean
  TrainSummary s;

  void add(const TrainWindowRecord& w) {
    ++windows;
    RankSums& rank = by_rank[w.rank];
    rank.steps += w.steps;
    rank.warmup += w.warmup_excluded;
    auto weight = static_cast<double>(std::max<std::int64_t>(w.steps, 1));
    if (keep_values) {
      p50s.emplace_back(w.step_s_p50, weight);
      p95s.emplace_back(w.step_s_p95, weight);
    }
    for (const auto& [name, seconds] : w.phases_s) phases.add(name, seconds * weight);
    phase_steps += weight;
    if (w.parallel) s.layout = w.parallel;
    if (w.peaks) {
      keep_max(s.peak_alloc_bytes, w.peaks->allocated);
      keep_max(s.peak_reserved_bytes, w.peaks->reserved);
      // Samples from J per sample (the engine's own division), so the mean is over samples.
      double units = w.energy_j_per_sample && w.peaks->energy_j && *w.energy_j_per_sample > 0
                         ? *w.peaks->energy_j / *w.energy_j_per_sample
                         : 0.0;
      add_energy(s.energy, *w.peaks, units);
      if (w.peaks->power_w_mean) ++powers;
    }
    if (w.throughput) {
      const auto& t = *w.throughput;
      // "samples" is a per-step mean; the window's total is its rate times its wall time.
      rank.samples += t.samples_per_s * t.wall_s;
      rank.wall_s += t.wall_s;
      s.dp = std::max(s.dp, t.dp);
      if (t.priced) {
        double priced = t.priced_s > 0 ? t.priced_s : 1.0;
        tflops.add(t.tflops, priced);
        hw_tflops.add(t.hw_tflops, priced);
        if (t.mfu) mfu.add(*t.mfu, priced);
        if (t.hfu) hfu.add(*t.hfu, priced);
        s.params = t.params;
        s.trainable = t.trainable;
        s.dtype = dtype_name(t.dtype);
        if (t.peak_tflops) {
          s.peak_tflops = *t.peak_tflops / std::max(t.devices, 1);
          s.peak_source = peak_source_name(t.peak_source);
        }
        if (t.skipped_fwd) s.skipped_fwd = s.skipped_fwd.value_or(0) + *t.skipped_fwd;
        if (t.effective_fwd) s.effective_fwd = s.effective_fwd.value_or(0) + *t.effective_fwd;
      }
    }
    if (w.eta_s && (!have_latest || w.step_last > latest_step ||
                    (w.step_last == latest_step && w.rank < latest_rank))) {
      have_latest = true;
      latest_step = w.step_last;
      latest_rank = w.rank;
      latest_eta = *w.eta_s;
    }
  }

  // `p50_values`, `p95_values`: the windows' percentiles with their weights.
  TrainSummary summary(std::vector<std::pair<double, double>> p50_values,
                       std::vector<std::pair<double, double>> p95_values) const {
    TrainSummary out = s;
    finish_energy(out.energy, powers);
    out.windows = windows;
    for (const auto& [rank, sums] : by_rank) {
      out.steps = std::max(out.steps, sums.steps);
      out.warmup_excluded = std::max(out.warmup_excluded, sums.warmup);
    }
    out.step_p50_s = weighted_percentile(std::move(p50_values), 0.5);
    out.step_p95_s = weighted_percentile(std::move(p95_values), 0.95);
    // The engine's phase order (its phase table), so that runs and ranks with different phase
    // sets line up; a name the table does not know goes last.
    auto order_of = [](const std::string& name) {
      auto phase = phase_from_name(name);
      return phase ? static_cast<int>(*phase) : kPhaseCount;
    };
    auto order = phases.entries;
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return order_of(a.first) < order_of(b.first);
    });
    double phase_total = 0;
    for (const auto& [name, sum] : order) {
      double mean = phase_steps > 0 ? sum / phase_steps : 0;
      out.phase_s.emplace_back(name, mean);
      phase_total += mean;
    }
    for (const auto& [name, mean] : out.phase_s) {
      out.phase_share.emplace_back(name, phase_total > 0 ? mean / phase_total : 0);
    }
    WeightedMean samples;
    for (const auto& [rank, sums] : by_rank) {
      if (sums.wall_s > 0) samples.add(sums.samples / sums.wall_s, 1);
    }
    out.samples_per_s = samples.get();
    if (out.samples_per_s) out.samples_per_s_global = *out.samples_per_s * out.dp;
    out.tflops = tflops.get();
    out.hw_tflops = hw_tflops.get();
    out.mfu = mfu.get();
    out.hfu = hfu.get();
    if (have_latest) out.eta_s = latest_eta;
    return out;
  }
};

// The job's energy, one record at a time (JobEnergy): sums, the union of each device's intervals
// (disjoint spans in time order, a few per idle gap), the first records without readings.
struct JobAcc {
  static constexpr std::size_t kUnreadListed = 8;
  struct Device {
    std::int64_t records = 0;
    double energy_j = 0;
    double union_s = 0;
    std::vector<std::pair<double, double>> spans;  // disjoint, in time order
    double loose_s = 0;  // intervals without a settle time (a replay's records): summed

    void add(double start, double end) {
      // Records come nearly in the order they ended: most land at the back.
      auto first = std::lower_bound(spans.begin(), spans.end(), start,
                                    [](const auto& span, double t) { return span.second < t; });
      auto last = first;
      while (last != spans.end() && last->first <= end) {
        start = std::min(start, last->first);
        end = std::max(end, last->second);
        union_s -= last->second - last->first;
        ++last;
      }
      first = spans.erase(first, last);
      spans.insert(first, {start, end});
      union_s += end - start;
    }
  };

  JobEnergy s;
  bool any = false;                                       // some record carries energy_j
  std::map<std::pair<int, int>, Device> devices;          // by (rank, device)
  std::set<std::pair<int, std::int64_t>> group_requests;  // (dp_rank, req) of several ranks
  double cpu_j = 0;
  bool any_cpu = false;

  // `seconds`: the record's interval; `label`: it, for the list of records without readings.
  void add(int rank, const std::optional<int>& device, const std::optional<DeviceReadings>& r,
           double ts, double seconds, const std::string& label) {
    ++s.records;
    if (r && r->cpu_energy_j) {
      cpu_j += *r->cpu_energy_j;
      any_cpu = true;
    }
    if (!r || !r->energy_j) {
      ++s.unread;
      if (s.unread_first.size() < kUnreadListed) s.unread_first.push_back(label);
      return;
    }
    any = true;
    if (r->energy_shared) ++s.shared;
    s.energy_j += *r->energy_j;
    Device& d = devices[{rank, device.value_or(0)}];
    ++d.records;
    d.energy_j += *r->energy_j;
    // The meter's own seconds where it said them, else the record's.
    if (r->power_w_mean && *r->power_w_mean > 0) seconds = *r->energy_j / *r->power_w_mean;
    if (ts > 0 && seconds > 0) {
      d.add(ts - seconds, ts);
    } else if (seconds > 0) {
      d.loose_s += seconds;
    }
  }

  void request(const RequestRecord& r) {
    add(r.rank, r.device, r.peaks, r.ts, r.e2e_s,
        strprintf("rank %d req %lld", r.rank, static_cast<long long>(r.req)));
    if (!r.peaks || !r.peaks->energy_j) return;
    s.request_energy_j += *r.peaks->energy_j;
    // A request of several ranks is counted once, its energy the sum of theirs.
    if (r.parallel && r.parallel->group > 1 &&
        !group_requests.emplace(r.parallel->dp_rank, r.req).second) {
      return;
    }
    s.videos += r.videos.value_or(1);
  }

  void window(const TrainWindowRecord& w) {
    double wall = w.throughput ? w.throughput->wall_s : 0.0;
    add(w.rank, w.device, w.peaks, w.ts, wall,
        strprintf("rank %d steps %lld-%lld", w.rank, static_cast<long long>(w.step_first),
                  static_cast<long long>(w.step_last)));
    if (!w.peaks || !w.peaks->energy_j) return;
    s.window_energy_j += *w.peaks->energy_j;
    if (w.energy_j_per_sample && *w.energy_j_per_sample > 0) {
      // The ranks of one context- or tensor-parallel group took the same samples.
      int sharing = w.parallel ? std::max(w.parallel->cp, 1) * std::max(w.parallel->tp, 1) : 1;
      s.samples += *w.peaks->energy_j / *w.energy_j_per_sample / sharing;
    }
  }

  std::optional<JobEnergy> summary() const {
    if (!any) return std::nullopt;
    JobEnergy out = s;
    if (any_cpu) out.cpu_energy_j = cpu_j;
    if (out.videos > 0) out.j_per_video = out.request_energy_j / static_cast<double>(out.videos);
    if (out.samples > 0) out.j_per_sample = out.window_energy_j / out.samples;
    for (const auto& [key, d] : devices) {
      DeviceEnergy e;
      e.rank = key.first;
      e.device = key.second;
      e.records = d.records;
      e.energy_j = d.energy_j;
      e.seconds = d.union_s + d.loose_s;
      if (e.seconds > 0) e.power_w_mean = e.energy_j / e.seconds;
      out.devices.push_back(e);
    }
    return out;
  }
};

std::string opt_text(const std::optional<double>& v, const char* format, double scale = 1) {
  return v ? strprintf(format, *v * scale) : std::string("-");
}

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

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
  std::string device = "  device   power " + opt_text(e.power_w_mean, "%.1f W") + " mean, " +
                       opt_text(e.power_w_max, "%.1f W") + " max";
  if (e.sm_clock_mhz_min) {
    device += strprintf("  SM clock min %lld MHz", static_cast<long long>(*e.sm_clock_mhz_min));
  }
  if (e.temp_c_max) device += strprintf("  temp max %lld C", static_cast<long long>(*e.temp_c_max));
  line(device);
  std::string reasons;
  for (const auto& r : e.throttle) reasons += (reasons.empty() ? "" : ", ") + r;
  line("  throttle " + (reasons.empty() ? std::string("none seen") : reasons));
}

constexpr double kJoulesPerKwh = 3.6e6;

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
  if (e.cpu_energy_j) head += strprintf("; host CPU and DRAM %.3f J", *e.cpu_energy_j);
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
  return {{"energy_j", e.energy_j},
          {"kwh", e.energy_j / kJoulesPerKwh},
          {"cpu_energy_j", opt_json(e.cpu_energy_j)},
          {"j_per_video", opt_json(e.j_per_video)},
          {"videos", e.videos},
          {"request_energy_j", e.request_energy_j},
          {"j_per_sample", opt_json(e.j_per_sample)},
          {"samples", e.samples},
          {"window_energy_j", e.window_energy_j},
          {"devices", devices},
          {"records", e.records},
          {"shared", e.shared},
          {"unread", e.unread},
          {"unread_first", e.unread_first}};
}

Json energy_json(const EnergySummary& e) {
  Json j = {{"records", e.records},
            {"energy_j", e.energy_j},
            {"per_unit_j", opt_json(e.per_unit_j)},
            {"power_w_mean", opt_json(e.power_w_mean)},
            {"power_w_max", opt_json(e.power_w_max)},
            {"throttle", e.throttle},
            {"energy_from", e.energy_from}};
  j["sm_clock_mhz_min"] = e.sm_clock_mhz_min ? Json(*e.sm_clock_mhz_min) : Json(nullptr);
  j["temp_c_max"] = e.temp_c_max ? Json(*e.temp_c_max) : Json(nullptr);
  return j;
}
Json opt_json(const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

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

// A layout as its record carries it (the field table's object), or null.
Json layout_json(const std::optional<ParallelLayout>& layout) {
  if (!layout) return nullptr;
  internal::JsonVisitor out(Json::object());
  internal::Writer writer(out);
  internal::describe(writer, *layout);
  return std::move(out.json());
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
  return text + (from.empty() ? " (the world's)" : " (" + from + ")");
}

using units::duration;
using units::flops_rate;
using units::gib;
using units::param_count;

std::string flops_cell(const std::optional<double>& tflops) {
  return tflops ? units::flops_cell(*tflops) : std::string("-");
}

// "  DiT 1.42B params  150.3 TFLOPS  MFU 45.1% of 333 TFLOPS per device (measured, fp8)". The
// records say a peak's source only when it was measured (a table or variable peak is the
// reference's own and unmarked), and the dtype only when it is not bf16.
std::string dit_line(const std::optional<std::int64_t>& params, const std::optional<double>& rate,
                     const std::string& utilization, const std::optional<double>& peak,
                     const std::string& source, const std::string& dtype) {
  std::string text = "  DiT ";
  if (params) text += param_count(*params) + " params  ";
  text += rate ? flops_rate(*rate) : std::string("-");
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

}  // namespace

struct ReportBuilder::State {
  RequestSide requests{true};
  TrainAcc training;
  JobAcc job;
  struct Rank {
    std::optional<RequestSide> requests;
    std::optional<TrainAcc> training;
  };
  ByRank<Rank> ranks;
  std::vector<std::string> warnings;
  State() { training.keep_values = false; }
};

ReportBuilder::ReportBuilder() : state_(std::make_unique<State>()) {}
ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::request(const RequestRecord& record) {
  state_->requests.add(record);
  state_->job.request(record);
  auto& rank = state_->ranks[record.rank];
  if (!rank.requests) rank.requests.emplace(false);
  rank.requests->add(record);
}

void ReportBuilder::window(const TrainWindowRecord& record) {
  state_->training.add(record);
  state_->job.window(record);
  auto& rank = state_->ranks[record.rank];
  if (!rank.training) rank.training.emplace();
  rank.training->add(record);
}

void ReportBuilder::warning(const std::string& text) { state_->warnings.push_back(text); }

Report ReportBuilder::finish(std::vector<std::string> sources) const {
  const State& st = *state_;
  Report report;
  report.sources = std::move(sources);
  report.warnings = st.warnings;
  // The run's measured requests are the non-warmup ones of every rank unless all are warmup.
  if (st.requests.total() > 0) report.requests = st.requests.summary();
  if (st.training.windows > 0) {
    std::vector<std::pair<double, double>> p50s, p95s;
    for (const auto& [rank, r] : st.ranks) {
      if (!r.training) continue;
      p50s.insert(p50s.end(), r.training->p50s.begin(), r.training->p50s.end());
      p95s.insert(p95s.end(), r.training->p95s.begin(), r.training->p95s.end());
    }
    report.training = st.training.summary(std::move(p50s), std::move(p95s));
  }

  for (const auto& [rank, r] : st.ranks) {
    RankSummary rs;
    rs.rank = rank;
    if (r.requests) {
      RequestSummary q = r.requests->summary();
      rs.requests = q.count;
      rs.e2e_p50_s = q.e2e_p50_s;
      if (q.peak_alloc_bytes) keep_max(rs.peak_alloc_bytes, *q.peak_alloc_bytes);
      rs.tflops = q.tflops;
      rs.mfu = q.mfu;
    }
    if (r.training) {
      TrainSummary t = r.training->summary(r.training->p50s, r.training->p95s);
      rs.windows = t.windows;
      rs.steps = t.steps;
      rs.step_p50_s = t.step_p50_s;
      rs.step_p95_s = t.step_p95_s;
      rs.samples_per_s = t.samples_per_s;
      rs.tflops = t.tflops;
      rs.mfu = t.mfu;
      if (t.peak_alloc_bytes) keep_max(rs.peak_alloc_bytes, *t.peak_alloc_bytes);
      rs.phase_s = t.phase_s;
    }
    report.ranks.push_back(rs);
  }

  report.energy = st.job.summary();

  // Stragglers, by the core's rule: by step time and phases when there is training, else by
  // request latency.
  std::vector<RankTimes> times;
  std::vector<RankSummary*> measured;
  for (auto& rs : report.ranks) {
    if (report.training ? rs.step_p50_s.has_value() : rs.e2e_p50_s.has_value()) {
      RankTimes t;
      t.rank = rs.rank;
      t.step_s = report.training ? *rs.step_p50_s : *rs.e2e_p50_s;
      if (report.training) t.phases_s = rs.phase_s;
      times.push_back(std::move(t));
      measured.push_back(&rs);
    }
  }
  if (times.size() >= 2) {
    StragglerVerdict verdict = find_stragglers(times);
    report.rank_median_s = verdict.median_s;
    report.stragglers = verdict.stragglers;
    report.straggler_phases = verdict.where;
    for (std::size_t i = 0; i < measured.size(); ++i) measured[i]->excess_s = verdict.excess_s[i];
  }
  return report;
}

Report build_report(const RecordSet& records, std::vector<std::string> sources) {
  ReportBuilder builder;
  for (const auto& w : records.warnings) builder.warning(w);
  for (const auto& r : records.requests) builder.request(r);
  for (const auto& w : records.windows) builder.window(w);
  return builder.finish(std::move(sources));
}

std::string format_report(const Report& report) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  for (const auto& w : report.warnings) line("warning: " + w);
  if (!report.requests && !report.training) {
    line("no records");
    return out;
  }
  if (const auto& r = report.requests) {
    line(strprintf("Requests: %lld measured%s", static_cast<long long>(r->count),
                   r->warmup
                       ? strprintf(" (%lld warmup %s)", static_cast<long long>(r->warmup),
                                   r->warmup == r->count ? "included: all are warmup" : "excluded")
                             .c_str()
                       : ""));
    line(strprintf("  e2e      p50 %.3fs  p95 %.3fs  max %.3fs  mean %.3fs", r->e2e_p50_s,
                   r->e2e_p95_s, r->e2e_max_s, r->e2e_mean_s));
    if (r->requests_per_hour) line(strprintf("  rate     %.1f requests/hour", *r->requests_per_hour));
    if (r->layout) {
      line(layout_line(*r->layout, true) +
           (r->shared_records > 0
                ? strprintf("; %lld records of the same requests on other ranks counted with them",
                            static_cast<long long>(r->shared_records))
                : std::string()));
    }
    line(strprintf("  %-16s %12s %8s %8s", "stage", "mean/request", "calls", "share"));
    for (const auto& s : r->stages) {
      line(strprintf("  %-16s %10.1fms %8.1f %7.1f%%", s.name.c_str(), s.mean_ms, s.calls,
                     s.share * 100.0));
    }
    line(dit_line(r->params, r->tflops, "MFU " + opt_text(r->mfu, "%.1f%%", 100.0), r->peak_tflops,
                  r->peak_source, r->dtype));
    if (r->skipped_fwd) {
      line(skip_line(
          r->skipped_fwd, r->effective_fwd,
          strprintf("of %lld transformer calls", static_cast<long long>(r->transformer_calls))
              .c_str()));
    }
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
    line(strprintf("Training: %lld steps in %lld windows%s", static_cast<long long>(t->steps),
                   static_cast<long long>(t->windows),
                   t->warmup_excluded ? strprintf(" (%lld warmup excluded)",
                                                  static_cast<long long>(t->warmup_excluded))
                                            .c_str()
                                      : ""));
    line(strprintf("  step     p50 %.3fs  p95 %.3fs", t->step_p50_s, t->step_p95_s));
    if (t->layout) line(layout_line(*t->layout, false));
    line(strprintf("  %-16s %12s %8s", "phase", "mean/step", "share"));
    for (std::size_t i = 0; i < t->phase_s.size(); ++i) {
      line(strprintf("  %-16s %11.3fs %7.1f%%", t->phase_s[i].first.c_str(), t->phase_s[i].second,
                     t->phase_share[i].second * 100.0));
    }
    line("  " + opt_text(t->samples_per_s, "%.3f samples/s") +
         strprintf(" per rank, dp=%d -> ", t->dp) +
         opt_text(t->samples_per_s_global, "%.3f samples/s global"));
    line(dit_line(
        t->params, t->tflops,
        "MFU " + opt_text(t->mfu, "%.1f%%", 100.0) + "  HFU " + opt_text(t->hfu, "%.1f%%", 100.0),
        t->peak_tflops, t->peak_source, t->dtype));
    if (t->params && t->trainable && *t->trainable != *t->params) {
      line("  trainable " + param_count(*t->trainable) + " params");
    }
    if (t->skipped_fwd) line(skip_line(t->skipped_fwd, t->effective_fwd, "forward calls"));
    if (t->peak_alloc_bytes) {
      line("  peak memory " + gib(*t->peak_alloc_bytes) + " allocated, " +
           gib(t->peak_reserved_bytes.value_or(0)) + " reserved");
    }
    if (t->energy) energy_lines(line, *t->energy, "sample", "windows");
    if (t->eta_s) line("  ETA " + duration(*t->eta_s));
  }
  if (report.energy) job_energy_lines(line, *report.energy);
  if (report.ranks.size() > 1) {
    line(strprintf("Ranks (%zu):", report.ranks.size()));
    line(strprintf("  %4s %8s %9s %6s %9s %9s %10s %8s %7s %10s %9s", "rank", "requests", "e2e p50",
                   "steps", "step p50", "step p95", "samples/s", "FLOP/s", "MFU", "peak alloc",
                   "excess"));
    for (const auto& rs : report.ranks) {
      line(strprintf("  %4d %8lld %9s %6lld %9s %9s %10s %8s %7s %10s %9s", rs.rank,
                     static_cast<long long>(rs.requests), opt_text(rs.e2e_p50_s, "%.3fs").c_str(),
                     static_cast<long long>(rs.steps), opt_text(rs.step_p50_s, "%.3fs").c_str(),
                     opt_text(rs.step_p95_s, "%.3fs").c_str(),
                     opt_text(rs.samples_per_s, "%.3f").c_str(), flops_cell(rs.tflops).c_str(),
                     opt_text(rs.mfu, "%.1f%%", 100).c_str(),
                     rs.peak_alloc_bytes ? gib(*rs.peak_alloc_bytes).c_str() : "-",
                     opt_text(rs.excess_s, "%.3fs").c_str()));
    }
    if (report.stragglers.empty()) {
      line("Stragglers: none");
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
    }
  }
  return out;
}

std::string report_json(const Report& report) {
  Json j;
  j["sources"] = report.sources;
  j["warnings"] = report.warnings;
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
                     {"tflops", opt_json(r->tflops)},
                     {"mfu", opt_json(r->mfu)},
                     {"peak_alloc_bytes", opt_json(r->peak_alloc_bytes)},
                     {"peak_reserved_bytes", opt_json(r->peak_reserved_bytes)},
                     {"requests_per_hour", opt_json(r->requests_per_hour)},
                     {"shared_records", r->shared_records},
                     {"layout", layout_json(r->layout)}};
    add_basis(j["requests"], r->params, r->peak_tflops, r->peak_source, r->dtype, r->skipped_fwd,
              r->effective_fwd);
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
                     {"hw_tflops", opt_json(t->hw_tflops)},
                     {"mfu", opt_json(t->mfu)},
                     {"hfu", opt_json(t->hfu)},
                     {"peak_alloc_bytes", opt_json(t->peak_alloc_bytes)},
                     {"peak_reserved_bytes", opt_json(t->peak_reserved_bytes)},
                     {"eta_s", opt_json(t->eta_s)},
                     {"layout", layout_json(t->layout)}};
    add_basis(j["training"], t->params, t->peak_tflops, t->peak_source, t->dtype, t->skipped_fwd,
              t->effective_fwd);
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
                     {"mfu", opt_json(rs.mfu)},
                     {"peak_alloc_bytes", opt_json(rs.peak_alloc_bytes)},
                     {"phases_s", phases},
                     {"excess_s", opt_json(rs.excess_s)}});
  }
  j["ranks"] = ranks;
  if (report.energy) j["energy"] = job_energy_json(*report.energy);
  j["stragglers"] = report.stragglers;
  j["straggler_phases"] = report.straggler_phases;
  j["rank_median_s"] = opt_json(report.rank_median_s);
  return j.dump(2, ' ', false, Json::error_handler_t::replace);  // file names may be any bytes
}

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
    add("requests.tflops", r->tflops, false, "TFLOPS");
    add("requests.mfu", r->mfu, false, "");
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
    add("training.peak_alloc_gib", bytes(t->peak_alloc_bytes), true, "GiB");
    add("training.eta_h", t->eta_s ? std::optional<double>(*t->eta_s / 3600.0) : std::nullopt, true,
        "h");
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
  return out;
}

std::string format_comparison(const std::string& a_name, const std::string& b_name,
                              const std::vector<MetricChange>& changes) {
  std::string out = "A: " + a_name + "\nB: " + b_name + "\n";
  out += strprintf("%-34s %14s %14s %9s  %s\n", "metric", "A", "B", "change", "");
  auto value = [](const std::optional<double>& v, const std::string& unit) {
    if (!v) return std::string("-");
    if (unit.empty()) return strprintf("%.2f%%", *v * 100.0);  // utilizations
    return strprintf("%.4g %s", *v, unit.c_str());
  };
  for (const auto& c : changes) {
    out += strprintf("%-34s %14s %14s %9s  %s\n", c.name.c_str(), value(c.a, c.unit).c_str(),
                     value(c.b, c.unit).c_str(),
                     c.change ? strprintf("%+.1f%%", *c.change * 100.0).c_str() : "-",
                     c.direction.c_str());
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
