// Serving metrics for Prometheus: a record sink that keeps request and training metrics, and an
// HTTP endpoint that serves them at GET /metrics (text exposition format 0.0.4).
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
// MFU and HFU are fractions (0.55, not 55). Warmup requests and steps (VIDEOX_PERF_WARMUP) are
// left out of every metric, as they are left out of the exit summaries. A failed request only
// counts in vxperf_requests_total{status="error"}: its partial timings and FLOPs would skew the
// latency and utilization of the requests that completed. A series appears at its first value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vxperf/sink.h"

namespace vxperf {
namespace serving {
class HttpServer;
}

// The Content-Type of render()'s text.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Keeps the metrics above from the records it is handed.
//
// Thread safety: on_request, on_train_window and render may be called from any threads at once.
// A scrape sees each record's updates all together or not at all (so vxperf_requests_total's ok
// count always equals vxperf_request_seconds_count). Updates happen once per settled record,
// never per stage call: on_request costs about a microsecond (bench/prometheus_bench.cpp).
class PrometheusSink final : public RecordSink {
 public:
  PrometheusSink();
  ~PrometheusSink() override;

  void on_request(const RequestRecord& record, const RequestDetail& detail) override;
  void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) override;

  // The exposition text, for kPrometheusContentType.
  std::string render() const;

 private:
  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
};

// Where the endpoint listens.
struct ListenAddress {
  std::string host = "127.0.0.1";  // dotted IPv4 address or a host name (resolved to IPv4)
  int port = 0;                    // 0: any free port (from code only; see address())
};

// Parses "[host:]port" strictly: port 1-65535 in decimal digits; host, when given, a dotted IPv4
// address (four numbers 0-255) or a DNS name (labels of letters, digits and inner hyphens, at
// most 63 characters each and 253 in all); no spaces, no IPv6. The host defaults to 127.0.0.1.
// nullopt, with the reason in one line in *error (when not null), for anything else.
std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string* error);

// A running endpoint: background threads (one listening, two serving connections) answering
// GET /metrics from its sink. Anything else is answered 404 (another path) or 405 (another method
// on /metrics); malformed or oversized requests are refused: 414 (a request target over
// cpp-httplib's 8 KiB), 400 (a header line over 8 KiB, or anything malformed), 413 (a body over
// 4 KiB). Each connection serves one request; one that sends nothing for 2 s, or stalls a read or
// write for 5 s, is closed. cpp-httplib 0.11 reads a whole line before checking its length, so a
// client streaming an endless line holds one serving thread (and that line's memory) until it
// stops: keep the endpoint on loopback or behind a firewall, as its default already is.
//
// Thread safety: const members may be called from any thread. Destroying it stops the endpoint:
// the listening socket closes at once; scrapes in flight finish (bounded by the timeouts), then
// the threads are joined.
class PrometheusEndpoint {
 public:
  ~PrometheusEndpoint();
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  // As bound: the address the host resolved to, and the actual port when 0 was asked for.
  const ListenAddress& address() const { return address_; }
  // What it serves: register it with the engine.
  const std::shared_ptr<PrometheusSink>& sink() const { return sink_; }

 private:
  friend std::unique_ptr<PrometheusEndpoint> start_prometheus(const ListenAddress&,
                                                              std::shared_ptr<PrometheusSink>,
                                                              LogFn);
  PrometheusEndpoint() = default;

  ListenAddress address_;
  std::shared_ptr<PrometheusSink> sink_;
  std::unique_ptr<serving::HttpServer> server_;
};

// Starts serving `sink` (a new one when null) on `address`. On any failure (a host that does not
// resolve, a port already in use, a build without cpp-httplib) it says why in one line through
// `notice` (stderr when empty), starting "vxperf: ", and returns nullptr; the program goes on
// without the endpoint.
std::unique_ptr<PrometheusEndpoint> start_prometheus(const ListenAddress& address,
                                                     std::shared_ptr<PrometheusSink> sink,
                                                     LogFn notice);

// The same from "[host:]port" text (VIDEOX_PERF_PROMETHEUS): parsed by parse_listen_address, a bad
// value being one more failure reported through `notice`. For the engine: start this once, keep
// the endpoint for the life of the process, add its sink().
std::unique_ptr<PrometheusEndpoint> start_prometheus(std::string_view address, LogFn notice);

// Whether this build has the HTTP endpoint (cpp-httplib was found when it was configured).
bool prometheus_endpoint_available();

}  // namespace vxperf
