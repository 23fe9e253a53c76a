// Serving metrics for Prometheus: a record sink that keeps request and training metrics and
// renders them in the text exposition format 0.0.4 (its HTTP endpoint:
// vxperf/prometheus_endpoint.h).
//
//   // A server with no /metrics route of its own:
//   auto endpoint = vxperf::start_prometheus("9400", nullptr);  // 127.0.0.1:9400
//   if (endpoint) engine->add_sink(endpoint->sink());         // nullptr: said once, go on
//
//   // A server that has its own route:
//   auto metrics = std::make_shared<vxperf::PrometheusSink>();
//   engine->add_sink(metrics);
//   route("/metrics", [&] { return reply(metrics->render(), vxperf::kPrometheusContentType); });
//
// Metrics, every one labelled with the record's `rank`:
//   vxperf_requests_total{status="ok|error"}          counter
//   vxperf_request_seconds                            histogram, end to end, 0.05 s .. 300 s
//   vxperf_stage_seconds{stage}                       histogram, every call of every stage
//   vxperf_dit_tflops, vxperf_dit_mfu                 gauges, last request that ran the DiT
//   vxperf_peak_memory_bytes{kind="allocated|reserved"}  gauge, last request with device peaks
//   vxperf_train_step_seconds                         histogram, every training step
//   vxperf_train_samples_per_second                   gauge, this rank, last window
//   vxperf_train_mfu, vxperf_train_hfu                gauges, last priced window
//   vxperf_train_peak_memory_bytes{kind}              gauge, last window with device peaks
//   vxperf_energy_joules_total{device="cuda:N"}       counter, NVML energy of requests and windows
//   vxperf_power_watts{device}                        gauge, mean power, last request or window
//   vxperf_sm_clock_mhz{device}                       gauge, lowest SM clock, the same
//   vxperf_gpu_temperature_celsius{device}            gauge, highest temperature, the same
//   vxperf_train_energy_joules_per_sample{device}     gauge, last window
//   vxperf_cpu_energy_joules_total                    counter, powercap energy of the host
// (the gauges and counters of record fields are what the fields' rows in the field tables name,
// src/schema/record_fields.h; the device readings' appear only where a meter read the device)
// MFU and HFU are fractions (0.55, not 55). Warmup requests and steps (VIDEOX_PERF_WARMUP) are
// left out of every metric, as they are left out of the exit summaries. A failed request only
// counts in vxperf_requests_total{status="error"}: its partial timings and FLOPs would skew the
// latency and utilization of the requests that completed. A series appears at its first value.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vxperf/metric_family.h"
#include "vxperf/sink.h"

namespace vxperf {

// The Content-Type of render()'s text.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Keeps the metrics above from the records it is handed.
//
// Thread safety: on_request, on_request_load, on_train_window, on_train_end and render may be
// called from any threads at once. A scrape sees each record's updates all together or not at all
// (so vxperf_requests_total's ok count always equals vxperf_request_seconds_count). Updates happen
// once per settled record, never per stage call: on_request costs about a microsecond
// (bench/prometheus_bench.cpp).
class PrometheusSink final : public RecordSink {
 public:
  PrometheusSink();
  ~PrometheusSink() override;

  void on_request(const RequestRecord& record, const RequestDetail& detail) override;
  void on_request_load(const RequestLoad& load) override;
  void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) override;
  void on_train_end(const TrainEndRecord& record) override;

  // The exposition text, for kPrometheusContentType.
  std::string render() const;
  // The same metrics as structured families (one consistent snapshot, as render()'s).
  std::vector<FamilySnapshot> collect() const;

 private:
  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace vxperf
