// Virtual time and a device whose events are scripted: what `vxperf replay` runs an engine on,
// and what a program's own tests can run its instrumentation on (vxperf/testing.h adds an output
// in memory).
//
//   auto clock = std::make_shared<vxperf::ManualClock>(0.0);
//   auto device = std::make_shared<vxperf::SimulatedBackend>();
//   options.clock = clock;       // vxperf::EngineOptions
//   options.backend = device;
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "vxperf/clock.h"
#include "vxperf/device.h"

namespace vxperf {

// Virtual time set by its owner. Reads are atomic, so other threads may read it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double start_s = 0.0) : now_(start_s) {}
  double now_s() override { return now_.load(std::memory_order_relaxed); }
  void set(double t) { now_.store(t, std::memory_order_relaxed); }
  void advance(double dt) { set(now_s() + dt); }

 private:
  std::atomic<double> now_;
};

// A device whose timings and completion the caller scripts: each event carries a device timestamp
// (elapsed = end - start) and a readiness test.
class SimulatedBackend final : public DeviceBackend {
 public:
  using ReadyTest = std::function<bool()>;

  explicit SimulatedBackend(std::string name = "Simulated GPU") : name_(std::move(name)) {}

  std::string kind() const override { return "simulated"; }
  bool available() const override { return true; }
  std::string device_name(int) override;
  EventId record(int device, void* stream) override;
  bool query(EventId event) override;
  std::optional<double> elapsed_ms(EventId start, EventId end) override;
  void release(EventId event) override;
  void synchronize(int device) override;
  void reset_peak_memory(int device) override;
  std::optional<DeviceReadings> peak_memory(int device) override;

  // Adds an event directly (what replay does instead of recording): its device timestamp in ms and
  // when it reports complete (always, when `ready` is empty).
  EventId add_event(double device_ms, ReadyTest ready = {});
  // Default device time for events recorded live: called at each record().
  void set_auto_time(std::function<double()> now_ms);
  // Default readiness for events recorded live: called at each record().
  void set_auto_ready(std::function<ReadyTest()> make_ready);
  // What peak_memory answers from now on: memory peaks and any meter readings (replay's events).
  void set_readings(DeviceReadings readings);

  // Observations.
  int synchronize_count() const;
  int last_synchronized_device() const;
  int live_events() const;
  int recorded_events() const;
  int reset_count() const;

 private:
  struct Event {
    double device_ms = 0.0;
    ReadyTest ready;
  };
  mutable std::mutex mu_;
  std::string name_;
  std::unordered_map<EventId, Event> events_;
  EventId next_ = 1;
  int recorded_ = 0;
  int syncs_ = 0;
  int last_sync_device_ = -1;
  int resets_ = 0;
  DeviceReadings readings_;
  std::function<double()> auto_time_;
  std::function<ReadyTest()> auto_ready_;
};

}  // namespace vxperf
