// "[host:]port" as VIDEOX_PERF_PROMETHEUS takes it.
#include "vxperf/listen_address.h"

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

namespace vxperf {
namespace {

using namespace test_prometheus;

TEST(ListenAddress, AcceptsPortAndHostPort) {
  std::string error;
  auto a = parse_listen_address("9400", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  a = parse_listen_address("0.0.0.0:1", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 1);
  a = parse_listen_address("metrics-01.internal.example:65535", &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "metrics-01.internal.example");
  EXPECT_EQ(a->port, 65535);
  EXPECT_TRUE(parse_listen_address("localhost:8080", nullptr));
}

TEST(ListenAddress, RefusesAnythingElseWithAReason) {
  for (const char* bad : {"",
                          "0",
                          "65536",
                          "99999999",
                          "-1",
                          "+80",
                          "80 ",
                          " 80",
                          "8o",
                          "0x50",
                          ":9400",
                          "host:",
                          "host:0",
                          "1.2.3.4:",
                          "256.1.1.1:80",
                          "1.2.3:80",
                          "1.2.3.4.5:80",
                          "01.2.3.4:80",
                          "::1",
                          "[::1]:80",
                          "a:b:80",
                          "-host:80",
                          "host-:80",
                          "ho_st:80",
                          "a..b:80",
                          "h\xC3\xA9:80",
                          "host\n:80"}) {
    std::string error;
    EXPECT_FALSE(parse_listen_address(bad, &error)) << '"' << bad << '"';
    EXPECT_FALSE(error.empty()) << '"' << bad << '"';
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  std::string error;
  parse_listen_address("70000", &error);
  EXPECT_NE(error.find("1 to 65535"), std::string::npos) << error;
  parse_listen_address("[::1]:80", &error);
  EXPECT_NE(error.find("IPv6"), std::string::npos) << error;
  parse_listen_address("300.1.1.1:80", &error);
  EXPECT_NE(error.find("IPv4"), std::string::npos) << error;
  EXPECT_FALSE(parse_listen_address(std::string(254, 'a') + ":80", &error));
  EXPECT_FALSE(parse_listen_address(std::string(64, 'a') + ".b:80", &error));
}

}  // namespace
}  // namespace vxperf
