// A Prometheus metric family as collected: its name, help, type, label names and one sample per
// child. PrometheusSink::collect() returns these; the text exposition and the Python package's
// prometheus_client collector are both written from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vxperf {

enum class MetricType { kCounter, kGauge, kHistogram };

// One child of a family, as collected.
struct MetricSample {
  std::vector<std::string> label_values;  // parallel to FamilySnapshot::label_names
  double value = 0;                       // counter and gauge
  // Histogram: cumulative counts per upper bound, the +Inf bucket last (so it equals `count`).
  std::vector<std::uint64_t> cumulative_counts;
  double sum = 0;
  std::uint64_t count = 0;
};

struct FamilySnapshot {
  std::string name;  // a counter's with its _total suffix
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::string> label_names;
  std::vector<double> upper_bounds;   // histogram only, finite, increasing; +Inf is implied
  std::vector<MetricSample> samples;  // ordered by label values
};

}  // namespace vxperf
