// Records to metrics. The bucket layouts are part of the metrics' contract (dashboards and the
// Python collector use the same), so they are spelled out here once.
#include "vxperf/prometheus_sink.h"

#include <cstring>
#include <string>
#include <vector>

#include "schema/show_walk.h"
#include "schema/value_walk.h"
#include "serving/exposition.h"
#include "serving/metrics.h"

namespace vxperf {
namespace {

// A request end to end: video generation runs from well under a second (tiny or cached) to
// minutes; finer where most requests land (5 s - 2 min).
const std::vector<double> kRequestBuckets = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,   10, 20,
                                             30,   45,  60,   90,  120, 180, 240, 300};
// One stage call: a text encoder or a scheduler step in milliseconds, a DiT forward in tenths of
// a second to seconds, a VAE decode of a long video in minutes.
const std::vector<double> kStageBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                           1,     2.5,    5,     10,   25,    60,   120, 300};
// One training step: from tens of milliseconds (small models) to minutes (long-video batches).
const std::vector<double> kStepBuckets = {0.05, 0.1, 0.25, 0.5, 1,  2,  3,   5,
                                          7.5,  10,  15,   20,  30, 60, 120, 300};

// A device reading's series (its row's Show in the field table: name, help, gauge or counter,
// labels), requests and windows alike.
struct ReadingSeries {
  serving::CounterFamily* counter = nullptr;  // else a gauge
  serving::GaugeFamily* gauge = nullptr;
};

// Registers the series of the device readings whose rows name one, labelled `by`, in the table's
// order.
std::vector<ReadingSeries> add_reading_series(serving::MetricRegistry& registry, SeriesLabels by) {
  std::vector<ReadingSeries> out;
  internal::walk_shown(
      DeviceReadings{}, [&](const char*, const Show& show, const internal::ShownValue&) {
        if (show.series == SeriesKind::kNone || show.labels != by) return;
        std::vector<std::string> labels = {"rank"};
        if (by == SeriesLabels::kRankDevice) labels.emplace_back("device");
        ReadingSeries series;
        if (show.series == SeriesKind::kCounter) {
          series.counter = &registry.add_counter(show.series_name, show.help, labels);
        } else {
          series.gauge = &registry.add_gauge(show.series_name, show.help, labels);
        }
        out.push_back(series);
      });
  return out;
}

// The meters' series of one record (a request or a window) on `device`: a counter adds the
// reading, a gauge takes it.
template <class Metrics>
void set_device_series(const Metrics& m, const std::string& rank, const std::optional<int>& device,
                       const std::optional<DeviceReadings>& readings) {
  if (!device || !readings) return;
  const std::string name = "cuda:" + std::to_string(*device);
  std::size_t by_device = 0, by_rank = 0;
  internal::walk_shown(*readings, [&](const char*, const Show& show,
                                      const internal::ShownValue& v) {
    if (show.series == SeriesKind::kNone) return;
    const bool with_device = show.labels == SeriesLabels::kRankDevice;
    const ReadingSeries& s = with_device ? m.device_series[by_device++] : m.host_series[by_rank++];
    if (!v.number) return;
    if (s.counter != nullptr) {
      (with_device ? s.counter->with({rank, name}) : s.counter->with({rank})).inc(*v.number);
    } else {
      (with_device ? s.gauge->with({rank, name}) : s.gauge->with({rank})).set(*v.number);
    }
  });
}

}  // namespace

// A gauge set from a record field, by the field's place in the record's field table
// (src/schema/record_fields.h): the object it sits in ("" at the top) and its key, and the value
// of its `kind` label, if it has one.
struct PrometheusSink::Gauge {
  const char* object;
  const char* key;
  serving::GaugeFamily* family;
  const char* kind;
};

struct PrometheusSink::Metrics {
  serving::MetricRegistry registry;
  serving::CounterFamily& requests = registry.add_counter(
      "vxperf_requests_total", "Pipeline calls (requests) settled, warmup excluded, by outcome.",
      {"rank", "status"});
  serving::HistogramFamily& request_seconds = registry.add_histogram(
      "vxperf_request_seconds", "End-to-end seconds of each completed request, warmup excluded.",
      {"rank"}, kRequestBuckets);
  serving::HistogramFamily& stage_seconds = registry.add_histogram(
      "vxperf_stage_seconds",
      "Seconds of each call of each stage of completed requests, warmup excluded.",
      {"rank", "stage"}, kStageBuckets);
  serving::GaugeFamily& dit_tflops = registry.add_gauge(
      "vxperf_dit_tflops", "Achieved transformer TFLOPS of the last request that ran the DiT.",
      {"rank"});
  serving::GaugeFamily& dit_mfu = registry.add_gauge(
      "vxperf_dit_mfu",
      "Transformer model FLOPs utilization (fraction of peak) of the last request that ran the "
      "DiT.",
      {"rank"});
  serving::GaugeFamily& peak_memory = registry.add_gauge(
      "vxperf_peak_memory_bytes",
      "Peak device memory of the last request: kind=allocated (tensors) or reserved (allocator "
      "cache).",
      {"rank", "kind"});
  serving::HistogramFamily& step_seconds = registry.add_histogram(
      "vxperf_train_step_seconds", "Seconds of each training step, warmup excluded.", {"rank"},
      kStepBuckets);
  serving::GaugeFamily& samples_per_second =
      registry.add_gauge("vxperf_train_samples_per_second",
                         "Training samples per second of this rank, last window.", {"rank"});
  serving::GaugeFamily& train_mfu = registry.add_gauge(
      "vxperf_train_mfu",
      "Training model FLOPs utilization (fraction of peak), last priced window.", {"rank"});
  serving::GaugeFamily& train_hfu = registry.add_gauge(
      "vxperf_train_hfu",
      "Training hardware FLOPs utilization (recomputation included), last priced window.",
      {"rank"});
  serving::GaugeFamily& train_peak_memory = registry.add_gauge(
      "vxperf_train_peak_memory_bytes",
      "Peak device memory of the last training window: kind=allocated or reserved.",
      {"rank", "kind"});

