// The Prometheus endpoint over loopback (127.0.0.1 only, ports chosen by the kernel).
#include "vxperf/prometheus_endpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "prometheus_text.h"
#ifdef VXPERF_HAVE_HTTPLIB
#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#endif

namespace vxperf {
namespace {

using namespace test_prometheus;

struct Notices {
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(PrometheusEndpoint, BadAddressTextIsOneNoticeAndNoEndpoint) {
  Notices notices;
  EXPECT_EQ(start_prometheus("localhost:http", notices.fn()), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_EQ(notices.lines[0].rfind("vxperf: ", 0), 0u) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find("localhost:http"), std::string::npos) << notices.lines[0];
}

#ifndef VXPERF_HAVE_HTTPLIB

TEST(PrometheusEndpoint, CompiledOutSaysSoOnce) {
  EXPECT_FALSE(prometheus_endpoint_available());
  Notices notices;
  EXPECT_EQ(start_prometheus(ListenAddress{"127.0.0.1", 0}, nullptr, notices.fn()), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_NE(notices.lines[0].find("cpp-httplib"), std::string::npos) << notices.lines[0];
}

#else  // VXPERF_HAVE_HTTPLIB

std::unique_ptr<PrometheusEndpoint> start_loopback(std::shared_ptr<PrometheusSink> sink,
                                                   Notices* notices, int port = 0) {
  return start_prometheus(ListenAddress{"127.0.0.1", port}, std::move(sink), notices->fn());
}

std::unique_ptr<httplib::Client> client_for(const PrometheusEndpoint& endpoint) {
  auto cli = std::make_unique<httplib::Client>("127.0.0.1", endpoint.address().port);
  cli->set_connection_timeout(10);
  cli->set_read_timeout(30);
  cli->set_write_timeout(10);
  return cli;
}

// Sends `bytes` as they are and reads the answer until the server closes; the status code, or 0.
// `hang_up`: close our side after sending (cpp-httplib then answers nothing: the peer is gone).
int raw_status(int port, const std::string& bytes, bool hang_up = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    if (hang_up) ::shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
      answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (answer.compare(0, 9, "HTTP/1.1 ") != 0 || answer.size() < 12) return 0;
  return std::atoi(answer.substr(9, 3).c_str());
}

void expect_serving(const PrometheusEndpoint& endpoint) {
  auto res = client_for(endpoint)->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST(PrometheusEndpoint, ServesMetricsOnLoopback) {
  EXPECT_TRUE(prometheus_endpoint_available());
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  Request r = make_request(0, 12);
  sink->on_request(r.record, r.detail);
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  EXPECT_TRUE(notices.lines.empty());
  EXPECT_EQ(endpoint->address().host, "127.0.0.1");
  EXPECT_GT(endpoint->address().port, 0);
  EXPECT_EQ(endpoint->sink(), sink);

  auto res = client_for(*endpoint)->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u)
      << res->get_header_value("Content-Type");
  EXPECT_EQ(res->body, sink->render());
  auto s = parse_exposition(res->body);
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"), 1);
  // A query string is the scraper's business; the path is what counts.
  res = client_for(*endpoint)->Get("/metrics?name[]=vxperf_dit_mfu");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(PrometheusEndpoint, OnlyGetMetrics) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  auto cli = client_for(*endpoint);
  auto res = cli->Post("/metrics", "x=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET");
  auto expect_405 = [](const httplib::Result& r) {
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 405);
  };
  expect_405(cli->Put("/metrics", "", "text/plain"));
  expect_405(cli->Delete("/metrics"));
  expect_405(cli->Head("/metrics"));
  expect_405(cli->Options("/metrics"));
  for (const char* path :
       {"/", "/metrics/", "/Metrics", "/metricsx", "/api/v1/query", "/../metrics"}) {
    res = cli->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  res = cli->Post("/other", "body", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, OversizedAndMalformedRequestsAreRefusedAndServingGoesOn) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  int port = endpoint->address().port;
  const std::string long_target = "/metrics?" + std::string(64 * 1024, 'a');
  EXPECT_EQ(raw_status(port, "GET " + long_target + " HTTP/1.1\r\nHost: x\r\n\r\n"), 414);
  expect_serving(*endpoint);
  EXPECT_EQ(raw_status(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                 std::string(64 * 1024, 'b') + "\r\n\r\n"),
            400);
  expect_serving(*endpoint);
  EXPECT_EQ(raw_status(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                                 std::string(100000, 'c')),
            413);
  expect_serving(*endpoint);
  for (const std::string& junk :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET /metrics\r\n\r\n"),
        std::string("GET /metrics HTTP/9.9\r\n\r\n"), std::string("BREW /metrics HTTP/1.1\r\n\r\n"),
        std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        std::string("\x00\x01\x02\xFF\r\n\r\n", 8)}) {
    EXPECT_EQ(raw_status(port, junk), 400) << junk;
  }
  EXPECT_EQ(raw_status(port, "", /*hang_up=*/true), 0);           // connect, say nothing, hang up
  EXPECT_EQ(raw_status(port, "GET /metr", /*hang_up=*/true), 0);  // half a request
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, PortInUseIsReportedOnceAndNothingElseHappens) {
  Notices first_notices;
  auto first = start_loopback(nullptr, &first_notices);
  ASSERT_NE(first, nullptr);
  int port = first->address().port;
  // Another endpoint on the same port (the library's SO_REUSEPORT would have let it share).
  Notices notices;
  EXPECT_EQ(start_loopback(nullptr, &notices, port), nullptr);
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_EQ(notices.lines[0].rfind("vxperf: ", 0), 0u) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find("in use"), std::string::npos) << notices.lines[0];
  EXPECT_NE(notices.lines[0].find(std::to_string(port)), std::string::npos) << notices.lines[0];
  // A plain socket holding a port: the same.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  Notices held;
  EXPECT_EQ(start_loopback(nullptr, &held, ntohs(addr.sin_port)), nullptr);
  EXPECT_EQ(held.lines.size(), 1u);
  ::close(fd);
  EXPECT_TRUE(first_notices.lines.empty());
  expect_serving(*first);
}

TEST(PrometheusEndpoint, HostNameResolvesToIpv4) {
  Notices notices;
  auto endpoint = start_prometheus(ListenAddress{"localhost", 0},
                                   std::make_shared<PrometheusSink>(), notices.fn());
  ASSERT_NE(endpoint, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  EXPECT_EQ(endpoint->address().host, "127.0.0.1");
  expect_serving(*endpoint);
}

TEST(PrometheusEndpoint, StopsCleanlyAndFreesThePort) {
  Notices notices;
  auto endpoint = start_loopback(nullptr, &notices);
  ASSERT_NE(endpoint, nullptr);
  int port = endpoint->address().port;
  // A connection that says nothing is open while the endpoint goes away.
  int idle = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  endpoint.reset();
  ::close(idle);
  EXPECT_EQ(raw_status(port, "GET /metrics HTTP/1.1\r\n\r\n"), 0);  // nobody listens
  auto again = start_loopback(nullptr, &notices, port);
  ASSERT_NE(again, nullptr) << (notices.lines.empty() ? "" : notices.lines[0]);
  expect_serving(*again);
}

// The threads in this process, by id.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') ids.insert(e->d_name);
    }
    ::closedir(dir);
  }
  return ids;
}

