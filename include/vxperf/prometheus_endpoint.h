// The Prometheus endpoint: a background HTTP server answering GET /metrics from a PrometheusSink
// (vxperf/prometheus_sink.h). Its address is parsed by vxperf/listen_address.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vxperf/listen_address.h"
#include "vxperf/prometheus_sink.h"
#include "vxperf/sink.h"

namespace vxperf {
namespace serving {
class HttpServer;
}

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
