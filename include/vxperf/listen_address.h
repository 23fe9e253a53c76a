// "[host:]port": where an endpoint listens (VIDEOX_PERF_PROMETHEUS, vxperf::start_prometheus).
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vxperf {

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

}  // namespace vxperf
