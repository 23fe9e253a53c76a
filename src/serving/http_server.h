// The HTTP side of the Prometheus endpoint: GET /metrics answered from a render function on a
// background thread. Two implementations, chosen when the build is configured: cpp-httplib's
// server (http_server_httplib.cpp), or none (http_server_none.cpp) when cpp-httplib is absent.
//
// Thread safety: `render` is called from the server's threads, concurrently with anything the
// program does; it must be thread-safe. Destroying the server stops and joins its threads.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace vxperf::serving {

class HttpServer {
 public:
  virtual ~HttpServer() = default;
  virtual int port() const = 0;  // as bound
};

// Listens on `ipv4` (dotted, already resolved) and `port` (0: any free port) and serves until
// destroyed. nullptr, with the reason in one line in *error, when it cannot listen.
std::unique_ptr<HttpServer> start_http_server(const std::string& ipv4, int port,
                                              const std::function<std::string()>& render,
                                              std::string* error);

bool http_server_available();

}  // namespace vxperf::serving
