// "[host:]port", as VIDEOX_PERF_PROMETHEUS takes it.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "vxperf/listen_address.h"

namespace vxperf {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Decimal digits only (no sign, no spaces), at most `max`. -1 otherwise.
long parse_decimal(std::string_view text, long max) {
  if (text.empty() || text.size() > 5) return -1;
  long value = 0;
  for (char c : text) {
    if (!is_digit(c)) return -1;
    value = value * 10 + (c - '0');
  }
  return value <= max ? value : -1;
}

bool all_digits_and_dots(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return is_digit(c) || c == '.'; });
}

// Four numbers 0-255 without leading zeros (which some resolvers read as octal).
bool is_ipv4(std::string_view text) {
  int parts = 0;
  while (true) {
    std::size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    if (parse_decimal(part, 255) < 0) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    text.remove_prefix(dot + 1);
  }
  return parts == 4;
}

// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
bool is_host_name(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  while (true) {
    std::size_t dot = text.find('.');
    std::string_view label = text.substr(0, dot);
    if (label.empty() || label.size() > 63) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!is_alnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    text.remove_prefix(dot + 1);
  }
}

std::optional<ListenAddress> fail(std::string* error, std::string reason) {
  if (error != nullptr) *error = std::move(reason);
  return std::nullopt;
}

}  // namespace

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string* error) {
  if (text.empty()) return fail(error, "empty; expected [host:]port, e.g. 9400 or 0.0.0.0:9400");
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7F) {
      return fail(error, "has spaces or characters that are not printable ASCII");
    }
  }
  if (text.front() == '[' || text.find(':') != text.rfind(':')) {
    return fail(error, "IPv6 addresses are not supported; use an IPv4 address or a host name");
  }
  ListenAddress address;
  std::string_view port_text = text;
  std::size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    std::string_view host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.empty()) return fail(error, "the host before ':' is empty");
    if (all_digits_and_dots(host) ? !is_ipv4(host) : !is_host_name(host)) {
      return fail(error, "host \"" + std::string(host) +
                             "\" is neither an IPv4 address (four numbers 0-255) nor a host name");
    }
    address.host = std::string(host);
  }
  long port = parse_decimal(port_text, 65535);
  if (port < 1) {
    return fail(error, "port \"" + std::string(port_text) + "\" is not a number from 1 to 65535");
  }
  address.port = static_cast<int>(port);
  return address;
}

}  // namespace vxperf