// Whether thread `tid` blocks SIGPIPE (bit 13 of SigBlk in /proc).
bool blocks_sigpipe(const std::string& tid) {
  std::ifstream status("/proc/self/task/" + tid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGPIPE - 1)) & 1;
    }
  }
  return false;
}

TEST(PrometheusEndpoint, ScrapersHangingUpNeverRaiseSigpipe) {
  auto before = thread_ids();
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  // A large exposition (thousands of stage series), so responses outlast the clients below.
  for (int i = 0; i < 200; ++i) {
    Request r = make_request(0, 1, 1);
    for (auto& stage : r.record.stages) stage.name += "_" + std::to_string(i);
    sink->on_request(r.record, r.detail);
  }
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr);
  expect_serving(*endpoint);  // the workers exist now
  std::vector<std::string> server_threads;
  for (const auto& id : thread_ids()) {
    if (!before.count(id)) server_threads.push_back(id);
  }
  ASSERT_FALSE(server_threads.empty());
  for (const auto& id : server_threads) EXPECT_TRUE(blocks_sigpipe(id)) << "thread " << id;
  EXPECT_FALSE(blocks_sigpipe(std::to_string(::gettid())));  // the caller's mask is untouched

  // Clients that ask and hang up with a reset mid-answer: the process lives on. (cpp-httplib checks
  // the peer before each send, so SIGPIPE needs a reset landing between check and send: this loop
  // cannot force that race; the mask checked above is what makes it harmless.)
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 50; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int small = 4096;  // a small window: most of the answer is still unsent when we hang up
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(endpoint->address().port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    char first;
    ASSERT_EQ(::recv(fd, &first, 1, 0), 1);  // the answer has started
    linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
  }
  expect_serving(*endpoint);
}

