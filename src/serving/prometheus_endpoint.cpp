// Starting and stopping the endpoint; the HTTP work itself is in http_server_*.cpp.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "serving/http_server.h"
#include "vxperf/prometheus_endpoint.h"

namespace vxperf {
namespace {

void say(const LogFn& notice, const std::string& line) {
  if (notice) {
    notice(line);
    return;
  }
  // One write(2), so lines from several threads or processes never interleave.
  std::string out = line + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

// `text` for a one-line message: control characters and non-ASCII bytes become '?'.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return out;
}

// The first IPv4 address of `host` (dotted), so the bind below reports its own errors.
bool resolve_ipv4(const std::string& host, std::string* ipv4, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    *error = std::string("cannot resolve it to an IPv4 address: ") + ::gai_strerror(rc);
    return false;
  }
  char text[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(result->ai_addr);
  ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  ::freeaddrinfo(result);
  *ipv4 = text;
  return true;
}

}  // namespace

PrometheusEndpoint::~PrometheusEndpoint() = default;

std::unique_ptr<PrometheusEndpoint> start_prometheus(const ListenAddress& address,
                                                     std::shared_ptr<PrometheusSink> sink,
                                                     LogFn notice) {
  const std::string prefix = "vxperf: Prometheus endpoint not started on " +
                             printable(address.host) + ":" + std::to_string(address.port) + ": ";
  const char* suffix = "; metrics are not served";
  if (!serving::http_server_available()) {
    std::string why;
    serving::start_http_server({}, 0, nullptr, &why);
    say(notice, prefix + why + suffix);
    return nullptr;
  }
  if (address.port < 0 || address.port > 65535) {
    say(notice, prefix + "the port is not from 0 to 65535" + suffix);
    return nullptr;
  }
  std::string ipv4;
  std::string why;
  if (!resolve_ipv4(address.host, &ipv4, &why)) {
    say(notice, prefix + why + suffix);
    return nullptr;
  }
  if (!sink) sink = std::make_shared<PrometheusSink>();
  std::unique_ptr<PrometheusEndpoint> endpoint(new PrometheusEndpoint());
  endpoint->sink_ = sink;
  // The server holds the sink too, so it outlives every scrape whatever the caller drops.
  endpoint->server_ = serving::start_http_server(
      ipv4, address.port, [sink] { return sink->render(); }, &why);
  if (!endpoint->server_) {
    say(notice, prefix + why + suffix);
    return nullptr;
  }
  endpoint->address_.host = ipv4;
  endpoint->address_.port = endpoint->server_->port();
  return endpoint;
}

std::unique_ptr<PrometheusEndpoint> start_prometheus(std::string_view address, LogFn notice) {
  std::string why;
  auto parsed = parse_listen_address(address, &why);
  if (!parsed) {
    say(notice, "vxperf: Prometheus endpoint not started: \"" + printable(address) +
                    "\" is not [host:]port: " + why + "; metrics are not served");
    return nullptr;
  }
  return start_prometheus(*parsed, nullptr, std::move(notice));
}

bool prometheus_endpoint_available() { return serving::http_server_available(); }

}  // namespace vxperf