  // What the meters read, requests and windows alike: a series per device reading whose row in
  // the field table names one (src/schema/record_fields.h), by device ("cuda:0": NVML's energy,
  // power, clock, temperature), then the windows' joules per sample, then by rank alone (#28: the
  // host's energy, powercap).
  const std::vector<ReadingSeries> device_series =
      add_reading_series(registry, SeriesLabels::kRankDevice);
  serving::GaugeFamily& energy_per_sample = registry.add_gauge(
      "vxperf_train_energy_joules_per_sample",
      "Joules per training sample over the last window (NVML).", {"rank", "device"});
  const std::vector<ReadingSeries> host_series = add_reading_series(registry, SeriesLabels::kRank);
  // The videos the requests made (joules per video: rate(vxperf_energy_joules_total) over
  // rate(vxperf_videos_total), requests only).
  serving::CounterFamily& videos = registry.add_counter(
      "vxperf_videos_total", "Videos generated by completed requests, warmup excluded.", {"rank"});

  // The gauges set from record fields: a field of a record becomes a series with one row here.
  const std::vector<Gauge> request_gauges = {
      {"dit", "tflops", &dit_tflops, nullptr},
      {"dit", "mfu", &dit_mfu, nullptr},
      {"", "peak_alloc_bytes", &peak_memory, "allocated"},
      {"", "peak_reserved_bytes", &peak_memory, "reserved"},
  };
  const std::vector<Gauge> window_gauges = {
      {"throughput", "samples_per_s", &samples_per_second, nullptr},
      {"throughput", "mfu", &train_mfu, nullptr},
      {"throughput", "hfu", &train_hfu, nullptr},
      {"", "peak_alloc_bytes", &train_peak_memory, "allocated"},
      {"", "peak_reserved_bytes", &train_peak_memory, "reserved"},
  };
};

// Sets every gauge of `gauges` whose field `record` holds (a field it lacks leaves its gauge at
// the last value: a series appears at its first value and then keeps the latest).
template <class Record>
void PrometheusSink::set_gauges(const std::vector<Gauge>& gauges, const Record& record,
                                const std::string& rank) {
  internal::walk_values(record, [&](const char* object, const char* key, double value) {
    for (const Gauge& g : gauges) {
      // The first characters tell most fields from a row at once.
      if (g.key[0] != key[0] || g.object[0] != object[0]) continue;
      if (std::strcmp(g.key, key) != 0 || std::strcmp(g.object, object) != 0) continue;
      if (g.kind != nullptr) {
        g.family->with({rank, g.kind}).set(value);
      } else {
        g.family->with({rank}).set(value);
      }
    }
  });
}

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
  for (std::size_t i = 0; i < record.stages.size() && i < detail.stage_calls_ms.size(); ++i) {
    m.stage_seconds.with({rank, record.stages[i].name}).observe_all(detail.stage_calls_ms[i], 1e-3);
  }
  set_gauges(m.request_gauges, record, rank);
  set_device_series(m, rank, record.device, record.readings);
  m.videos.with({rank}).inc(static_cast<double>(record.videos.value_or(1)));
  m.requests.with({rank, "ok"}).inc();
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
    measured = true;
  }
  // A window of warmup steps only is aggregated over those steps: it is all warmup.
  if (!measured) return;
  set_gauges(m.window_gauges, record, rank);
  set_device_series(m, rank, record.device, record.readings);
  if (record.device && record.energy_j_per_sample) {
    m.energy_per_sample.with({rank, "cuda:" + std::to_string(*record.device)})
        .set(*record.energy_j_per_sample);
  }
}

std::string PrometheusSink::render() const { return serving::to_exposition_text(collect()); }

std::vector<FamilySnapshot> PrometheusSink::collect() const { return metrics_->registry.collect(); }

}  // namespace vxperf
