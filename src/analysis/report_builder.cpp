// The report built a record at a time: the run's, ranks' and job's sums, ReportBuilder.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>

#include "analysis/attempt_ledgers.h"
#include "analysis/chart_data.h"
#include "analysis/file_bytes.h"
#include "analysis/partial_io.h"
#include "analysis/svg_charts.h"
#include "analysis/value_sketch.h"
#include "analysis/window_state.h"
#include "base/stats.h"
#include "base/strings.h"
#include "schema/json.h"
#include "schema/show_walk.h"
#include "vxperf/phases.h"
#include "vxperf/report.h"
#include "vxperf/stages.h"

namespace vxperf {

// A layout's bytes in a partial (analysis/partial_io.h finds it by the layout's namespace).
template <class IO>
[[maybe_unused]] static void fields(IO& io, ParallelLayout& p) {
  io(p.dp, p.dp_replicate, p.dp_shard, p.cp, p.tp, p.group, p.dp_rank, p.from);
}

}  // namespace vxperf

namespace vxperf::analysis {

// A fold's bytes in a partial: its key, which the row read into must have (the rows are made
// from the field table, as those of the vxperf that wrote it were).
template <class IO>
[[maybe_unused]] static void fields(IO& io, ReadingSummary& r) {
  std::string key = r.show.key;
  io(key);
  if (key != r.show.key) {
    throw std::invalid_argument("a fold of '" + key + "' where this vxperf folds '" + r.show.key +
                                "': a partial of another vxperf's field table");
  }
  io(r.records, r.value, r.max, r.seen);
}

namespace {

// Folds made from the field table, read back in place (ReadingSummary's fields).
struct InPlace {
  std::vector<ReadingSummary>& rows;
  template <class IO>
  void fields(IO& io) {
    std::size_t n = rows.size();
    io(n);
    if (n != rows.size()) {
      throw std::invalid_argument(std::to_string(n) + " folds where this vxperf has " +
                                  std::to_string(rows.size()) +
                                  ": a partial of another vxperf's field table");
    }
    for (ReadingSummary& r : rows) io(r);
  }
};

}  // namespace

using internal::strprintf;
namespace {

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
  void merge(const WeightedMean& other) {
    sum += other.sum;
    weight += other.weight;
  }
  template <class IO>
  void fields(IO& io) {
    io(sum, weight);
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
  // Another's names after these, in its order: each sum one addition.
  void merge(const OrderedSums& other) {
    for (const auto& [name, value] : other.entries) add(name, value);
  }
  template <class IO>
  void fields(IO& io) {
    io(entries);
  }
};

void note(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// Whether a summary folds the reading of `show`: the job's totals (`sums`) its sums, a section's
// energy summary every other fold.
bool folds(const Show& show, bool sums) {
  return show.fold != Fold::kNone && (show.fold == Fold::kSum) == sums;
}

// The readings of the field table a summary folds, none read yet, in the table's order.
std::vector<ReadingSummary> folded_readings(bool sums) {
  std::vector<ReadingSummary> out;
  internal::walk_shown(DeviceReadings{},
                       [&](const char*, const Show& show, const internal::ShownValue& v) {
                         if (!folds(show, sums)) return;
                         ReadingSummary r;
                         r.show = show;
                         r.integral = v.integral;
                         out.push_back(r);
                       });
  return out;
}

// Adds one value to `e` as its fold says: sums for the means until finish_readings. Whether the
// record read it.
bool fold_value(ReadingSummary& e, const internal::ShownValue& v) {
  bool any = false;
  if (v.strings) {
    any = true;
    ++e.records;
    for (const auto& value : *v.strings) note(e.seen, value);
  }
  if (!v.number) return any;
  double x = *v.number;
  ++e.records;
  Fold fold = e.show.fold;
  if (fold == Fold::kMean || fold == Fold::kSum) {
    e.value = e.value.value_or(0) + x;
    if (fold == Fold::kMean && (!e.max || x > *e.max)) e.max = x;
  } else if (!e.value || (fold == Fold::kMin ? x < *e.value : x > *e.value)) {
    e.value = x;
  }
  return true;
}

// Adds one record's readings to `into` (as folded_readings(sums) made it). Whether the record
// read any of them.
bool fold_readings(std::vector<ReadingSummary>& into, const DeviceReadings& r, bool sums) {
  std::size_t i = 0;
  bool any = false;
  internal::walk_shown(r, [&](const char*, const Show& show, const internal::ShownValue& v) {
    if (folds(show, sums)) any = fold_value(into[i++], v) || any;
  });
  return any;
}

// The fields of a record kind's table its summary folds (summarized()), none read yet, in the
// table's order: each with its summary's fold as the one the report's forms read. A rank's
// (`ranks`): those its row also shows per rank (per_rank()).
template <class Record>
std::vector<ReadingSummary> summarized_fields(bool ranks);

// The same, made once a kind (each file's part and each rank made them again: a walk of the
// field table each, a thousand of each on a job's rank files).
template <class Record>
const std::vector<ReadingSummary>& summarized_rows(bool ranks) {
  static const std::vector<ReadingSummary> run = summarized_fields<Record>(false);
  static const std::vector<ReadingSummary> rank = summarized_fields<Record>(true);
  return ranks ? rank : run;
}

template <class Record>
std::vector<ReadingSummary> summarized_fields(bool ranks) {
  std::vector<ReadingSummary> out;
  internal::walk_shown(Record{}, [&](const char*, const Show& show, const internal::ShownValue& v) {
    if (show.summary == Fold::kNone || (ranks && !show.ranked)) return;
    ReadingSummary r;
    r.show = show;
    r.show.fold = show.summary;
    r.integral = v.integral;
    out.push_back(r);
  });
  return out;
}

// One record's summarized fields, by key in the table's order: taken in one walk for the run's
// summary and its rank's.
using FieldValues = std::vector<std::pair<const char*, internal::ShownValue>>;

template <class Record>
void summarized_values(const Record& record, FieldValues& out) {
  out.clear();
  internal::walk_shown(record, [&](const char*, const Show& show, const internal::ShownValue& v) {
    if (show.summary != Fold::kNone) out.emplace_back(show.key, v);
  });
}

// Adds a record's summarized fields to `into` (as summarized_fields made it: every one, or a
// rank's few, in the same order).
void fold_fields(std::vector<ReadingSummary>& into, const FieldValues& values) {
  std::size_t i = 0;
  for (const auto& [key, v] : values) {
    // The keys are the table's own literals: the same pointer, told without a compare.
    if (i < into.size() && (key == into[i].show.key || std::strcmp(key, into[i].show.key) == 0)) {
      fold_value(into[i++], v);
    }
  }
}

// The means' sums to means.
void finish_readings(std::vector<ReadingSummary>& readings) {
  for (auto& e : readings) {
    if (e.show.fold == Fold::kMean && e.value && e.records > 0) {
      *e.value /= static_cast<double>(e.records);
    }
  }
}

// Another part's folds after these (the same rows in the same order): sums added, the lowest
// or highest kept, the values seen after these.
void merge_readings(std::vector<ReadingSummary>& into, const std::vector<ReadingSummary>& from) {
  for (std::size_t i = 0; i < into.size() && i < from.size(); ++i) {
    ReadingSummary& a = into[i];
    const ReadingSummary& b = from[i];
    a.records += b.records;
    for (const auto& value : b.seen) note(a.seen, value);
    if (!b.value) continue;
    const Fold fold = a.show.fold;
    if (fold == Fold::kMean || fold == Fold::kSum) {
      a.value = a.value ? *a.value + *b.value : *b.value;
      if (fold == Fold::kMean && b.max && (!a.max || *b.max > *a.max)) a.max = b.max;
    } else if (!a.value || (fold == Fold::kMin ? *b.value < *a.value : *b.value > *a.value)) {
      a.value = b.value;
    }
  }
}

// Whether the record read anything a section's energy summary shows.
bool any_summarized(const DeviceReadings& r) {
  bool any = r.energy_j.has_value();
  internal::walk_shown(r, [&](const char*, const Show& show, const internal::ShownValue& v) {
    any = any || (folds(show, false) && (v.number || v.strings));
  });
  return any;
}

// Adds one record's meter readings; `units` is what its energy is per (1 request, its samples; 0
// for another rank's share of a request already counted).
void add_energy(std::optional<EnergySummary>& into, const DeviceReadings& r, double units) {
  // The first record that read something makes the summary; after it, folding says whether a
  // record read anything (one walk of its readings, not two).
  if (!into) {
    if (!any_summarized(r)) return;
    into.emplace();
    into->readings = folded_readings(false);
  }
  EnergySummary& e = *into;
  if (!fold_readings(e.readings, r, false) && !r.energy_j) return;
  if (r.energy_j) {
    if (units > 0) ++e.records;
    e.energy_j += *r.energy_j;
    // per_unit_j holds the units until finish_energy.
    e.per_unit_j = e.per_unit_j.value_or(0) + units;
  }
  if (r.energy_from) note(e.energy_from, *r.energy_from);
}

void merge_energy(std::optional<EnergySummary>& into, const std::optional<EnergySummary>& from) {
  if (!from) return;
  if (!into) {
    into = from;
    return;
  }
  into->records += from->records;
  into->energy_j += from->energy_j;
  if (from->per_unit_j) into->per_unit_j = into->per_unit_j.value_or(0) + *from->per_unit_j;
  for (const auto& how : from->energy_from) note(into->energy_from, how);
  merge_readings(into->readings, from->readings);
}

// An energy summary's bytes in a partial: present or not, its folds in place.
struct EnergyIO {
  std::optional<EnergySummary>& e;
  template <class IO>
  void fields(IO& io) {
    const bool present = partial_io::walk_present(io, e, [](std::optional<EnergySummary>& made) {
      made.emplace();
      made->readings = folded_readings(false);
    });
    if (!present) return;
    InPlace readings{e->readings};
    io(e->records, e->energy_j, e->per_unit_j, e->energy_from, readings);
  }
};

// The sums to means.
void finish_energy(std::optional<EnergySummary>& e) {
  if (!e) return;
  if (e->per_unit_j) {
    e->per_unit_j =
        *e->per_unit_j > 0 ? std::optional<double>(e->energy_j / *e->per_unit_j) : std::nullopt;
  }
  finish_readings(e->readings);
}

// What a request summary and a training summary finish alike: the last priced record's dtype and
// peak source by name, the energy's and the readings' sums to means.
template <class Summary>
void finish_common(Summary& out, const std::optional<Dtype>& dtype,
                   const std::optional<PeakSource>& peak_source) {
  if (dtype) out.dtype = dtype_name(*dtype);
  if (peak_source) out.peak_source = peak_source_name(*peak_source);
  finish_energy(out.energy);
  finish_readings(out.fields);
}

// A request summary's sums, one request at a time (the requests it is over: see RequestSide).
struct RequestAcc {
  std::int64_t count = 0;
  std::vector<double> e2e;  // each request's, for the percentiles
  double e2e_sum = 0;
  std::optional<double> e2e_max;
  std::optional<double> first_start, last_end;  // wall-clock seconds
  OrderedSums stage_ms, stage_calls;
  WeightedMean tflops, device_tflops, mfu;
  double effective = 0;  // full forwards the transformer calls came to
  // Of the requests that said their denoising steps: the steps, and their transformer calls and
  // time (a step's time is the calls' over the steps, whatever the requests' lengths).
  std::int64_t step_requests = 0, steps = 0, step_calls = 0;
  double step_ms = 0;
  // A request computed by a group of ranks: (its data-parallel index, its number) -> its place
  // in e2e. The run's sums count it once; a rank's, each of its records.
  bool fold_groups = false;
  std::map<std::pair<int, std::int64_t>, std::size_t> group_requests;
  RequestSummary s;  // the fields taken as they come
  // The last priced record's dtype and peak source, named in the summary (a string assigned a
  // record was a tenth of this accumulator's time).
  std::optional<Dtype> dtype;
  std::optional<PeakSource> peak_source;

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
    if (r.readings) add_energy(s.energy, *r.readings, 0.0);
  }

  void add(const RequestRecord& r, const FieldValues& fields) {
    if (fold_groups && r.parallel && r.parallel->group > 1) {
      auto [it, fresh] =
          group_requests.emplace(std::make_pair(r.parallel->dp_rank, r.req), e2e.size());
      if (!fresh) return fold(r, it->second);
    }
    ++count;
    fold_fields(s.fields, fields);
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
      if (is_priced_stage(st.name)) calls += st.count;
    }
    s.transformer_calls += calls;
    if (auto t = denoising_step_time(r)) {
      ++step_requests;
      steps += t->steps;
      step_calls += t->calls;
      step_ms += t->total_ms;
    }
    // A request without skips computed every call whole.
    effective += r.dit && r.dit->effective_fwd ? *r.dit->effective_fwd : static_cast<double>(calls);
    if (r.dit) {
      const DitThroughput& d = *r.dit;
      tflops.add(d.tflops, 1);
      device_tflops.add(d.tflops / std::max(d.devices, 1), 1);
      if (d.mfu) mfu.add(*d.mfu, 1);
      s.params = d.params;
      dtype = d.dtype;
      if (d.peak_tflops) {
        s.peak_tflops = *d.peak_tflops / std::max(d.devices, 1);
        peak_source = d.peak_source;
      }
      if (d.effective_fwd) s.skipped_fwd = s.skipped_fwd.value_or(0) + d.skipped_fwd.value_or(0);
    }
    if (r.readings) {
      keep_max(s.peak_alloc_bytes, r.readings->allocated);
      keep_max(s.peak_reserved_bytes, r.readings->reserved);
      add_energy(s.energy, *r.readings, 1.0);
    }
  }

