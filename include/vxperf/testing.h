// Test doubles for programs that test their own instrumentation (and for vxperf's tests and
// replay): a clock on virtual time, a device whose events the test scripts, and an output that
// keeps every line and record in memory.
//
//   auto clock = std::make_shared<vxperf::testing::ManualClock>(0.0);
//   auto out = std::make_shared<vxperf::testing::MemoryOutput>();
//   vxperf::EngineOptions options;
//   options.settings.level = 1;
//   options.clock = clock;
//   options.log = out->log_fn();
//   options.sinks.push_back(out);
//   vxperf::Engine engine(std::move(options));
//   { vxperf::RequestScope r(engine); clock->advance(1.5); }
//   assert(out->requests().at(0).e2e_s == 1.5);
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vxperf/clock.h"
#include "vxperf/device.h"
#include "vxperf/records.h"
#include "vxperf/settings.h"
#include "vxperf/sink.h"

namespace vxperf::testing {

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
  std::optional<MemoryPeaks> peak_memory(int device) override;

  // Adds an event directly (what replay does instead of recording): its device timestamp in ms and
  // when it reports complete (always, when `ready` is empty).
  EventId add_event(double device_ms, ReadyTest ready = {});
  // Scripts an event recorded earlier.
  void set_event(EventId event, double device_ms, ReadyTest ready = {});
  // Default device time for events recorded live: called at each record().
  void set_auto_time(std::function<double()> now_ms);
  // Default readiness for events recorded live: called at each record().
  void set_auto_ready(std::function<ReadyTest()> make_ready);
  void set_name(std::string name);
  void set_peaks(MemoryPeaks peaks);

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
  MemoryPeaks peaks_;
  std::function<double()> auto_time_;
  std::function<ReadyTest()> auto_ready_;
};

// Keeps every log line and every record (as its JSON line and as the struct) in memory. Hand
// log_fn() to EngineOptions::log and the object itself to EngineOptions::sinks.
class MemoryOutput final : public RecordSink {
 public:
  // Appends to logs(); valid while this object lives.
  LogFn log_fn();
  void log(std::string_view line);
  void on_request(const RequestRecord& record, const RequestDetail& detail) override;
  void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) override;

  std::vector<std::string> logs() const;
  std::vector<std::string> records() const;  // JSON lines, in settle order
  std::vector<RequestRecord> requests() const;
  std::vector<RequestDetail> request_details() const;
  std::vector<TrainWindowRecord> windows() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> logs_;
  std::vector<std::string> records_;
  std::vector<RequestRecord> requests_;
  std::vector<RequestDetail> request_details_;
  std::vector<TrainWindowRecord> windows_;
};

// An environment of the given variables, for Settings::parse.
EnvLookup env_of(std::map<std::string, std::string> vars);

}  // namespace vxperf::testing
