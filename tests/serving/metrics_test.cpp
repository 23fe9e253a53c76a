// Metric families and their registry: what Prometheus would reject is refused.
#include "serving/metrics.h"

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
using serving::MetricRegistry;

TEST(Metrics, RegistryRefusesWhatPrometheusWouldReject) {
  MetricRegistry r;
  EXPECT_THROW(r.add_counter("1bad", "", {}), std::invalid_argument);
  EXPECT_THROW(r.add_counter("bad-name", "", {}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "", {"bad label"}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {}, {2, 1}), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "", {}, {1, kNaN}), std::invalid_argument);
  auto& c = r.add_counter("ok:name_total", "", {"a", "b"});
  EXPECT_THROW(r.add_gauge("ok:name_total", "", {}), std::invalid_argument);
  EXPECT_THROW(c.with({"only one"}), std::invalid_argument);
  EXPECT_THROW(c.with({"x", "y"}).inc(-1), std::invalid_argument);
  EXPECT_THROW(c.with({"x", "y"}).inc(kNaN), std::invalid_argument);
  c.with({"x", "y"}).inc(0.5);
  EXPECT_EQ(&c.with({"x", "y"}), &c.with({"x", "y"}));  // one child per label values
  EXPECT_EQ(c.with({"x", "y"}).value(), 0.5);
}

}  // namespace
}  // namespace vxperf