  // Its bytes in a partial: every request's time (for the percentiles), the sums, and the
  // requests of several ranks by (data-parallel index, number), to fold their later records.
  template <class IO>
  void fields(IO& io) {
    InPlace shown{s.fields};
    EnergyIO energy{s.energy};
    io(count, e2e, e2e_sum, e2e_max, first_start, last_end, stage_ms, stage_calls, tflops,
       device_tflops, mfu, effective, step_requests, steps, step_calls, step_ms, fold_groups,
       group_requests, shown, s.videos, s.layout, s.transformer_calls, s.params, s.peak_tflops,
       s.skipped_fwd, s.peak_alloc_bytes, s.peak_reserved_bytes, energy, s.shared_records, dtype,
       peak_source);
    if ((dtype && static_cast<std::size_t>(*dtype) >= std::size(kDtypes)) ||
        (peak_source && static_cast<int>(*peak_source) > static_cast<int>(PeakSource::kMeasured))) {
      throw std::invalid_argument("a dtype or peak source this vxperf does not know");
    }
    for (const auto& [key, index] : group_requests) {
      if (index >= e2e.size()) throw std::invalid_argument("a request's index out of range");
    }
  }

  // A later file's requests after these: each sum one addition, the price and layout the later
  // ones where they have them. Its groups are not looked up again (no record comes after).
  void merge(const RequestAcc& o) {
    count += o.count;
    merge_readings(s.fields, o.s.fields);
    e2e.insert(e2e.end(), o.e2e.begin(), o.e2e.end());
    e2e_sum += o.e2e_sum;
    if (o.e2e_max && (!e2e_max || *o.e2e_max > *e2e_max)) e2e_max = o.e2e_max;
    if (o.first_start && (!first_start || *o.first_start < *first_start)) {
      first_start = o.first_start;
    }
    if (o.last_end && (!last_end || *o.last_end > *last_end)) last_end = o.last_end;
    stage_ms.merge(o.stage_ms);
    stage_calls.merge(o.stage_calls);
    tflops.merge(o.tflops);
    device_tflops.merge(o.device_tflops);
    mfu.merge(o.mfu);
    effective += o.effective;
    step_requests += o.step_requests;
    steps += o.steps;
    step_calls += o.step_calls;
    step_ms += o.step_ms;
    s.videos += o.s.videos;
    if (o.s.layout) s.layout = o.s.layout;
    s.transformer_calls += o.s.transformer_calls;
    if (o.dtype) {  // a priced request
      s.params = o.s.params;
      dtype = o.dtype;
    }
    if (o.s.peak_tflops) {
      s.peak_tflops = o.s.peak_tflops;
      peak_source = o.peak_source;
    }
    if (o.s.skipped_fwd) s.skipped_fwd = s.skipped_fwd.value_or(0) + *o.s.skipped_fwd;
    if (o.s.peak_alloc_bytes) keep_max(s.peak_alloc_bytes, *o.s.peak_alloc_bytes);
    if (o.s.peak_reserved_bytes) keep_max(s.peak_reserved_bytes, *o.s.peak_reserved_bytes);
    merge_energy(s.energy, o.s.energy);
    s.shared_records += o.s.shared_records;
  }

