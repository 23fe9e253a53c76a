#include "serving/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace vxperf::serving {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool is_valid_metric_name(std::string_view name) {
  if (name.empty() || !(name_start(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return name_char(c) || c == ':'; });
}

bool is_valid_label_name(std::string_view name) {
  if (name.empty() || !name_start(name[0])) return false;
  if (name.substr(0, 2) == "__") return false;  // reserved for Prometheus itself
  return std::all_of(name.begin(), name.end(), name_char);
}

void Counter::inc(double amount) {
  if (!(amount >= 0) || std::isinf(amount)) {
    throw std::invalid_argument("a counter only goes up by a finite amount");
  }
  double current = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::shared_ptr<const std::vector<double>> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_->size() + 1, 0) {}

void Histogram::observe_locked(double value) {
  const auto& bounds = *upper_bounds_;
  std::size_t bucket = bounds.size();  // +Inf, also for NaN
  if (!std::isnan(value)) {
    bucket = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                      bounds.begin());
  }
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  observe_locked(value);
}

void Histogram::observe_all(const std::vector<double>& values, double scale) {
  std::lock_guard<std::mutex> lock(mu_);
  for (double v : values) observe_locked(v * scale);
}

void Histogram::collect(MetricSample* sample) const {
  std::lock_guard<std::mutex> lock(mu_);
  sample->cumulative_counts.resize(counts_.size());
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    sample->cumulative_counts[i] = running;
  }
  sample->sum = sum_;
  sample->count = count_;
}

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {
  if (!is_valid_metric_name(name_)) {
    throw std::invalid_argument("not a Prometheus metric name: \"" + name_ + "\"");
  }
  for (std::size_t i = 0; i < label_names_.size(); ++i) {
    if (!is_valid_label_name(label_names_[i])) {
      throw std::invalid_argument("not a Prometheus label name: \"" + label_names_[i] + "\"");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (label_names_[j] == label_names_[i]) {
        throw std::invalid_argument("label \"" + label_names_[i] + "\" given twice");
      }
    }
  }
}

FamilySnapshot FamilyBase::snapshot_head() const {
  FamilySnapshot s;
  s.name = name_;
  s.help = help_;
  s.type = type_;
  s.label_names = label_names_;
  return s;
}

void FamilyBase::check_arity(std::size_t values) const {
  if (values != label_names_.size()) {
    throw std::invalid_argument(name_ + ": " + std::to_string(label_names_.size()) +
                                " label values expected, got " + std::to_string(values));
  }
}

namespace {

std::shared_ptr<const std::vector<double>> checked_bounds(std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
    bounds.pop_back();
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
    }
  }
  return std::make_shared<const std::vector<double>>(std::move(bounds));
}

std::vector<std::string> without_le(std::vector<std::string> label_names) {
  for (const auto& n : label_names) {
    if (n == "le") throw std::invalid_argument("\"le\" is the histogram's own label");
  }
  return label_names;
}

}  // namespace

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names,
                                 std::vector<double> upper_bounds)
    : HistogramFamily(std::move(name), std::move(help), without_le(std::move(label_names)),
                      checked_bounds(std::move(upper_bounds))) {}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names,
                                 std::shared_ptr<const std::vector<double>> upper_bounds)
    : Family<Histogram>(std::move(name), std::move(help), std::move(label_names),
                        [upper_bounds] { return std::make_unique<Histogram>(upper_bounds); }),
      upper_bounds_(std::move(upper_bounds)) {}

FamilySnapshot HistogramFamily::collect() const {
  FamilySnapshot s = Family<Histogram>::collect();
  s.upper_bounds = *upper_bounds_;
  return s;
}

template <class F>
F& MetricRegistry::add(std::unique_ptr<F> family) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    if (f->name() == family->name()) {
      throw std::invalid_argument("metric family \"" + family->name() + "\" registered twice");
    }
  }
  F& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

CounterFamily& MetricRegistry::add_counter(std::string name, std::string help,
                                           std::vector<std::string> label_names) {
  return add(
      std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(label_names)));
}

GaugeFamily& MetricRegistry::add_gauge(std::string name, std::string help,
                                       std::vector<std::string> label_names) {
  return add(
      std::make_unique<GaugeFamily>(std::move(name), std::move(help), std::move(label_names)));
}

HistogramFamily& MetricRegistry::add_histogram(std::string name, std::string help,
                                               std::vector<std::string> label_names,
                                               std::vector<double> upper_bounds) {
  return add(std::make_unique<HistogramFamily>(std::move(name), std::move(help),
                                               std::move(label_names), std::move(upper_bounds)));
}

std::vector<FamilySnapshot> MetricRegistry::collect() const {
  std::lock_guard<std::mutex> update(update_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FamilySnapshot> out;
  out.reserve(families_.size());
  for (const auto& f : families_) out.push_back(f->collect());
  return out;
}

}  // namespace vxperf::serving
