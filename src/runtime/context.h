// What the inference and training halves share with the engine that owns them, and nothing else:
// the halves (src/inference/, src/training/) sit beside each other under the engine
// (src/engine/, the composition root), which makes them with itself as their Context.
//
// The state read on the hot path (settings, clock, device backend, observers, the fork flag) is
// held here and read without a virtual call; what the engine does for the halves (pricing peaks,
// writing records, the topology, the rank exchange) is virtual.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "pricing/pricing.h"
#include "runtime/observers.h"
#include "vxperf/clock.h"
#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/records.h"
#include "vxperf/settings.h"
#include "vxperf/sink.h"
#include "vxperf/topology.h"
#include "vxperf/xrank.h"

namespace vxperf::internal {

class Context {
 public:
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Settings& settings() const { return settings_; }
  // When the process started, on the clock (EngineOptions::process_start_s).
  std::optional<double> process_start() const { return process_start_; }
  // The level in effect (settings().level, or higher when raised since).
  int level() const { return level_.load(std::memory_order_relaxed); }
  Clock& clock() { return *clock_; }
  // The backend in use. Read without a lock: it is replaced only by the engine, and the one
  // replaced stays alive.
  DeviceBackend& device() { return *device_.load(std::memory_order_acquire); }
  // Whether this engine was made before the process forked, in the child: then it is off there.
  // A plain flag: only the child's fork handler sets it, when the forking thread is the child's
  // only one; the hot path pays one load.
  bool forked() const noexcept { return forked_; }
  // The observers now (nullptr: none).
  const ObserverList* observers() const { return observers_.load(std::memory_order_acquire); }

  // The backend to time `device` on (the engine may load the CUDA backend on first use).
  virtual DeviceBackend& backend_for(int device) = 0;
  virtual Topology topology() const = 0;
  // Ranks that hold different samples: world size / (sequence- x tensor-parallel degree).
  int dp_degree() const;
  // A record's "parallel" object: the layout, on a multi-rank run whose layout is known (not a
  // v1 event script).
  static std::optional<ParallelLayout> record_layout(const Topology& t);
  // Stamps a record with the run it belongs to: the attempt `t` says and VIDEOX_PERF_RUN_ID.
  template <class Record>
  void stamp_run(Record& record, const Topology& t) const {
    if (t.attempt) record.attempt = *t.attempt;
    if (!settings_.run_id.empty()) record.run_id = settings_.run_id;
  }
  // Whether this rank logs (rank 0, or every rank with VIDEOX_PERF_RANKS=all).
  bool should_log() const;
  // The per-device peak of `device` (nullopt: host only) in `dtype`.
  virtual ResolvedPeak peak(std::optional<int> device, Dtype dtype) = 0;
  // The line (and level-2 dump) where this rank logs, then every sink.
  virtual void emit(const RequestRecord& record, const RequestDetail& detail) = 0;
  virtual void emit(const TrainWindowRecord& record, const WindowDetail& detail) = 0;
  virtual void emit(const TrainEndRecord& record) = 0;
  // The requests running and queued changed (RecordSink::on_request_load).
  virtual void emit(const RequestLoad& load) = 0;
  // A line printed by every rank.
  virtual void notice(std::string_view line) = 0;
  // A line kept whole among concurrent records' lines (a summary).
  virtual void log_line(std::string_view line) = 0;
  virtual RankExchange rank_exchange() const = 0;
  // The device meter (nullptr: none); the engine may load NVML on first use.
  virtual DeviceMeter* meter() = 0;
  // The host's meter (cpu_energy_j; nullptr: none); the engine may open the powercap counters on
  // first use.
  virtual DeviceMeter* host_meter() = 0;

  // The device readings of an interval (a request, a training window) on `device` of `backend`:
  // started at its beginning, read at its end. The one place readings are taken.
  static void start_readings(DeviceBackend& backend, int device);
  static DeviceReadings read_readings(DeviceBackend& backend, int device);
  // The meters' intervals on `device` (VIDEOX_PERF_NVML: energy, power, clocks;
  // VIDEOX_PERF_POWERCAP: the host's energy), opened just before an interval's clock is read and
  // closed just after its end is, outside its timed span. Empty: nothing is metered (off, no
  // meter, or a backend that cannot name the device's PCI bus id).
  struct Metering {
    std::uint64_t device = 0;  // the device meter's interval; 0: none
    std::uint64_t host = 0;    // the host meter's
    bool open() const { return device != 0 || host != 0; }
  };
  Metering begin_metering(DeviceBackend& backend, int device);
  // Loads the meters and has them get ready for `device` (DeviceMeter::prepare) ahead of its first
  // interval: a training device set before the first step, so that loading NVML and starting its
  // sampler are the setup's, not the first step's.
  void prepare_metering(DeviceBackend& backend, int device);
  // Each closes `m` (then empty), its readings added to `readings`.
  void end_metering(Metering& m, DeviceReadings& readings);
  void end_metering_at_mark(Metering& m, DeviceReadings& readings);  // DeviceMeter::end_at_mark
  void cancel_metering(Metering& m);
  // DeviceMeter::mark and roll: a training window's step closes (roll: `m` is the next window's).
  void mark_metering(const Metering& m);
  void roll_metering(Metering& m, DeviceReadings& readings, DeviceBackend& backend, int device);
  // A meter's readings over what the backend said (its peaks): each member the meter holds
  // (read: an optional with a value, a true flag, a non-zero count) replaces the backend's,
  // through the readings' field table (schema/held_fields.h).
  static void add_meter_readings(DeviceReadings& into, const DeviceReadings& metered);

  // VIDEOX_PERF_PROFILE's range (cuProfilerStart / cuProfilerStop on `device` of `backend`, and
  // observers' on_capture): a training step or a request begins, closes or ends. One test of the
  // setting when no range is set. capture_ends says whether it stopped the capture now.
  void capture_begins(Settings::CaptureRange::Kind kind, std::int64_t index, DeviceBackend& backend,
                      int device) {
    if (settings_.profile.kind == kind) capture_point(kind, index, true, backend, device);
  }
  bool capture_ends(Settings::CaptureRange::Kind kind, std::int64_t index, DeviceBackend& backend,
                    int device) {
    return settings_.profile.kind == kind && capture_point(kind, index, false, backend, device);
  }
  // At exit: a range that never started or never ended is said (one that started is stopped).
  void finish_capture();

 protected:
  Context(Settings settings, std::shared_ptr<Clock> clock);

  Settings settings_;
  std::atomic<int> level_;
  std::shared_ptr<Clock> clock_;
  std::atomic<DeviceBackend*> device_{nullptr};
  bool forked_ = false;
  std::atomic<const ObserverList*> observers_{nullptr};
  std::optional<double> process_start_;  // EngineOptions::process_start_s

 private:
  bool capture_point(Settings::CaptureRange::Kind kind, std::int64_t index, bool begins,
                     DeviceBackend& backend, int device);
  // Starts or stops the capture (capture_mu_ held): the profiler, then the observers.
  void capture_switch(bool start);

  // VIDEOX_PERF_PROFILE's progress (requests begin and end on many threads).
  struct Capture {
    bool started = false, stopped = false;
    std::int64_t ended = 0;            // requests of the range ended
    std::int64_t reached = -1;         // the last step or request begun
    DeviceBackend* backend = nullptr;  // what it started on (nullptr: no device)
    int device = -1;
  };
  std::mutex capture_mu_;
  Capture capture_;
};

}  // namespace vxperf::internal
