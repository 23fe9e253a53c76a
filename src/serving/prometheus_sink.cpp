// Records to metrics. The bucket layouts are part of the metrics' contract (dashboards and the
// Python collector use the same), so they are spelled out here once.
#include "vxperf/prometheus_sink.h"

#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "schema/show_walk.h"
#include "serving/exposition.h"
#include "serving/metrics.h"

namespace vxperf {
namespace {

// A request end to end: video generation runs from well under a second (tiny or cached) to half
// an hour (Wan2.1 14B at 720p on one GPU); finer where most requests land (5 s - 10 min). The
// queue a request waited in spans the same range.
const std::vector<double> kRequestBuckets = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,   10,  20,   30,
                                             45,   60,  90,   120, 180, 240, 300, 450, 600, 900,
                                             1200, 1800, 2700, 3600};
// The time to the first denoising step: a text encoder and one forward, seconds to a minute or
// two (a 14B forward at 720p).
const std::vector<double> kFirstStepBuckets = {0.05, 0.1, 0.25, 0.5, 1,  2,  3,   5,
                                               7.5,  10,  15,   20,  30, 60, 120, 300};
// One stage call: a text encoder or a scheduler step in milliseconds, a DiT forward in tenths of
// a second to seconds, a VAE decode of a long video in minutes.
const std::vector<double> kStageBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                           1,     2.5,    5,     10,   25,    60,   120, 300};
// One training step: from tens of milliseconds (small models) to minutes (long-video batches).
const std::vector<double> kStepBuckets = {0.05, 0.1, 0.25, 0.5, 1,  2,  3,   5,
                                          7.5,  10,  15,   20,  30, 60, 120, 300};

// A series a row of a record's field table names (its Show, src/schema/record_fields.h): a
// counter adds the record's value, a gauge takes it.
struct FieldSeries {
  serving::CounterFamily* counter = nullptr;  // else a gauge
  serving::GaugeFamily* gauge = nullptr;
  bool by_device = false;      // {rank, device}: set only from a record measured on a device
  const char* kind = nullptr;  // the value of its `kind` label, if it has one
};

// The families made so far, by name: requests and windows share the device readings' series, and
// rows that differ by their kind label share one.
struct Families {
  serving::MetricRegistry& registry;
  std::map<std::string, FieldSeries, std::less<>> made;

  FieldSeries family(const Show& show, bool window) {
    const char* name = show.series_for(window);
    auto it = made.find(name);
    if (it == made.end()) {
      std::vector<std::string> labels = {"rank"};
      FieldSeries series;
      series.by_device = show.labels == SeriesLabels::kRankDevice;
      if (series.by_device) labels.emplace_back("device");
      if (show.kind_label != nullptr) labels.emplace_back("kind");
      if (show.series == SeriesKind::kCounter) {
        series.counter = &registry.add_counter(name, show.help_for(window), labels);
      } else {
        series.gauge = &registry.add_gauge(name, show.help_for(window), labels);
      }
      it = made.emplace(name, series).first;
    }
    FieldSeries series = it->second;
    series.kind = show.kind_label;
    return series;
  }
};

// The series the rows of `Record`'s table name, in the table's order (the order set_series walks
// a record in).
template <class Record>
std::vector<FieldSeries> field_series(Families& families, bool window) {
  std::vector<FieldSeries> out;
  internal::walk_shown(Record{}, [&](const char*, const Show& show, const internal::ShownValue&) {
    if (show.series != SeriesKind::kNone) out.push_back(families.family(show, window));
  });
  return out;
}

// The child of `family` that `s` sets: by rank, then the record's device, then its kind.
template <class Family>
auto& child_of(Family& family, const FieldSeries& s, const std::string& rank,
               const std::string& device) {
  if (s.by_device && s.kind != nullptr) return family.with({rank, device, s.kind});
  if (s.by_device) return family.with({rank, device});
  if (s.kind != nullptr) return family.with({rank, s.kind});
  return family.with({rank});
}