  RequestSummary summary(std::int64_t warmup) const {
    RequestSummary out = s;
    finish_common(out, dtype, peak_source);
    out.warmup = warmup;
    out.count = count;
    double n = static_cast<double>(std::max<std::int64_t>(count, 1));
    out.e2e_p50_s = internal::unsorted_percentile(e2e, 50);
    out.e2e_p95_s = internal::unsorted_percentile(e2e, 95);
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
    out.device_tflops = device_tflops.get();
    out.mfu = mfu.get();
    if (out.skipped_fwd) out.effective_fwd = effective;
    if (step_requests > 0) {
      const double n_steps = static_cast<double>(steps);
      out.denoising_step =
          DenoisingStepSummary{step_requests, n_steps / static_cast<double>(step_requests),
                               step_ms / n_steps, static_cast<double>(step_calls) / n_steps};
    }
    return out;
  }
};

// Requests of one rank or of the run (`fold_groups`: a request of several ranks once): warmup
// ones are excluded unless all are warmup, so both sets are summed and the choice made at the end.
struct RequestSide {
  RequestAcc measured, warmup;
  // The run's side (`run`) counts a request of several ranks once and folds every summarized
  // field; a rank's, each record and the fields shown per rank.
  explicit RequestSide(bool run) {
    measured.fold_groups = warmup.fold_groups = run;
    measured.s.fields = warmup.s.fields = summarized_rows<RequestRecord>(!run);
  }
  void add(const RequestRecord& r, const FieldValues& fields) {
    (r.warmup ? warmup : measured).add(r, fields);
  }
  RequestAcc& side(bool is_warmup) { return is_warmup ? warmup : measured; }
  void merge(const RequestSide& o) {
    measured.merge(o.measured);
    warmup.merge(o.warmup);
  }
  template <class IO>
  void fields(IO& io) {
    io(measured, warmup);
  }
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
  auto find(int rank) const { return map_.find(rank); }
  std::size_t size() const { return map_.size(); }
  std::map<int, Entry>& entries() {
    last_ = nullptr;
    return map_;
  }
  template <class IO>
  void fields(IO& io) {
    io(map_);
    last_ = nullptr;
  }

 private:
  std::map<int, Entry> map_;
  int last_rank_ = 0;
  Entry* last_ = nullptr;
};

// The entries a rank's sketch of its windows' values keeps (value_sketch.h): exact up to this many
// distinct values, then in as many bins.
constexpr std::uint32_t kRankValues = 128;
// The run's, its ranks' merged when the report is made: exact while its ranks' are and they hold
// up to this many distinct values.
constexpr std::uint32_t kRunValues = 65536;

// The windows' step p50s or p95s, each weighing its steps.
using StepValues = ValueSketch<double, double>;

// A training summary's sums, one window at a time.
struct TrainAcc {
  // A rank's (`rank`) keeps its windows' percentiles and folds the fields shown per rank; the
  // run's, every summarized field.
  explicit TrainAcc(bool rank = false) : keep_values(rank) {
    s.fields = summarized_rows<TrainWindowRecord>(rank);
  }
  std::int64_t windows = 0;
  bool keep_values = true;  // each window's p50 and p95 with its weight (a rank's)
  struct RankSums {
    std::int64_t steps = 0, warmup = 0;
    double samples = 0, wall_s = 0;
    template <class IO>
    void fields(IO& io) {
      io(steps, warmup, samples, wall_s);
    }
  };
  ByRank<RankSums> by_rank;
  StepValues p50s{kRankValues}, p95s{kRankValues};
  OrderedSums phases;
  double phase_steps = 0;
  WeightedMean tflops, device_tflops, hw_tflops, mfu, hfu;
  bool have_latest = false;  // the window the ETA is taken from
  std::int64_t latest_step = 0;
  int latest_rank = 0;
  double latest_eta = 0;
  TrainSummary s;
  std::optional<Dtype> dtype;  // as RequestAcc's
  std::optional<PeakSource> peak_source;

  template <class IO>
  void fields(IO& io) {
    InPlace shown{s.fields};
    EnergyIO energy{s.energy};
    io(windows, keep_values, by_rank, p50s, p95s, phases, phase_steps, tflops, device_tflops,
       hw_tflops, mfu, hfu, have_latest, latest_step, latest_rank, latest_eta, shown, s.layout,
       s.peak_alloc_bytes, s.peak_reserved_bytes, energy, s.dp, s.params, s.trainable,
       s.peak_tflops, s.skipped_fwd, s.effective_fwd, dtype, peak_source);
    if ((dtype && static_cast<std::size_t>(*dtype) >= std::size(kDtypes)) ||
        (peak_source && static_cast<int>(*peak_source) > static_cast<int>(PeakSource::kMeasured))) {
      throw std::invalid_argument("a dtype or peak source this vxperf does not know");
    }
  }

  // A later file's windows after these (the run's sums: each sum one addition; the latest
  // window, layout and price the later ones where it has them). Not the per-rank sums: the
  // ranks' own are the run's (finish).
  void merge(const TrainAcc& o) {
    windows += o.windows;
    merge_readings(s.fields, o.s.fields);
    phases.merge(o.phases);
    phase_steps += o.phase_steps;
    tflops.merge(o.tflops);
    device_tflops.merge(o.device_tflops);
    hw_tflops.merge(o.hw_tflops);
    mfu.merge(o.mfu);
    hfu.merge(o.hfu);
    if (o.have_latest && (!have_latest || o.latest_step > latest_step ||
                          (o.latest_step == latest_step && o.latest_rank < latest_rank))) {
      have_latest = true;
      latest_step = o.latest_step;
      latest_rank = o.latest_rank;
      latest_eta = o.latest_eta;
    }
    if (o.s.layout) s.layout = o.s.layout;
    if (o.s.peak_alloc_bytes) keep_max(s.peak_alloc_bytes, *o.s.peak_alloc_bytes);
    if (o.s.peak_reserved_bytes) keep_max(s.peak_reserved_bytes, *o.s.peak_reserved_bytes);
    merge_energy(s.energy, o.s.energy);
    s.dp = std::max(s.dp, o.s.dp);
    if (o.dtype) {  // a priced window
      s.params = o.s.params;
      s.trainable = o.s.trainable;
      dtype = o.dtype;
    }
    if (o.peak_source) {
      s.peak_tflops = o.s.peak_tflops;
      peak_source = o.peak_source;
    }
    if (o.s.skipped_fwd) s.skipped_fwd = s.skipped_fwd.value_or(0) + *o.s.skipped_fwd;
    if (o.s.effective_fwd) s.effective_fwd = s.effective_fwd.value_or(0) + *o.s.effective_fwd;
  }

