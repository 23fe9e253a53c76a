#include "runtime/context.h"

#include <algorithm>
#include <string>

#include "schema/held_fields.h"

namespace vxperf::internal {

Context::Context(Settings settings, std::shared_ptr<Clock> clock)
    : settings_(std::move(settings)),
      level_(settings_.level),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()) {}

int Context::dp_degree() const { return parallel_layout(topology()).dp; }

std::optional<ParallelLayout> Context::record_layout(const Topology& t) {
  if (t.world_size < 2 || t.v1) return std::nullopt;
  return parallel_layout(t);
}

bool Context::should_log() const { return settings_.log_all_ranks || topology().rank == 0; }

void Context::start_readings(DeviceBackend& backend, int device) {
  backend.reset_peak_memory(device);
}

DeviceReadings Context::read_readings(DeviceBackend& backend, int device) {
  return backend.peak_memory(device).value_or(DeviceReadings{});
}

Context::Metering Context::begin_metering(DeviceBackend& backend, int device) {
  Metering m;
  if (device < 0 || (!settings_.nvml && !settings_.powercap)) return m;
  // Only a device the backend names (a CUDA device) is metered: its meters are the host's.
  std::string bus = backend.pci_bus_id(device);
  if (bus.empty()) return m;
  if (settings_.nvml) {
    if (DeviceMeter* d = meter()) m.device = d->begin(bus, device);
  }
  if (settings_.powercap) {
    if (DeviceMeter* h = host_meter()) m.host = h->begin(bus, device);
  }
  return m;
}

void Context::prepare_metering(DeviceBackend& backend, int device) {
  if (device < 0 || (!settings_.nvml && !settings_.powercap)) return;
  std::string bus = backend.pci_bus_id(device);
  if (bus.empty()) return;
  if (settings_.nvml) {
    if (DeviceMeter* d = meter()) d->prepare(bus, device);
  }
  if (settings_.powercap) {
    if (DeviceMeter* h = host_meter()) h->prepare(bus, device);
  }
}

namespace {

// f(meter, interval) for each of `m`'s intervals whose meter is there.
template <typename F>
void each_interval(Context& context, const Context::Metering& m, F&& f) {
  if (m.device != 0) {
    if (DeviceMeter* d = context.meter()) f(*d, m.device);
  }
  if (m.host != 0) {
    if (DeviceMeter* h = context.host_meter()) f(*h, m.host);
  }
}

}  // namespace

void Context::end_metering(Metering& m, DeviceReadings& readings) {
  each_interval(*this, m, [&](DeviceMeter& meter, std::uint64_t id) { meter.end(id, readings); });
  m = Metering{};
}

void Context::end_metering_at_mark(Metering& m, DeviceReadings& readings) {
  each_interval(*this, m,
                [&](DeviceMeter& meter, std::uint64_t id) { meter.end_at_mark(id, readings); });
  m = Metering{};
}

void Context::cancel_metering(Metering& m) {
  each_interval(*this, m, [](DeviceMeter& meter, std::uint64_t id) { meter.cancel(id); });
  m = Metering{};
}

void Context::mark_metering(const Metering& m) {
  each_interval(*this, m, [](DeviceMeter& meter, std::uint64_t id) { meter.mark(id); });
}

void Context::roll_metering(Metering& m, DeviceReadings& readings, DeviceBackend& backend,
                            int device) {
  if (!m.open()) return;
  std::string bus = backend.pci_bus_id(device);
  Metering next;
  if (m.device != 0) {
    if (DeviceMeter* d = meter()) next.device = d->roll(m.device, readings, bus, device);
  }
  if (m.host != 0) {
    if (DeviceMeter* h = host_meter()) next.host = h->roll(m.host, readings, bus, device);
  }
  m = next;
}

void Context::add_meter_readings(DeviceReadings& into, const DeviceReadings& metered) {
  // Through the readings' field table: a reading added there reaches the record by itself.
  merge_held(into, metered);
}

// ---- VIDEOX_PERF_PROFILE ------------------------------------------------------------------------

namespace {

const char* unit_of(Settings::CaptureRange::Kind kind) {
  return kind == Settings::CaptureRange::Kind::kSteps ? "step" : "request";
}

std::string range_text(const Settings::CaptureRange& r) {
  const char* kind = r.kind == Settings::CaptureRange::Kind::kSteps ? "steps" : "requests";
  return std::string("VIDEOX_PERF_PROFILE=") + kind + ":" + std::to_string(r.first) + "-" +
         std::to_string(r.last);
}

}  // namespace

bool Context::capture_point(Settings::CaptureRange::Kind kind, std::int64_t index, bool begins,
                            DeviceBackend& backend, int device) {
  const Settings::CaptureRange& range = settings_.profile;
  const bool steps = kind == Settings::CaptureRange::Kind::kSteps;
  int act = 0;  // +1 start, -1 stop
  {
    std::lock_guard<std::mutex> lock(capture_mu_);
    if (begins) {
      capture_.reached = std::max(capture_.reached, index);
      if (index == range.first && !capture_.started) {
        capture_.started = true;
        capture_.backend = device >= 0 && backend.available() ? &backend : nullptr;
        capture_.device = device;
        act = 1;
      }
    } else if (capture_.started && !capture_.stopped && index >= range.first &&
               index <= range.last) {
      // A step closes in order; requests of the range may end in any order.
      ++capture_.ended;
      if (steps ? index == range.last : capture_.ended == range.last - range.first + 1) {
        capture_.stopped = true;
        act = -1;
      }
    }
  }
  if (act != 0) capture_switch(act > 0);
  return act < 0;
}

void Context::capture_switch(bool start) {
  DeviceBackend* backend = nullptr;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(capture_mu_);
    backend = capture_.backend;
    device = capture_.device;
  }
  // The profiler first, so that the torch profiler's own start is outside nothing it captures.
  if (backend != nullptr) {
    if (start) {
      backend->profiler_start(device);
    } else {
      backend->profiler_stop(device);
    }
  }
  notify(observers(), [&](Observer& o) { o.on_capture(start); });
}

void Context::finish_capture() {
  const Settings::CaptureRange& range = settings_.profile;
  if (range.kind == Settings::CaptureRange::Kind::kNone) return;
  bool stop = false;
  std::string said;
  {
    std::lock_guard<std::mutex> lock(capture_mu_);
    const char* unit = unit_of(range.kind);
    if (!capture_.started) {
      said = range_text(range) + ": the run ended " +
             (capture_.reached < 0
                  ? std::string("before its first ") + unit
                  : std::string("at ") + unit + " " + std::to_string(capture_.reached)) +
             ", before " + unit + " " + std::to_string(range.first) +
             " began: nothing was captured";
    } else if (!capture_.stopped) {
      capture_.stopped = true;
      stop = true;
      said = range_text(range) + ": the run ended before " + unit + " " +
             std::to_string(range.last) + " " +
             (range.kind == Settings::CaptureRange::Kind::kSteps ? "closed" : "ended") + " (last " +
             unit + " begun: " + std::to_string(capture_.reached) +
             "); the capture was stopped at exit";
    }
  }
  if (stop) capture_switch(false);
  if (!said.empty()) notice("vxperf: " + said);
}

}  // namespace vxperf::internal