// Sets the series of each field `record` holds (a field it lacks leaves its gauge at the last
// value: a series appears at its first value and then keeps the latest).
template <class Record>
void set_series(const std::vector<FieldSeries>& series, const Record& record,
                const std::string& rank) {
  std::string device;  // a record of a device's interval names it (the final record has none)
  if constexpr (!std::is_same_v<Record, TrainEndRecord>) {
    if (record.device) device = "cuda:" + std::to_string(*record.device);
  }
  std::size_t i = 0;
  internal::walk_shown(record, [&](const char*, const Show& show, const internal::ShownValue& v) {
    if (show.series == SeriesKind::kNone) return;
    const FieldSeries& s = series[i++];
    if (!v.number || (s.by_device && device.empty())) return;
    if (s.counter != nullptr) {
      child_of(*s.counter, s, rank, device).inc(*v.number);
    } else {
      child_of(*s.gauge, s, rank, device).set(*v.number);
    }
  });
}

}  // namespace

struct PrometheusSink::Metrics {
  serving::MetricRegistry registry;
  serving::CounterFamily& requests = registry.add_counter(
      "vxperf_requests_total", "Pipeline calls (requests) settled, warmup excluded, by outcome.",
      {"rank", "status"});
  serving::HistogramFamily& request_seconds = registry.add_histogram(
      "vxperf_request_seconds", "End-to-end seconds of each completed request, warmup excluded.",
      {"rank"}, kRequestBuckets);
  serving::HistogramFamily& queue_seconds = registry.add_histogram(
      "vxperf_request_queue_seconds",
      "Seconds each completed request waited in a queue before it began, where the server said "
      "it, warmup excluded.",
      {"rank"}, kRequestBuckets);
  serving::HistogramFamily& first_step_seconds = registry.add_histogram(
      "vxperf_request_first_step_seconds",
      "Seconds from each completed request's start to the end of its first transformer call (of "
      "the first denoising step), warmup excluded.",
      {"rank"}, kFirstStepBuckets);
  // A denoising step is all its transformer calls (two with guidance run as two): the same range
  // as one call, a little wider.
  serving::HistogramFamily& denoising_step_seconds = registry.add_histogram(
      "vxperf_request_denoising_step_seconds",
      "Mean seconds per denoising step of each completed request that said its steps (its "
      "transformer calls' time over its steps), warmup excluded.",
      {"rank"}, kStageBuckets);
  serving::HistogramFamily& stage_seconds = registry.add_histogram(
      "vxperf_stage_seconds",
      "Seconds of each call of each stage of completed requests, warmup excluded.",
      {"rank", "stage"}, kStageBuckets);
  serving::HistogramFamily& step_seconds = registry.add_histogram(
      "vxperf_train_step_seconds", "Seconds of each training step, warmup excluded.", {"rank"},
      kStepBuckets);
  // A step's time by phase (its mean per step: rate of this over rate of the steps' count).
  serving::CounterFamily& phase_seconds = registry.add_counter(
      "vxperf_train_phase_seconds_total",
      "Seconds of the training steps by phase (data, prep, fwd, bwd, opt, ...), warmup excluded.",
      {"rank", "phase"});
  // The live cross-rank view's (VIDEOX_PERF_XRANK=1, on rank 0): each rank's seconds lost so far
  // as the slowest rank of a window.
  serving::GaugeFamily& straggler_lost = registry.add_gauge(
      "vxperf_straggler_lost_seconds",
      "Seconds each rank has cost the job so far as the slowest rank of a window (its seconds per "
      "step above the ranks' per-phase medians times the window's steps), from the live "
      "cross-rank view.",
      {"rank"});
  // A server's load as it changes (RecordSink::on_request_load).
  serving::GaugeFamily& in_flight = registry.add_gauge(
      "vxperf_requests_in_flight", "Requests running now (pipeline calls begun, not ended).",
      {"rank"});
  serving::GaugeFamily& queued = registry.add_gauge(
      "vxperf_requests_queued",
      "Requests waiting in the server's queue now, as the server said (vxperf.queued()).",
      {"rank"});
  // The videos the requests made (joules per video: rate(vxperf_energy_joules_total) over
  // rate(vxperf_videos_total), requests only).
  serving::CounterFamily& videos = registry.add_counter(
      "vxperf_videos_total", "Videos generated by completed requests, warmup excluded.", {"rank"});

