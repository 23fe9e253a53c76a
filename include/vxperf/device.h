// Device backends: where the device half of a timing marker comes from.
//
// A marker is a host time plus, when a device is in use, an event recorded on a stream. Events are
// handed out by the backend (from a pool, in the CUDA backend), queried without blocking, read only
// once complete and then released back. Backends: host-only (here), CUDA (vxperf/cuda_backend.h)
// and simulated (vxperf/simulation.h; tests and replay). A new backend implements this interface and
// is handed to Engine::set_device_backend.
//
// Thread safety: every backend here may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vxperf {

// A backend's handle for one recorded event. kNoEvent: no device event (host-only marker).
using EventId = std::uint32_t;
inline constexpr EventId kNoEvent = 0;

// What a device says about one interval (a request, a training window), read at the interval's
// boundaries and never on a stage's hot path: the allocator's memory peaks (the backend's), and
// what a DeviceMeter read (NVML, vxperf/nvml.h: energy, power, clocks, temperature, throttling).
// A reading added here is one member and one row of its field table (src/schema/record_fields.h),
// and the meter that reads it: a meter's readings join the backend's through that table, and the
// records, their JSON, the report's reader, the live trace and its replay carry it from there.
// The meter's readings are each present only when read, so that a record without them is the
// reference's.
struct DeviceReadings {
  std::uint64_t allocated = 0;  // peak bytes allocated (tensors)
  std::uint64_t reserved = 0;   // peak bytes reserved (the allocator's cache)
  // Joules the device used over the interval: the energy counter's difference ("counter"), power
  // samples integrated over time where the device has no counter ("power_samples"), or, over an
  // interval shorter than the counter's update period during which it did not move, the power read
  // times the time ("power_x_time"); energy_from says which.
  std::optional<double> energy_j;
  std::optional<std::string> energy_from;
  // Another interval was open on the device for some of this one's time (two requests served at
  // once, an eval request during training): each moment's energy was split equally among the
  // intervals open then, so that they add up to the device's (the time share, vxperf/nvml.h).
  bool energy_shared = false;
  std::optional<double> power_w_mean;            // watts: energy over the interval's seconds
  std::optional<std::int64_t> sm_clock_mhz_min;  // the lowest SM clock seen
  std::optional<std::int64_t> temp_c_max;        // the highest GPU temperature seen
  // The clock-limiting reasons seen ("sw_power_cap", "hw_slowdown", ...; empty: none), in the
  // order of their NVML bits.
  std::optional<std::vector<std::string>> throttle;
  // Joules the host's CPU packages and DRAM used over the interval, from the kernel's powercap
  // counters (vxperf/powercap.h), time-shared as energy_j is.
  std::optional<double> cpu_energy_j;
};
// The old name, from when memory peaks were all a device said; kept for source compatibility.
using MemoryPeaks [[deprecated("use DeviceReadings")]] = DeviceReadings;

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
  // Peak allocated/reserved bytes since the last reset, as DeviceReadings' first two members (a
  // simulated device's may carry more); nullopt when the backend cannot tell.
  virtual std::optional<DeviceReadings> peak_memory(int device) = 0;
  // The device's PCI bus id ("0000:3B:00.0"), which names it to a DeviceMeter whatever
  // CUDA_VISIBLE_DEVICES says; "" when the backend cannot tell (then nothing is metered).
  virtual std::string pci_bus_id(int device) {
    (void)device;
    return {};
  }
  // Starts / stops the profiler's capture on `device` (the CUDA driver's cuProfilerStart and
  // cuProfilerStop: what `nsys profile --capture-range=cudaProfilerApi` records between);
  // false when the backend cannot (VIDEOX_PERF_PROFILE, vxperf/settings.h).
  virtual bool profiler_start(int device) {
    (void)device;
    return false;
  }
  virtual bool profiler_stop(int device) {
    (void)device;
    return false;
  }
};

// What a device's management library says of an interval beyond the backend's peaks: energy,
// power, clocks, temperature and throttling (NVML: vxperf/nvml.h), or what the host says of it
// (the powercap counters: cpu_energy_j, vxperf/powercap.h). The engine opens an interval at a
// request's start and closes it at its end; a training window's opens at its first step's start
// and closes at its last step's close. Never on a stage's hot path.
//
// Thread safety: every member may be called from any thread at once.
class DeviceMeter {
 public:
  virtual ~DeviceMeter() = default;
  // Opens an interval on the device at `pci_bus_id` (the backend's `device`, for messages).
  // Returns its handle; 0 when nothing will be read (the meter says why, once per device).
  virtual std::uint64_t begin(const std::string& pci_bus_id, int device) = 0;
  // Closes `interval` (not 0), adding what was read over it to `readings`.
  virtual void end(std::uint64_t interval, DeviceReadings& readings) = 0;
  // Closes `interval` (not 0) without reading it.
  virtual void cancel(std::uint64_t interval) = 0;
  // Gets ready to open intervals on the device at `pci_bus_id` later (a training device set before
  // its first step): finds it and starts what its intervals need (NVML: the power sampler of a
  // device without the counter), so that none of that lands in the first interval's time. Reads
  // nothing into any interval. The default does nothing.
  virtual void prepare(const std::string& pci_bus_id, int device) {
    (void)pci_bus_id;
    (void)device;
  }

  // A training window's boundaries: it ends at its last step's close, which is known to be the
  // last only once no more steps come (the partial window at the end of training), and the next
  // window begins where it ends. The defaults serve a meter that implements only the above.
  //
  // Notes where `interval` (not 0) would end if end_at_mark closed it: its readings as they
  // stand now (a step's close).
  virtual void mark(std::uint64_t interval) { (void)interval; }
  // Closes `interval` (not 0) as of its last mark (none: now), adding its readings to
  // `readings`.
  virtual void end_at_mark(std::uint64_t interval, DeviceReadings& readings) {
    end(interval, readings);
  }
  // Closes `interval` (not 0) now and opens the next on the same device at the same reading,
  // so that consecutive windows add up to the device's counter; returns the new interval (0:
  // none). `pci_bus_id` and `device` are the interval's, as begin was given them.
  virtual std::uint64_t roll(std::uint64_t interval, DeviceReadings& readings,
                             const std::string& pci_bus_id, int device) {
    end(interval, readings);
    return begin(pci_bus_id, device);
  }
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
  std::optional<DeviceReadings> peak_memory(int) override { return std::nullopt; }
};

}  // namespace vxperf