// Several threads settle requests while another scrapes: every scrape parses, shows each request
// whole (its counter, latency and stage calls together), and never goes backwards; the last one
// counts exactly what was fed. The feeders pause halfway until a few scrapes have run, so some
// scrapes surely land mid-feed, however the threads are scheduled.
TEST(PrometheusEndpoint, ConcurrentUpdatesAndScrapesStayConsistent) {
  constexpr int kFeeders = 4;
  constexpr int kRequestsEach = 200;
  constexpr int kFailEvery = 7;
  constexpr int kSteps = 50;
  constexpr int kScrapesMidway = 5;
  constexpr int kMaxScrapes = 1000;
  Notices notices;
  auto sink = std::make_shared<PrometheusSink>();
  auto endpoint = start_loopback(sink, &notices);
  ASSERT_NE(endpoint, nullptr);

  std::atomic<int> scrapes{0};
  std::atomic<bool> scraping_over{false};
  std::atomic<int> feeders_done{0};
  std::vector<std::thread> feeders;
  for (int t = 0; t < kFeeders; ++t) {
    feeders.emplace_back([&, t] {
      for (int i = 0; i < kRequestsEach; ++i) {
        if (i == kRequestsEach / 2) {
          while (scrapes.load() < kScrapesMidway && !scraping_over.load())
            std::this_thread::yield();
        }
        Request r = make_request(0, 0.5 + t + i * 0.01, kSteps, i % kFailEvery == 0);
        sink->on_request(r.record, r.detail);
      }
      feeders_done.fetch_add(1);
    });
  }

  auto check = [&](const std::map<std::string, double>& s, double* last_ok) {
    const std::string ok_key = R"(vxperf_requests_total{rank="0",status="ok"})";
    const std::string count_key = R"(vxperf_request_seconds_count{rank="0"})";
    double ok = has_prefix(s, ok_key) ? value_of(s, ok_key) : 0;
    double count = has_prefix(s, count_key) ? value_of(s, count_key) : 0;
    EXPECT_EQ(ok, count);
    if (ok > 0) {
      EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"),
                ok * kSteps);
      EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="vae_decode"})"), ok);
      EXPECT_EQ(value_of(s, R"(vxperf_request_seconds_bucket{rank="0",le="+Inf"})"), count);
    }
    EXPECT_GE(ok, *last_ok);
    *last_ok = ok;
  };

  auto cli = client_for(*endpoint);
  double last_ok = 0;
  bool mid_feed_seen = false;
  while (feeders_done.load() < kFeeders && scrapes.load() < kMaxScrapes) {
    auto res = cli->Get("/metrics");
    if (!res || res->status != 200) {
      ADD_FAILURE() << "scrape " << scrapes.load() << ": "
                    << (res ? std::to_string(res->status) : httplib::to_string(res.error()));
      break;
    }
    check(parse_exposition(res->body), &last_ok);
    mid_feed_seen = mid_feed_seen || (last_ok > 0 && feeders_done.load() == 0);
    scrapes.fetch_add(1);
  }
  scraping_over.store(true);
  for (auto& f : feeders) f.join();
  auto res = cli->Get("/metrics");
  ASSERT_TRUE(res);
  auto s = parse_exposition(res->body);
  check(s, &last_ok);
  const int failed_each = (kRequestsEach + kFailEvery - 1) / kFailEvery;
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="ok"})"),
            kFeeders * (kRequestsEach - failed_each));
  EXPECT_EQ(value_of(s, R"(vxperf_requests_total{rank="0",status="error"})"),
            kFeeders * failed_each);
  EXPECT_EQ(value_of(s, R"(vxperf_stage_seconds_count{rank="0",stage="transformer"})"),
            kFeeders * (kRequestsEach - failed_each) * kSteps);
  EXPECT_GE(scrapes.load(), kScrapesMidway);
  EXPECT_TRUE(mid_feed_seen);
  EXPECT_TRUE(notices.lines.empty());
}

#endif  // VXPERF_HAVE_HTTPLIB

}  // namespace
}  // namespace vxperf