  // Every series a row of the records' field tables names (src/schema/record_fields.h): the
  // request's DiT TFLOPS and MFU, peak memory, the device readings (NVML's energy, power, clock,
  // temperature by device; the host's energy by rank, powercap), the window's samples per second,
  // MFU, HFU and joules per sample. A field becomes a series by its row alone.
  Families families{registry, {}};
  const std::vector<FieldSeries> request_series = field_series<RequestRecord>(families, false);
  const std::vector<FieldSeries> window_series = field_series<TrainWindowRecord>(families, true);
  // The training's final record: its ledger (goodput and parts) through the loop's end.
  const std::vector<FieldSeries> end_series = field_series<TrainEndRecord>(families, true);
};

PrometheusSink::PrometheusSink() : metrics_(std::make_unique<Metrics>()) {}
PrometheusSink::~PrometheusSink() = default;

void PrometheusSink::on_request(const RequestRecord& record, const RequestDetail& detail) {
  if (record.warmup) return;
  const std::string rank = std::to_string(record.rank);
  Metrics& m = *metrics_;
  auto update = m.registry.atomic_update();
  if (detail.failed) {
    m.requests.with({rank, "error"}).inc();
    return;
  }
  m.request_seconds.with({rank}).observe(record.e2e_s);
  if (record.queue_s) m.queue_seconds.with({rank}).observe(*record.queue_s);
  if (record.first_step_s) m.first_step_seconds.with({rank}).observe(*record.first_step_s);
  if (auto steps = denoising_step_time(record)) {
    m.denoising_step_seconds.with({rank}).observe(steps->ms_per_step() / 1000.0);
  }
  for (std::size_t i = 0; i < record.stages.size() && i < detail.stage_calls_ms.size(); ++i) {
    m.stage_seconds.with({rank, record.stages[i].name}).observe_all(detail.stage_calls_ms[i], 1e-3);
  }
  set_series(m.request_series, record, rank);
  m.videos.with({rank}).inc(static_cast<double>(record.videos.value_or(1)));
  m.requests.with({rank, "ok"}).inc();
}

void PrometheusSink::on_request_load(const RequestLoad& load) {
  const std::string rank = std::to_string(load.rank);
  Metrics& m = *metrics_;
  auto update = m.registry.atomic_update();
  m.in_flight.with({rank}).set(static_cast<double>(load.in_flight));
  m.queued.with({rank}).set(static_cast<double>(load.queued));
}

void PrometheusSink::on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) {
  const std::string rank = std::to_string(record.rank);
  Metrics& m = *metrics_;
  auto update = m.registry.atomic_update();
  serving::Histogram* steps = nullptr;   // made at the first measured step
  bool measured = detail.steps.empty();  // no detail: trust the record's own warmup exclusion
  for (const StepRecord& step : detail.steps) {
    if (step.warmup) continue;
    if (steps == nullptr) steps = &m.step_seconds.with({rank});
    steps->observe(step.total_s);
    for (const auto& [phase, seconds] : step.phases)
      m.phase_seconds.with({rank, phase}).inc(seconds);
    measured = true;
  }
  if (record.xrank) {
    const std::vector<double>& lost = record.xrank->lost_s;
    for (std::size_t r = 0; r < lost.size(); ++r) {
      m.straggler_lost.with({std::to_string(r)}).set(lost[r]);
    }
  }
  // A window of warmup steps only is aggregated over those steps: it is all warmup.
  if (!measured) return;
  set_series(m.window_series, record, rank);
}

void PrometheusSink::on_train_end(const TrainEndRecord& record) {
  Metrics& m = *metrics_;
  auto update = m.registry.atomic_update();
  set_series(m.end_series, record, std::to_string(record.rank));
}

std::string PrometheusSink::render() const { return serving::to_exposition_text(collect()); }

std::vector<FamilySnapshot> PrometheusSink::collect() const { return metrics_->registry.collect(); }

}  // namespace vxperf