  void add(const TrainWindowRecord& w, const FieldValues& fields) {
    ++windows;
    fold_fields(s.fields, fields);
    RankSums& rank = by_rank[w.rank];
    rank.steps += w.steps;
    rank.warmup += w.warmup_excluded;
    auto weight = static_cast<double>(std::max<std::int64_t>(w.steps, 1));
    if (keep_values) {
      p50s.add(w.step_s_p50, weight);
      p95s.add(w.step_s_p95, weight);
    }
    for (const auto& [name, seconds] : w.phases_s) phases.add(name, seconds * weight);
    phase_steps += weight;
    if (w.parallel) s.layout = w.parallel;
    if (w.readings) {
      keep_max(s.peak_alloc_bytes, w.readings->allocated);
      keep_max(s.peak_reserved_bytes, w.readings->reserved);
      // Samples from J per sample (the engine's own division), so the mean is over samples.
      double units = w.energy_j_per_sample && w.readings->energy_j && *w.energy_j_per_sample > 0
                         ? *w.readings->energy_j / *w.energy_j_per_sample
                         : 0.0;
      add_energy(s.energy, *w.readings, units);
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
        device_tflops.add(t.tflops / std::max(t.devices, 1), priced);
        hw_tflops.add(t.hw_tflops, priced);
        if (t.mfu) mfu.add(*t.mfu, priced);
        if (t.hfu) hfu.add(*t.hfu, priced);
        s.params = t.params;
        s.trainable = t.trainable;
        dtype = t.dtype;
        if (t.peak_tflops) {
          s.peak_tflops = *t.peak_tflops / std::max(t.devices, 1);
          peak_source = t.peak_source;
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
  TrainSummary summary(const StepValues& p50_values, const StepValues& p95_values) const {
    TrainSummary out = s;
    finish_common(out, dtype, peak_source);
    out.windows = windows;
    out.ranks = static_cast<int>(std::max<std::size_t>(1, by_rank.size()));
    for (const auto& [rank, sums] : by_rank) {
      out.steps = std::max(out.steps, sums.steps);
      out.warmup_excluded = std::max(out.warmup_excluded, sums.warmup);
    }
    out.step_p50_s = p50_values.weighted_percentile(50);
    out.step_p95_s = p95_values.weighted_percentile(95);
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
    out.device_tflops = device_tflops.get();
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
    // Spans kept apart at most: past them, the two earliest are made one, the gap between them
    // kept as seconds uncovered inside it (records come nearly in the order they ended: one
    // reaching back that far is taken to cover none of those gaps).
    static constexpr std::size_t kMaxSpans = 64;
    struct Span {
      double first, second;
      double gap = 0;  // seconds inside it that no interval covered
      template <class IO>
      void fields(IO& io) {
        io(first, second, gap);
      }
    };
    std::int64_t records = 0;
    double energy_j = 0;
    double union_s = 0;
    std::vector<Span> spans;  // disjoint, in time order
    double loose_s = 0;       // intervals without a settle time (a replay's records): summed
    template <class IO>
    void fields(IO& io) {
      io(records, energy_j, union_s, spans, loose_s);
    }

    void add(double start, double end) {
      // Records come nearly in the order they ended: most land at the back.
      auto first = std::lower_bound(spans.begin(), spans.end(), start,
                                    [](const auto& span, double t) { return span.second < t; });
      auto last = first;
      double gap = 0;
      while (last != spans.end() && last->first <= end) {
        start = std::min(start, last->first);
        end = std::max(end, last->second);
        union_s -= (last->second - last->first) - last->gap;
        gap += last->gap;
        ++last;
      }
      first = spans.erase(first, last);
      spans.insert(first, {start, end, gap});
      union_s += (end - start) - gap;
      if (spans.size() > kMaxSpans) {
        spans[1].gap += spans[0].gap + (spans[1].first - spans[0].second);
        spans[1].first = spans[0].first;
        spans.erase(spans.begin());
      }
    }
  };

  // A rank's devices (the rank's state, not a file's: a device's intervals are one union).
  using Devices = std::map<int, Device>;

  JobEnergy s;
  bool any = false;  // some record carries energy_j

  JobAcc() {
    static const std::vector<ReadingSummary> totals = folded_readings(true);  // made once
    s.totals = totals;
  }

  template <class IO>
  void fields(IO& io) {
    InPlace totals{s.totals};
    io(any, s.energy_j, totals, s.videos, s.request_energy_j, s.samples, s.window_energy_j,
       s.records, s.shared, s.unread, s.unread_first);
  }

  // A later file's records after these.
  void merge(const JobAcc& o) {
    any = any || o.any;
    s.energy_j += o.s.energy_j;
    merge_readings(s.totals, o.s.totals);
    s.videos += o.s.videos;
    s.request_energy_j += o.s.request_energy_j;
    s.samples += o.s.samples;
    s.window_energy_j += o.s.window_energy_j;
    s.records += o.s.records;
    s.shared += o.s.shared;
    s.unread += o.s.unread;
    for (const auto& label : o.s.unread_first) {
      if (s.unread_first.size() < kUnreadListed) s.unread_first.push_back(label);
    }
  }

  // `seconds`: the record's interval; `label()`: it, for the list of records without readings
  // (made only for the few listed: formatting one per record was a tenth of the report's time).
  template <class Label>
  void add(Devices& devices, const std::optional<int>& device,
           const std::optional<DeviceReadings>& r, double ts, double seconds, const Label& label) {
    ++s.records;
    if (r) fold_readings(s.totals, *r, true);
    if (!r || !r->energy_j) {
      ++s.unread;
      if (s.unread_first.size() < kUnreadListed) s.unread_first.push_back(label());
      return;
    }
    any = true;
    if (r->energy_shared) ++s.shared;
    s.energy_j += *r->energy_j;
    Device& d = devices[device.value_or(0)];
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

  // `groups`: the requests of several ranks counted so far, the run's (requests are no file's).
  void request(const RequestRecord& r, Devices& devices,
               std::set<std::pair<int, std::int64_t>>& groups) {
    add(devices, r.device, r.readings, r.ts, r.e2e_s,
        [&] { return strprintf("rank %d req %lld", r.rank, static_cast<long long>(r.req)); });
    if (!r.readings || !r.readings->energy_j) return;
    s.request_energy_j += *r.readings->energy_j;
    // A request of several ranks is counted once, its energy the sum of theirs.
    if (r.parallel && r.parallel->group > 1 && !groups.emplace(r.parallel->dp_rank, r.req).second) {
      return;
    }
    s.videos += r.videos.value_or(1);
  }

  void window(const TrainWindowRecord& w, Devices& devices) {
    double wall = w.throughput ? w.throughput->wall_s : 0.0;
    add(devices, w.device, w.readings, w.ts, wall, [&] {
      return strprintf("rank %d steps %lld-%lld", w.rank, static_cast<long long>(w.step_first),
                       static_cast<long long>(w.step_last));
    });
    if (!w.readings || !w.readings->energy_j) return;
    s.window_energy_j += *w.readings->energy_j;
    if (w.energy_j_per_sample && *w.energy_j_per_sample > 0) {
      // The ranks of one context- or tensor-parallel group took the same samples.
      int sharing = w.parallel ? std::max(w.parallel->cp, 1) * std::max(w.parallel->tp, 1) : 1;
      s.samples += *w.readings->energy_j / *w.energy_j_per_sample / sharing;
    }
  }

  // `ranks`: each rank's devices, by rank.
  template <class Ranks>
  std::optional<JobEnergy> summary(const Ranks& ranks) const {
    if (!any) return std::nullopt;
    JobEnergy out = s;
    finish_readings(out.totals);
    if (out.videos > 0) out.j_per_video = out.request_energy_j / static_cast<double>(out.videos);
    if (out.samples > 0) out.j_per_sample = out.window_energy_j / out.samples;
    for (const auto& [rank, r] : ranks) {
      for (const auto& [device, d] : r.devices) {
        DeviceEnergy e;
        e.rank = rank;
        e.device = device;
        e.records = d.records;
        e.energy_j = d.energy_j;
        e.seconds = d.union_s + d.loose_s;
        if (e.seconds > 0) e.power_w_mean = e.energy_j / e.seconds;
        out.devices.push_back(e);
      }
    }
    return out;
  }
};

}  // namespace

const ReadingSummary* find_reading(const std::vector<ReadingSummary>& readings,
                                   std::string_view key) {
  for (const auto& r : readings) {
    if (key == r.show.key) return &r;
  }
  return nullptr;
}

struct ReportBuilder::State {
  // What one file gave the job's sums (its records in order, after the earlier files'): the
  // report adds the files' in order (finish), one run and a merge of partials alike, so that
  // each sum over ranks is the same additions whichever made it.
  struct FilePart {
    std::string name;
    bool file = true;  // false: records not from a file (build_report, before any file)
    std::optional<std::string> repeats;  // not read: the earlier file it repeats
    std::int64_t records = 0;
    int world_size = 0;                 // the largest its windows said
    std::vector<std::string> warnings;  // in the order said
    std::vector<std::string> torn;
    TrainAcc training;
    JobAcc job;
    // A partial's: the file's size and content hash (the reader's), to find a file another
    // partial holds too; none for a stream.
    std::optional<std::pair<std::int64_t, std::uint64_t>> bytes;
    // Its requests, the run's way (a request of several ranks once: a later file's record of
    // it is folded here, where the request was first counted).
    std::optional<RequestSide> requests;
    template <class IO>
    void fields(IO& io) {
      io(name, file, repeats, records, world_size, warnings, torn, training, job, bytes);
      optional_side(io, requests, true);
    }
  };
  // A request of several ranks: (warmup, dp_rank, req) -> the part that counted it.
  std::map<std::tuple<bool, int, std::int64_t>, std::size_t> group_parts;
  std::set<std::pair<int, std::int64_t>> group_requests;  // (dp_rank, req) of several ranks
  struct Rank {
    std::optional<RequestSide> requests;
    std::optional<TrainAcc> training;
    AttemptLedgers attempts;  // its ledger, across a restarted job's attempts
    // Its windows' step p50s (for their median; their best) and its latest one's, for the scores;
    // and each phase's mean per step over its windows (their median; their best above zero,
    // whether any was, the latest window's), for the scores phase by phase. Windows of steps only.
    ValueSketch<double, std::uint32_t> window_p50s{kRankValues};
    double best_p50 = 0;
    double latest_p50 = 0;
    double latest_ts = -1;
    std::vector<ValueSketch<float, std::uint32_t>> phase_values;  // kPhaseCount once a window came
    WindowPhases::Phases phase_best{}, phase_latest{};
    std::array<bool, kPhaseCount> phase_spent{};
    // The steps its windows began at: one seen twice means two runs (or two attempts of one,
    // each counting from 0) in the records, said once per rank.
    // Keyed by the attempt the records say (its run id hashed), so that a restarted job's attempts,
    // which run some steps again, are not mistaken for two runs.
    FirstSteps firsts;
    bool said_twice = false;
    // Per window of steps (its attempt, step_first, steps), or band of them: its mean seconds
    // per step by phase, for what stragglers cost (the job's: the ranks' merged in rank order).
    WindowPhases by_window;
    bool grown = false;       // windows added since the file before (in State::grown)
    JobAcc::Devices devices;  // its devices' energy and intervals
    // Its bytes in a partial.
    template <class IO>
    void fields(IO& io) {
      optional_side(io, requests, false);
      if (partial_io::walk_present(io, training, [](auto& made) { made.emplace(true); })) {
        io(*training);
      }
      io(attempts, window_p50s, best_p50, latest_p50, latest_ts, phase_values, phase_best,
         phase_latest, phase_spent, firsts, said_twice, by_window, devices);
      if (!phase_values.empty() && phase_values.size() != static_cast<std::size_t>(kPhaseCount)) {
        throw std::invalid_argument("a rank's phases out of shape");
      }
    }
  };
  ByRank<Rank> ranks;
  // The ranks whose windows grew since the last file began: their room given back as the next
  // begins (a quarter of each rank's windows was room: 5 MB of 1024 ranks').
  std::vector<int> grown;
  // In file order; a deque, as a job's thousand rank files each add one (a vector moved them all
  // as it grew).
  std::deque<FilePart> parts;
  FieldValues fields;  // the record's at hand (its buffers kept from one record to the next)
  // The first line skipped as no record: what the reader throws when no file gave a record.
  std::optional<std::tuple<std::string, int, std::string>> first_bad;
  int threads = 0;  // the report's end's, as ReadOptions::threads (set_threads)
  // A merge's: the partial each rank came from, and each request of several ranks.
  std::map<int, std::string> rank_from;
  std::map<std::pair<int, std::int64_t>, std::string> request_from;

  // A side of requests that may be absent (`run`: the run's kind, else a rank's).
  template <class IO>
  static void optional_side(IO& io, std::optional<RequestSide>& side, bool run) {
    if (!partial_io::walk_present(io, side, [run](auto& made) { made.emplace(run); })) return;
    io(*side);
    if (side->measured.fold_groups != run || side->warmup.fold_groups != run) {
      throw std::invalid_argument("requests of a rank where the run's were due, or the reverse");
    }
  }

  // The room past their windows of the ranks whose windows grew, given back.
  void give_back_room() {
    for (int r : grown) {
      Rank& rank = ranks[r];
      rank.by_window.shrink_to_fit();
      rank.grown = false;
    }
    grown.clear();
  }

  // The file being read (a part of no file before the first).
  FilePart& part() {
    if (parts.empty()) {
      parts.emplace_back();
      parts.back().file = false;
    }
    return parts.back();
  }

  // A part whose windows are so far all one rank's, of a rank with none before it (a job's rank
  // file): its training sums are that rank's, the same additions in the same order, so they are
  // made once (the rank's) and copied when the part is read or the run breaks (a window of
  // another rank or file). Two sums a window, the file's and the rank's, were 8% of a report.
  struct Mirror {
    std::size_t part;
    int rank;
  };
  std::optional<Mirror> mirror;

  // The part's training sums from its rank's: its own folds of the summarized fields (the
  // run's, where the rank's are those shown per rank) and its own (empty) step percentiles.
  static TrainAcc mirrored(const TrainAcc& own, const TrainAcc& rank) {
    TrainAcc out = rank;
    out.keep_values = own.keep_values;
    // Moved in from copies, so that the room of the rank's is given back, not kept.
    out.p50s = StepValues(own.p50s);
    out.p95s = StepValues(own.p95s);
    out.s.fields = std::vector<ReadingSummary>(own.s.fields);
    return out;
  }
  // The part's training sums as they stand (a mirrored part's made from its rank's).
  TrainAcc part_training(std::size_t i) const {
    if (!mirror || mirror->part != i) return parts[i].training;
    return mirrored(parts[i].training, *ranks.find(mirror->rank)->second.training);
  }
  // A mirrored part's sums made its own, before its rank's change or the parts move.
  void settle_mirror() {
    if (!mirror) return;
    TrainAcc& own = parts[mirror->part].training;
    own = mirrored(own, *ranks.find(mirror->rank)->second.training);
    mirror.reset();
  }
};

ReportBuilder::ReportBuilder() : state_(std::make_unique<State>()) {}
ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::request(const RequestRecord& record) {
  State::FilePart& part = state_->part();
  ++part.records;
  auto& rank = state_->ranks[record.rank];
  summarized_values(record, state_->fields);
  const std::size_t here = state_->parts.size() - 1;
  if (!part.requests) part.requests.emplace(true);
  bool folded = false;
  if (record.parallel && record.parallel->group > 1) {
    // A request of several ranks counted in an earlier file: folded into that file's part.
    auto [it, fresh] = state_->group_parts.emplace(
        std::make_tuple(record.warmup, record.parallel->dp_rank, record.req), here);
    if (!fresh && it->second != here) {
      RequestAcc& acc = state_->parts[it->second].requests->side(record.warmup);
      acc.fold(record, acc.group_requests.at({record.parallel->dp_rank, record.req}));
      folded = true;
    }
  }
  if (!folded) part.requests->add(record, state_->fields);
  part.job.request(record, rank.devices, state_->group_requests);
  if (!rank.requests) rank.requests.emplace(false);
  rank.requests->add(record, state_->fields);
}

void ReportBuilder::window(const TrainWindowRecord& record) {
  State::FilePart& part = state_->part();
  ++part.records;
  part.world_size = std::max(part.world_size, record.world_size);
  State& st = *state_;
  auto& rank = st.ranks[record.rank];
  summarized_values(record, st.fields);
  const std::size_t here = st.parts.size() - 1;
  if (st.mirror && (st.mirror->part != here || st.mirror->rank != record.rank)) {
    st.settle_mirror();
  }
  if (!st.mirror && part.training.windows == 0 && !rank.training) {
    st.mirror = State::Mirror{here, record.rank};
  }
  if (st.mirror) {
    fold_fields(part.training.s.fields, st.fields);  // the rest is the rank's (below)
  } else {
    part.training.add(record, st.fields);
  }
  part.job.window(record, rank.devices);
  if (!rank.training) rank.training.emplace(true);
  rank.training->add(record, state_->fields);
  rank.attempts.add(record);
  const std::size_t run = std::hash<std::string>{}(record.run_id.value_or(""));
  const std::int64_t attempt = record.attempt.value_or(-1);
  if (rank.firsts.seen_again(run, attempt, record.step_first) && !rank.said_twice) {
    rank.said_twice = true;
    part.warnings.push_back(strprintf(
        "rank %d has two windows from step %lld: records of two runs, or of a restarted run's "
        "attempts, read together (its ledger and scores are its latest window's)",
        record.rank, static_cast<long long>(record.step_first)));
  }
  if (record.steps > 0) {
    if (rank.window_p50s.empty() || record.step_s_p50 < rank.best_p50) {
      rank.best_p50 = record.step_s_p50;
    }
    rank.window_p50s.add(record.step_s_p50, 1);
    WindowPhases::Phases phases{};
    for (const auto& [name, seconds] : record.phases_s) {
      if (auto phase = phase_from_name(name)) {
        phases[static_cast<std::size_t>(*phase)] = static_cast<float>(seconds);
      }
    }
    if (rank.phase_values.empty()) {
      rank.phase_values.assign(kPhaseCount, ValueSketch<float, std::uint32_t>(kRankValues));
    }
    for (std::size_t p = 0; p < phases.size(); ++p) {
      const float seconds = phases[p];
      rank.phase_values[p].add(seconds, 1);
      if (seconds > 0 && (rank.phase_best[p] <= 0 || seconds < rank.phase_best[p])) {
        rank.phase_best[p] = seconds;
      }
      rank.phase_spent[p] = rank.phase_spent[p] || seconds > 0;
    }
    if (record.ts >= rank.latest_ts) {
      rank.latest_ts = record.ts;
      rank.latest_p50 = record.step_s_p50;
      rank.phase_latest = phases;
    }
    rank.by_window.add(run, attempt, record.step_first, record.steps, record.rank, phases);
    if (!rank.grown) {
      rank.grown = true;
      state_->grown.push_back(record.rank);
    }
  }
}

void ReportBuilder::end(const TrainEndRecord& record) {
  ++state_->part().records;
  state_->ranks[record.rank].attempts.add(record);
}

namespace {

// NVIDIA Resiliency's scores phase by phase (RankSummary::phase_scores): each rank's median over
// its windows of each phase's mean per step against the fastest rank's, and its latest window's
// against its best; then the lowest of them that costs time (Report::low_score).
template <class Ranks>
void phase_scores(const Ranks& st_ranks, Report& report) {
  struct Seen {
    RankSummary* summary;
    std::array<double, kPhaseCount> median{}, best{}, latest{};
    std::array<bool, kPhaseCount> spent{};
  };
  std::vector<Seen> seen;
  for (auto& rs : report.ranks) {
    auto it = st_ranks.find(rs.rank);
    if (it == st_ranks.end() || it->second.phase_values.empty()) continue;
    const auto& r = it->second;
    Seen s{&rs, {}, {}, {}, {}};
    for (std::size_t p = 0; p < static_cast<std::size_t>(kPhaseCount); ++p) {
      s.median[p] = r.phase_values[p].median();
      s.best[p] = r.phase_best[p];
      s.spent[p] = r.phase_spent[p];
      s.latest[p] = r.phase_latest[p];
    }
    seen.push_back(s);
  }
  std::optional<LowScore> low;
  auto consider = [&](const LowScore& candidate) {
    if (candidate.score < kLowScore && (!low || candidate.score < low->score)) low = candidate;
  };
  for (std::size_t p = 0; p < static_cast<std::size_t>(kPhaseCount); ++p) {
    std::vector<double> medians;
    double fastest = 0;
    for (const Seen& s : seen) {
      medians.push_back(s.median[p]);
      if (s.median[p] > 0 && (fastest <= 0 || s.median[p] < fastest)) fastest = s.median[p];
    }
    const std::vector<double> relative = relative_scores(medians);
    const char* name = phase_name(static_cast<Phase>(p));
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const Seen& s = seen[i];
      if (!s.spent[p]) continue;
      PhaseScore score;
      score.phase = name;
      score.relative = relative[i];
      score.individual = individual_score(s.best[p], s.latest[p]);
      s.summary->phase_scores.push_back(score);
      // Named only where it costs a share of a step: against the ranks' median step (relative,
      // of several ranks), against the rank's own step (individual).
      const int rank = s.summary->rank;
      if (seen.size() >= 2 && report.rank_median_s &&
          s.median[p] - fastest > kStragglerMargin * *report.rank_median_s) {
        consider({rank, name, "relative", score.relative, s.median[p], fastest});
      }
      if (s.summary->step_p50_s &&
          s.latest[p] - s.best[p] > kStragglerMargin * *s.summary->step_p50_s) {
        consider({rank, name, "individual", score.individual, s.latest[p], s.best[p]});
      }
    }
  }
  report.low_score = low;
}

// The job's ledger: the ranks' added up in rank-seconds (JobLedger), with the job's span.
template <class Ranks>
std::optional<JobLedger> job_ledger(const Ranks& st_ranks, const Report& report) {
  JobLedger job;
  double weighted = 0, longest = 0;
  std::optional<std::pair<double, double>> span;
  bool timed = true;
  for (const auto& rs : report.ranks) {
    if (!rs.ledger) continue;
    const Ledger& l = *rs.ledger;
    ++job.ranks;
    add_parts(job.ledger, l);
    weighted += l.ideal_step_s * static_cast<double>(l.steps);
    longest = std::max(longest, l.wall_s);
    job.ledger.attempts = std::max(job.ledger.attempts, l.attempts);
    job.ledger.recovery_s += l.recovery_s;
    auto it = st_ranks.find(rs.rank);
    auto own = it != st_ranks.end() ? it->second.attempts.span() : std::nullopt;
    if (!own) {
      timed = false;
    } else if (!span) {
      span = own;
    } else {
      span->first = std::min(span->first, own->first);
      span->second = std::max(span->second, own->second);
    }
  }
  if (job.ranks == 0) return std::nullopt;
  Ledger& l = job.ledger;
  l.ideal_step_s = l.steps > 0 ? weighted / static_cast<double>(l.steps) : 0.0;
  l.goodput = l.wall_s > 0 ? l.productive_s / l.wall_s : 0.0;
  // The span comes from times since the epoch (a rank's start is its record's time less its
  // wall), rounded to about 2e-7 s there: never shorter than the longest rank's own wall, which
  // it holds, whatever the rounding.
  if (timed && span) job.span_s = std::max(span->second - span->first, longest);
  return job;
}

// What stragglers cost (RankSummary::lost_s): per window the ranks share (or band of windows:
// WindowPhases), the rank most above the per-phase medians is charged its seconds above them,
// times the window's steps.
// The seconds each rank is charged, by phase.
using LostSeconds = std::map<int, std::array<double, kPhaseCount>>;

// `threads`: as ReadOptions::threads (1: the calling thread alone).
LostSeconds straggler_lost(const std::vector<const WindowPhases*>& rank_windows, int threads) {
  // What each window charges its slowest rank, the windows walked in parts on threads of their
  // own; added up here in key order (the sums one walk makes).
  struct Charge {
    int rank = 0;
    std::array<double, kPhaseCount> seconds{};
  };
  std::size_t entries = 0;
  for (const WindowPhases* w : rank_windows) entries += w->bytes();
  // A thread a core (or as many as asked), at most 4, for a job of many ranks' windows (a few
  // ranks': one).
  const unsigned most = threads > 0 ? static_cast<unsigned>(threads) : 4u;
  const std::size_t parts = entries < (std::size_t{1} << 20)
                                ? 1
                                : std::clamp(std::thread::hardware_concurrency(), 1u, most);
  std::vector<std::vector<Charge>> charges(parts);
  std::vector<std::vector<double>> buffers(parts);
  WindowPhases::for_each_merged(
      rank_windows,
      [&](std::size_t part, const WindowPhases::Key& span,
          const std::vector<WindowPhases::Entry>& entries) {
        std::vector<double>& values = buffers[part];
        if (entries.size() < 2) return;
        std::array<double, kPhaseCount> medians{};
        for (int p = 0; p < kPhaseCount; ++p) {
          values.clear();
          bool spent = false;
          for (const auto& e : entries) {
            values.push_back(e.phases[static_cast<std::size_t>(p)]);
            spent = spent || values.back() != 0;
          }
          // A phase no rank spent (a record's phases are a few of the table's): 0, without a copy
          // and a selection of a thousand zeros.
          medians[static_cast<std::size_t>(p)] = spent ? internal::median_in_place(values) : 0.0;
        }
        const WindowPhases::Entry* slowest = nullptr;
        double most = 0;
        for (const auto& e : entries) {
          double excess = 0;
          for (std::size_t p = 0; p < medians.size(); ++p) {
            excess += std::max(0.0, e.phases[p] - medians[p]);
          }
          if (excess > most) {
            most = excess;
            slowest = &e;
          }
        }
        if (slowest == nullptr) return;
        Charge& charge = charges[part].emplace_back();
        charge.rank = slowest->rank;
        const double steps = WindowPhases::steps_of(span, *slowest);
        for (std::size_t p = 0; p < medians.size(); ++p) {
          charge.seconds[p] = std::max(0.0, slowest->phases[p] - medians[p]) * steps;
        }
      },
      parts);
  LostSeconds lost;
  for (const std::vector<Charge>& part : charges) {
    for (const Charge& charge : part) {
      auto& charged = lost.try_emplace(charge.rank).first->second;
      for (std::size_t p = 0; p < charged.size(); ++p) charged[p] += charge.seconds[p];
    }
  }
  return lost;
}

void straggler_costs(const LostSeconds& lost, std::vector<RankSummary>& ranks) {
  std::map<int, RankSummary*> by_rank;
  for (auto& rs : ranks) by_rank[rs.rank] = &rs;
  for (const auto& [rank, phases] : lost) {
    auto it = by_rank.find(rank);
    if (it == by_rank.end()) continue;
    double total = 0;
    for (const PhaseInfo& info : kPhases) {
      double seconds = phases[static_cast<std::size_t>(info.phase)];
      if (seconds <= 0) continue;
      total += seconds;
      it->second->lost_phases_s.emplace_back(info.name, seconds);
    }
    it->second->lost_s = total;
  }
}

}  // namespace

void ReportBuilder::warning(const std::string& text) { state_->part().warnings.push_back(text); }
void ReportBuilder::begin_file(const std::string& name) {
  state_->give_back_room();
  state_->parts.emplace_back();
  state_->parts.back().name = name;
}
void ReportBuilder::end_file(const std::string&) { state_->give_back_room(); }
void ReportBuilder::set_threads(int threads) { state_->threads = threads; }

std::unique_ptr<RecordHandler> ReportBuilder::file_handler() {
  return std::make_unique<ReportBuilder>();
}

bool ReportBuilder::join_file(RecordHandler& file) {
  auto* from = dynamic_cast<ReportBuilder*>(&file);
  if (from == nullptr) return false;
  State& st = *state_;
  State& o = *from->state_;
  st.settle_mirror();
  o.settle_mirror();
  // A rank's state, and a request of several ranks, are one reading's over every file: a file
  // that has either from an earlier one is read again into this builder.
  for (const auto& [rank, r] : o.ranks) {
    if (st.ranks.find(rank) != st.ranks.end()) return false;
  }
  for (const auto& [key, part] : o.group_parts) {
    if (st.group_parts.count(key) != 0) return false;
  }
  for (const auto& key : o.group_requests) {
    if (st.group_requests.count(key) != 0) return false;
  }
  const std::size_t base = st.parts.size();
  for (const auto& [key, part] : o.group_parts) st.group_parts.emplace(key, base + part);
  st.group_requests.insert(o.group_requests.begin(), o.group_requests.end());
  auto& ranks = st.ranks.entries();
  for (auto& [rank, r] : o.ranks.entries()) ranks.emplace_hint(ranks.end(), rank, std::move(r));
  for (State::FilePart& part : o.parts) st.parts.push_back(std::move(part));
  if (!st.first_bad) st.first_bad = std::move(o.first_bad);
  from->state_ = std::make_unique<State>();
  return true;
}
void ReportBuilder::repeated_file(const std::string& name, const std::string& earlier) {
  // Said just before this by the reader, in the file before's part: its own part's.
  State::FilePart& before = state_->part();
  State::FilePart part;
  part.name = name;
  part.repeats = earlier;
  if (!before.warnings.empty() && before.warnings.back() == repeated_file_warning(name, earlier)) {
    part.warnings.push_back(std::move(before.warnings.back()));
    before.warnings.pop_back();
  }
  state_->parts.push_back(std::move(part));
}
void ReportBuilder::torn_line(const std::string& name) { state_->part().torn.push_back(name); }
void ReportBuilder::bad_line(const std::string& name, int line, const std::string& message) {
  if (!state_->first_bad) state_->first_bad.emplace(name, line, message);
}

namespace {

// "3, 7-9, 12": ranks in runs.
std::string rank_runs(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace

Report ReportBuilder::finish(std::vector<std::string> sources) const {
  const State& st = *state_;
  Report report;
  report.sources = std::move(sources);
  // The files' parts in order: their warnings, the job's sums, what makes it partial.
  TrainAcc training;
  JobAcc job;
  std::size_t files = 0;
  int world_size = 0;
  Partial partial;
  for (std::size_t i = 0; i < st.parts.size(); ++i) {
    const State::FilePart& part = st.parts[i];
    report.warnings.insert(report.warnings.end(), part.warnings.begin(), part.warnings.end());
    if (i == 0) {
      training = st.part_training(i);
      job = part.job;
    } else {
      if (st.mirror && st.mirror->part == i) {
        training.merge(st.part_training(i));
      } else {
        training.merge(part.training);
      }
      job.merge(part.job);
    }
    files += part.file ? 1 : 0;
    world_size = std::max(world_size, part.world_size);
    partial.torn_files.insert(partial.torn_files.end(), part.torn.begin(), part.torn.end());
    if (part.repeats) partial.repeated_files.emplace_back(part.name, *part.repeats);
  }
  // Each rank's sums are its own accumulator's (the same additions, in its records' order).
  for (const auto& [rank, r] : st.ranks) {
    if (r.training) {
      training.by_rank.entries()[rank] = r.training->by_rank.find(rank)->second;
    }
  }
  // The run's summaries select their percentiles over every record: on a thread of their own
  // while this one summarizes the ranks (the parse is over: the other cores are idle, and this
  // was most of what came after it). Both only read the state. No thread to be had: here.
  auto run_summaries = [&st, &report, &training] {
    // The run's measured requests are the non-warmup ones of every rank unless all are warmup;
    // the files' added in order.
    std::optional<RequestSide> requests;
    for (const State::FilePart& part : st.parts) {
      if (!part.requests) continue;
      if (!requests) {
        requests = part.requests;
      } else {
        requests->merge(*part.requests);
      }
    }
    if (requests && requests->total() > 0) report.requests = requests->summary();
    if (training.windows > 0) {
      StepValues p50s(kRunValues), p95s(kRunValues);
      for (const auto& [rank, r] : st.ranks) {
        if (!r.training) continue;
        p50s.merge(r.training->p50s);
        p95s.merge(r.training->p95s);
      }
      report.training = training.summary(p50s, p95s);
    }
  };
  // --threads 1: every part of it on this thread, in the same order.
  const bool alone = st.threads == 1;
  std::future<void> run;
  try {
    if (!alone) run = std::async(std::launch::async, run_summaries);
  } catch (const std::system_error&) {
  }
  if (!run.valid()) run_summaries();
  // What the stragglers cost, from the job's windows (the ranks' in rank order): a walk of every
  // rank's windows and a median per window and phase, on a thread of its own beside the rest.
  std::vector<const WindowPhases*> rank_windows;
  for (const auto& [rank, r] : st.ranks) rank_windows.push_back(&r.by_window);
  std::future<LostSeconds> lost;
  try {
    if (!alone) {
      lost = std::async(std::launch::async, straggler_lost, std::cref(rank_windows), st.threads);
    }
  } catch (const std::system_error&) {
  }
  std::vector<RankSummary> ranks;
  std::int64_t run_again = 0;  // the most steps any rank ran again after a restart

  for (const auto& [rank, r] : st.ranks) {
    RankSummary rs;
    rs.rank = rank;
    std::vector<ReadingSummary> request_fields;  // after the windows'
    if (r.requests) {
      RequestSummary q = r.requests->summary();
      request_fields = std::move(q.fields);
      rs.requests = q.count;
      rs.e2e_p50_s = q.e2e_p50_s;
      if (q.peak_alloc_bytes) keep_max(rs.peak_alloc_bytes, *q.peak_alloc_bytes);
      rs.tflops = q.tflops;
      rs.device_tflops = q.device_tflops;
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
      rs.device_tflops = t.device_tflops;
      rs.mfu = t.mfu;
      if (t.peak_alloc_bytes) keep_max(rs.peak_alloc_bytes, *t.peak_alloc_bytes);
      rs.phase_s = t.phase_s;
      rs.fields = t.fields;
    }
    // Its windows' ledgers, through its final record where it wrote one.
    rs.ledger = r.attempts.ledger(rank, &report.warnings);
    if (rs.ledger && rs.ledger->attempts > 1) {
      run_again = std::max(run_again, r.attempts.steps_run() - rs.ledger->steps);
    }
    rs.fields.insert(rs.fields.end(), request_fields.begin(), request_fields.end());
    ranks.push_back(rs);
  }
  if (run.valid()) run.get();
  if (report.training && run_again > 0) {
    report.training->steps_run_again = run_again;
    report.training->steps -= std::min(report.training->steps, run_again);
  }
  report.ranks = std::move(ranks);

  report.energy = job.summary(st.ranks);

  // A job read from several files: its ranks that none holds, its files torn or read twice.
  partial.world_size = world_size;
  if (files > 1) {
    for (int r = 0; r < world_size; ++r) {
      auto it = st.ranks.find(r);
      if (it == st.ranks.end() || !it->second.training) partial.missing_ranks.push_back(r);
    }
  }
  if (!partial.missing_ranks.empty()) {
    const int present = world_size - static_cast<int>(partial.missing_ranks.size());
    report.warnings.push_back(strprintf(
        "no training records of rank%s %s in the %zu files given (world size %d): the job's "
        "numbers are those of its other %d rank%s",
        partial.missing_ranks.size() > 1 ? "s" : "", rank_runs(partial.missing_ranks).c_str(),
        files, world_size, present, present == 1 ? "" : "s"));
  }
  if (!partial.missing_ranks.empty() || !partial.torn_files.empty() ||
      !partial.repeated_files.empty()) {
    report.partial = std::move(partial);
  }

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
  // NVIDIA Resiliency's scores from each rank's windows, and what the stragglers cost.
  std::optional<double> fastest;
  std::map<int, double> medians;
  for (const auto& [rank, r] : st.ranks) {
    if (r.window_p50s.empty()) continue;
    medians[rank] = r.window_p50s.median();
    if (!fastest || medians[rank] < *fastest) fastest = medians[rank];
  }
  for (auto& rs : report.ranks) {
    auto it = st.ranks.find(rs.rank);
    if (it == st.ranks.end() || it->second.window_p50s.empty()) continue;
    const auto& r = it->second;
    if (medians[rs.rank] > 0) rs.relative_score = *fastest / medians[rs.rank];
    if (r.latest_p50 > 0) rs.individual_score = r.best_p50 / r.latest_p50;
  }
  // The scores while the stragglers' walk ends (they read none of what it gives).
  phase_scores(st.ranks, report);
  straggler_costs(lost.valid() ? lost.get() : straggler_lost(rank_windows, st.threads),
                  report.ranks);
  report.job_ledger = job_ledger(st.ranks, report);
  return report;
}

Report build_report(const RecordSet& records, std::vector<std::string> sources) {
  ReportBuilder builder;
  for (const auto& w : records.warnings) builder.warning(w);
  for (const auto& r : records.requests) builder.request(r);
  for (const auto& w : records.windows) builder.window(w);
  for (const auto& e : records.ends) builder.end(e);
  return builder.finish(std::move(sources));
}

}  // namespace vxperf::analysis

namespace vxperf::analysis {
namespace {

// The partial's first line: the command and the version of the bytes after it, which a change
// to any state a partial holds raises.
constexpr int kPartialVersion = 2;
constexpr char kPartialMagic[] = "VXPERF-PARTIAL ";
constexpr char kPartialCommand[] = "report";

std::uint64_t checksum(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// The page's points in a partial: each window's numbers and its phases up to the names there are
// (most of the 16 a point has room for are none).
struct PagePoints {
  std::vector<ChartData::Impl::Window>& windows;
  std::size_t phases;
  template <class IO>
  void fields(IO& io) {
    std::size_t n = windows.size();
    io(n);
    if constexpr (std::is_same_v<IO, partial_io::Reader>) io.check_count(n, 40);
    windows.resize(n);
    for (ChartData::Impl::Window& w : windows) {
      io(w.rank, w.step_first, w.step_last, w.p50, w.p95, w.mfu, w.readings, w.alloc_bytes,
         w.reserved_bytes);
      for (std::size_t k = 0; k < phases; ++k) io(w.phase_s[k]);
    }
  }
};

// A regular file's size and content hash; none for a stream or what cannot be read.
std::optional<std::pair<std::int64_t, std::uint64_t>> file_bytes(const std::string& path) {
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  auto hash = content_hash(path);
  if (!hash) return std::nullopt;
  return std::make_pair(static_cast<std::int64_t>(st.st_size), *hash);
}

}  // namespace

std::string ReportBuilder::partial(const ChartData& charts,
                                   const std::vector<std::string>& sources) const {
  const State& st = *state_;
  std::vector<State::FilePart> parts(st.parts.begin(), st.parts.end());
  if (st.mirror) parts[st.mirror->part].training = st.part_training(st.mirror->part);
  for (State::FilePart& part : parts) {
    if (part.file) part.bytes = file_bytes(part.name == "<stdin>" ? "-" : part.name);
  }
  auto& ranks = const_cast<ByRank<State::Rank>&>(st.ranks);  // only read
  const ChartData::Impl& c = charts.impl();
  std::vector<std::string> source_list = sources;
  std::vector<std::string> phase_names = c.phase_names;
  std::vector<ChartData::Impl::Window> windows = c.windows;
  PagePoints points{windows, std::min(phase_names.size(), ChartData::Impl::kMaxPhases)};
  std::optional<std::tuple<std::string, int, std::string>> first_bad = st.first_bad;
  std::vector<std::string> stage_names = c.stage_names;
  std::vector<ChartData::Impl::Request> requests = c.requests;
  std::deque<ChartData::Impl::Bar> bars = c.last_bars;
  partial_io::Writer out;
  out(source_list, parts, ranks, first_bad, phase_names, points, stage_names, requests, bars);
  std::string bytes = kPartialMagic;
  bytes += kPartialCommand;
  bytes += " " + std::to_string(kPartialVersion) + "\n";
  const std::uint64_t sum = checksum(out.bytes());
  bytes += out.bytes();
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  return bytes;
}

namespace {

// The body of a report partial after its first line, checked; else why it is none.
std::string_view partial_body(const std::string& bytes) {
  if (bytes.rfind(kPartialMagic, 0) != 0) {
    // The other command's partials are JSON.
    internal::Json j = internal::Json::parse(bytes, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("vxperf_partial")) {
      const auto command = j.find("command");
      throw std::invalid_argument("a partial of `vxperf " +
                                  (command != j.end() && command->is_string()
                                       ? command->get<std::string>()
                                       : std::string("?")) +
                                  "`, not of `vxperf report`");
    }
    throw std::invalid_argument("not a vxperf partial (it does not begin \"" +
                                std::string(kPartialMagic) + "\")");
  }
  const std::size_t eol = bytes.find('\n');
  const std::size_t magic = std::strlen(kPartialMagic);
  const std::string head =
      bytes.substr(magic, eol == std::string::npos ? 40 : std::min<std::size_t>(eol - magic, 40));
  const std::size_t space = head.find(' ');
  const std::string command = head.substr(0, space);
  if (command != kPartialCommand) {
    throw std::invalid_argument("a partial of `vxperf " + command + "`, not of `vxperf report`");
  }
  const std::string version = space == std::string::npos ? "" : head.substr(space + 1);
  if (eol == std::string::npos || version != std::to_string(kPartialVersion)) {
    throw std::invalid_argument("a partial of version " + (version.empty() ? "?" : version) +
                                "; this vxperf reads version " + std::to_string(kPartialVersion));
  }
  std::string_view body(bytes);
  body.remove_prefix(eol + 1);
  std::uint64_t sum = 0;
  if (body.size() < sizeof sum) throw std::invalid_argument("corrupt: cut short");
  std::memcpy(&sum, body.data() + body.size() - sizeof sum, sizeof sum);
  body.remove_suffix(sizeof sum);
  if (checksum(body) != sum) {
    throw std::invalid_argument("corrupt: its checksum does not match (cut short, or changed)");
  }
  return body;
}

}  // namespace

void ReportBuilder::add_partial(const std::string& bytes, const std::string& name,
                                ChartData& charts, std::vector<std::string>& sources) {
  State& st = *state_;
  st.settle_mirror();
  std::vector<std::string> source_list;
  std::vector<State::FilePart> parts;
  std::map<int, State::Rank> ranks;
  std::optional<std::tuple<std::string, int, std::string>> first_bad;
  std::vector<std::string> phase_names;
  std::vector<ChartData::Impl::Window> windows;
  std::vector<std::string> stage_names;
  std::vector<ChartData::Impl::Request> requests;
  std::deque<ChartData::Impl::Bar> bars;
  try {
    const std::string_view body = partial_body(bytes);
    partial_io::Reader in(body.data(), body.size());
    // Parts are read into rows made from this vxperf's field table, each checked against it.
    in(source_list, parts, ranks, first_bad, phase_names);
    PagePoints points{windows, std::min(phase_names.size(), ChartData::Impl::kMaxPhases)};
    in(points, stage_names, requests, bars);
    for (const ChartData::Impl::Bar& bar : bars) {
      if (bar.stage_s.size() > stage_names.size()) in.fail("a bar of more stages than named");
    }
    if (!in.done()) in.fail("more after its end");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  }
  // A file another partial read first: one run reads it once. Without records it is said as
  // repeated, as one run says it; with records it cannot be taken out of this partial's ranks.
  for (State::FilePart& part : parts) {
    if (!part.bytes) continue;
    const State::FilePart* earlier = nullptr;
    for (const State::FilePart& other : st.parts) {
      if (!other.repeats && other.bytes == part.bytes) {
        earlier = &other;
        break;
      }
    }
    if (earlier == nullptr) continue;
    if (!part.repeats && part.records > 0) {
      throw std::invalid_argument(name + ": " + part.name + " holds the same bytes as " +
                                  earlier->name +
                                  " of an earlier partial (a file copied, or named twice): "
                                  "make the partials without it");
    }
    State::FilePart again;
    again.name = part.name;
    again.repeats = earlier->name;
    again.bytes = part.bytes;
    again.warnings.push_back(repeated_file_warning(part.name, earlier->name));
    part = std::move(again);
  }
  for (const auto& [rank, r] : ranks) {
    auto held = st.rank_from.find(rank);
    if (held != st.rank_from.end()) {
      throw std::invalid_argument(strprintf(
          "rank %d is in both %s and %s: a rank's records go in one partial (its percentiles, "
          "scores and ledger are over all of them)",
          rank, held->second.c_str(), name.c_str()));
    }
  }
  // A request of several ranks whose records another partial holds too: its latency is its
  // slowest rank's and its energy the group's, folded record by record as one run reads them.
  std::set<std::pair<int, std::int64_t>> shared;
  for (const State::FilePart& part : parts) {
    if (!part.requests) continue;
    for (const RequestAcc* acc : {&part.requests->measured, &part.requests->warmup}) {
      for (const auto& [key, index] : acc->group_requests) {
        auto held = st.request_from.find(key);
        if (held != st.request_from.end()) {
          throw std::invalid_argument(strprintf(
              "request %lld of data-parallel rank %d is computed by ranks in both %s and %s: the "
              "files of the ranks that share a request go in one partial (its latency is its "
              "slowest rank's)",
              static_cast<long long>(key.second), key.first, held->second.c_str(), name.c_str()));
        }
        shared.insert(key);
      }
    }
  }
  for (const auto& key : shared) st.request_from[key] = name;
  for (auto& [rank, r] : ranks) {
    st.ranks[rank] = std::move(r);
    st.rank_from[rank] = name;
  }
  for (State::FilePart& part : parts) st.parts.push_back(std::move(part));
  if (!st.first_bad) st.first_bad = std::move(first_bad);
  sources.insert(sources.end(), source_list.begin(), source_list.end());
  // The page's points: phases by the merged names' index, as one run names them in order.
  ChartData::Impl& c = charts.impl_mut();
  std::vector<std::size_t> index;
  for (const std::string& phase : phase_names) index.push_back(c.phase_index(phase));
  for (ChartData::Impl::Window w : windows) {
    const auto own = w.phase_s;
    w.phase_s = {};
    for (std::size_t k = 0; k < own.size() && k < index.size(); ++k) {
      if (index[k] < ChartData::Impl::kMaxPhases) w.phase_s[index[k]] = own[k];
    }
    c.windows.push_back(w);
  }
  // The requests' points, and the last bars with their stages by the merged names' index.
  c.add_requests(stage_names, requests, bars);
}

bool ReportBuilder::no_records(const InputError& e) const {
  const State& st = *state_;
  std::int64_t records = 0;
  for (const State::FilePart& part : st.parts) records += part.records;
  if (records > 0 || !st.first_bad) return false;
  const auto& [file, line, message] = *st.first_bad;
  return std::string(e.what()) == InputError(file, line, message).what();
}

void ReportBuilder::check_records() const {
  const State& st = *state_;
  std::int64_t records = 0;
  for (const State::FilePart& part : st.parts) records += part.records;
  if (records > 0 || !st.first_bad) return;
  const auto& [file, line, message] = *st.first_bad;
  throw InputError(file, line, message);
}

}  // namespace vxperf::analysis
