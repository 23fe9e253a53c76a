#include "base/locked.h"
#include "vxperf/simulation.h"

namespace vxperf {

using internal::copy_under;

std::string SimulatedBackend::device_name(int) { return copy_under(mu_, name_); }

EventId SimulatedBackend::record(int, void*) {
  std::lock_guard<std::mutex> lock(mu_);
  EventId id = next_++;
  events_[id] = Event{auto_time_ ? auto_time_() : 0.0, auto_ready_ ? auto_ready_() : ReadyTest{}};
  ++recorded_;
  return id;
}

bool SimulatedBackend::query(EventId event) {
  ReadyTest ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) return false;
    ready = it->second.ready;
  }
  // Called outside the lock: a readiness test may look at the engine that is querying.
  return !ready || ready();
}

std::optional<double> SimulatedBackend::elapsed_ms(EventId start, EventId end) {
  std::lock_guard<std::mutex> lock(mu_);
  auto a = events_.find(start);
  auto b = events_.find(end);
  if (a == events_.end() || b == events_.end()) return std::nullopt;
  return b->second.device_ms - a->second.device_ms;
}

void SimulatedBackend::release(EventId event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.erase(event);
}

void SimulatedBackend::synchronize(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  ++syncs_;
  last_sync_device_ = device;
}

void SimulatedBackend::reset_peak_memory(int) {
  std::lock_guard<std::mutex> lock(mu_);
  ++resets_;
}

std::optional<DeviceReadings> SimulatedBackend::peak_memory(int) {
  return copy_under(mu_, readings_);
}

EventId SimulatedBackend::add_event(double device_ms, ReadyTest ready) {
  std::lock_guard<std::mutex> lock(mu_);
  EventId id = next_++;
  events_[id] = Event{device_ms, std::move(ready)};
  return id;
}

void SimulatedBackend::set_auto_time(std::function<double()> now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto_time_ = std::move(now_ms);
}

void SimulatedBackend::set_auto_ready(std::function<ReadyTest()> make_ready) {
  std::lock_guard<std::mutex> lock(mu_);
  auto_ready_ = std::move(make_ready);
}

void SimulatedBackend::set_readings(DeviceReadings readings) {
  std::lock_guard<std::mutex> lock(mu_);
  readings_ = readings;
}

int SimulatedBackend::synchronize_count() const { return copy_under(mu_, syncs_); }

int SimulatedBackend::last_synchronized_device() const {
  return copy_under(mu_, last_sync_device_);
}

int SimulatedBackend::live_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(events_.size());
}

int SimulatedBackend::recorded_events() const { return copy_under(mu_, recorded_); }

int SimulatedBackend::reset_count() const { return copy_under(mu_, resets_); }

}  // namespace vxperf
