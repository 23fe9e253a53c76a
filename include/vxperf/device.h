// Device backends: where the device half of a timing marker comes from.
//
// A marker is a host time plus, when a device is in use, an event recorded on a stream. Events are
// handed out by the backend (from a pool, in the CUDA backend), queried without blocking, read only
// once complete and then released back. Backends now: host-only and simulated (tests, replay); the
// CUDA backend implements the same interface.
//
// Thread safety: every backend here may be called from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace vxperf {

// A backend's handle for one recorded event. kNoEvent: no device event (host-only marker).
using EventId = std::uint32_t;
inline constexpr EventId kNoEvent = 0;

struct MemoryPeaks {
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // What this backend is, for messages ("host-only", "simulated", "cuda").
  virtual std::string kind() const = 0;
  // Whether events can be recorded at all. When false the engine never calls the rest.
  virtual bool available() const = 0;
  // The device's marketing name, matched against the peak table ("NVIDIA H100 80GB HBM3").
  virtual std::string device_name(int device) = 0;
  // Records an event on `stream` of `device` (nullptr: the device's default stream). Never blocks.
  // Returns kNoEvent when it could not record; the marker then falls back to host time.
  virtual EventId record(int device, void* stream) = 0;
  // Whether the device has reached the event. Never blocks.
  virtual bool query(EventId event) = 0;
  // Device milliseconds from `start` to `end`; only called once both are complete.
  virtual std::optional<double> elapsed_ms(EventId start, EventId end) = 0;
  // Returns an event to the pool. Every recorded event is released exactly once.
  virtual void release(EventId event) = 0;
  // Waits for all work queued on `device`. The engine calls it once per request, at its end.
  virtual void synchronize(int device) = 0;
  // Scopes the allocator's peak counters to the interval starting now (a request or a window).
  virtual void reset_peak_memory(int device) = 0;
  // Peak allocated/reserved bytes since the last reset; nullopt when the backend cannot tell.
  virtual std::optional<MemoryPeaks> peak_memory(int device) = 0;
};

// No device: every marker is host time alone.
class HostOnlyBackend final : public DeviceBackend {
 public:
  std::string kind() const override { return "host-only"; }
  bool available() const override { return false; }
  std::string device_name(int) override { return {}; }
  EventId record(int, void*) override { return kNoEvent; }
  bool query(EventId) override { return true; }
  std::optional<double> elapsed_ms(EventId, EventId) override { return std::nullopt; }
  void release(EventId) override {}
  void synchronize(int) override {}
  void reset_peak_memory(int) override {}
  std::optional<MemoryPeaks> peak_memory(int) override { return std::nullopt; }
};

// A device whose timings and completion the caller scripts: each event carries a device timestamp
// (elapsed = end - start) and a readiness test. Used by replay and by the tests.
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
  // Default device time for events recorded live: called at each record() (tests).
  void set_auto_time(std::function<double()> now_ms);
  // Default readiness for events recorded live: called at each record() (tests).
  void set_auto_ready(std::function<ReadyTest()> make_ready);
  void set_name(std::string name);
  void set_peaks(MemoryPeaks peaks);

  // Observations for tests.
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

}  // namespace vxperf
