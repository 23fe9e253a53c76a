// A small set of Prometheus metric families: counters, gauges and fixed-bucket histograms, each
// family with named labels and one child per distinct set of label values. Collection only; the
// text format is written by exposition.h from the snapshots collect() returns (the split
// prometheus-cpp makes between a registry and its serializers).
//
// Thread safety: every class here may be used from any number of threads at once. Children are
// never removed, so a reference returned by with() stays valid as long as its registry. Each
// family snapshot is self-consistent (a histogram's count equals its +Inf bucket); updates made
// under one MetricRegistry::atomic_update() are seen by collect() all together or not at all.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vxperf/metric_family.h"

namespace vxperf::serving {

// The collected shapes are public (vxperf/metric_family.h: the Python collector reads them too).
using vxperf::FamilySnapshot;
using vxperf::MetricSample;
using vxperf::MetricType;

// A monotonically increasing value.
class Counter {
 public:
  // Adds `amount`, which must be finite and not negative (std::invalid_argument otherwise).
  void inc(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down; NaN and infinities are allowed.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts of observations per fixed bucket, with their sum. An observation falls in the first
// bucket whose upper bound is >= it (Prometheus' "le"); NaN and values above the last bound fall
// in the +Inf bucket.
class Histogram {
 public:
  explicit Histogram(std::shared_ptr<const std::vector<double>> upper_bounds);
  void observe(double value);
  // Observes every value times `scale` under one lock (a request's calls, ms to s).
  void observe_all(const std::vector<double>& values, double scale = 1);
  void collect(MetricSample* sample) const;

 private:
  void observe_locked(double value);

  std::shared_ptr<const std::vector<double>> upper_bounds_;  // the family's; never changes
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; +Inf last
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// What every family shares: name, help, label names, its snapshot.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  virtual FamilySnapshot collect() const = 0;

 protected:
  FamilySnapshot snapshot_head() const;
  // Throws std::invalid_argument unless there is one value per label name.
  void check_arity(std::size_t values) const;

  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// Orders label-value lists of std::string and std::string_view alike, so a lookup with string
// views allocates nothing when the child exists.
struct LabelValuesLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

template <class Child>
inline constexpr MetricType kMetricTypeOf = MetricType::kCounter;
template <>
inline constexpr MetricType kMetricTypeOf<Gauge> = MetricType::kGauge;
template <>
inline constexpr MetricType kMetricTypeOf<Histogram> = MetricType::kHistogram;

template <class Child>
class Family : public FamilyBase {
 public:
  using Factory = std::function<std::unique_ptr<Child>()>;

  Family(
      std::string name, std::string help, std::vector<std::string> label_names,
      Factory factory = [] { return std::make_unique<Child>(); })
      : FamilyBase(std::move(name), std::move(help), kMetricTypeOf<Child>, std::move(label_names)),
        factory_(std::move(factory)) {}

  // The child for these label values (one per label name, in order), made on first use.
  Child& with(std::initializer_list<std::string_view> label_values) {
    check_arity(label_values.size());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(label_values);
    if (it == children_.end()) {
      std::vector<std::string> key(label_values.begin(), label_values.end());
      it = children_.emplace(std::move(key), factory_()).first;
    }
    return *it->second;
  }

  FamilySnapshot collect() const override {
    FamilySnapshot snapshot = snapshot_head();
    std::lock_guard<std::mutex> lock(mu_);
    snapshot.samples.reserve(children_.size());
    for (const auto& [labels, child] : children_) {
      MetricSample sample;
      sample.label_values = labels;
      collect_child(*child, &sample);
      snapshot.samples.push_back(std::move(sample));
    }
    return snapshot;
  }

 private:
  static void collect_child(const Counter& c, MetricSample* s) { s->value = c.value(); }
  static void collect_child(const Gauge& g, MetricSample* s) { s->value = g.value(); }
  static void collect_child(const Histogram& h, MetricSample* s) { h.collect(s); }

  Factory factory_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Child>, LabelValuesLess> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;

class HistogramFamily : public Family<Histogram> {
 public:
  // `upper_bounds`: finite and strictly increasing (a trailing +Inf is dropped: it is implied).
  // "le" may not be a label name. std::invalid_argument otherwise.
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> upper_bounds);
  FamilySnapshot collect() const override;

 private:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::shared_ptr<const std::vector<double>> upper_bounds);

  // Shared with every child, which reads it without a lock: it never changes.
  std::shared_ptr<const std::vector<double>> upper_bounds_;
};

// The families of one exposition, in registration order.
class MetricRegistry {
 public:
  // Names must be valid Prometheus metric names, label names valid label names not starting with
  // "__", and each family name unique in the registry; std::invalid_argument otherwise.
  CounterFamily& add_counter(std::string name, std::string help,
                             std::vector<std::string> label_names);
  GaugeFamily& add_gauge(std::string name, std::string help, std::vector<std::string> label_names);
  HistogramFamily& add_histogram(std::string name, std::string help,
                                 std::vector<std::string> label_names,
                                 std::vector<double> upper_bounds);

  // Hold while making several updates that a scrape must see together (one request's counter,
  // latency and stages). Several updaters serialize on it; collect() takes it too.
  std::unique_lock<std::mutex> atomic_update() { return std::unique_lock<std::mutex>(update_mu_); }

  std::vector<FamilySnapshot> collect() const;

 private:
  template <class F>
  F& add(std::unique_ptr<F> family);

  mutable std::mutex update_mu_;  // taken before mu_
  mutable std::mutex mu_;         // guards families_
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

bool is_valid_metric_name(std::string_view name);
bool is_valid_label_name(std::string_view name);

}  // namespace vxperf::serving
