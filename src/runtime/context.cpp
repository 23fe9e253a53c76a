#include "runtime/context.h"

#include <algorithm>
#include <string>

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

std::uint64_t Context::begin_metering(DeviceBackend& backend, int device) {
  if (!settings_.nvml || device < 0) return 0;
  std::string bus = backend.pci_bus_id(device);
  if (bus.empty()) return 0;
  DeviceMeter* m = meter();
  return m != nullptr ? m->begin(bus, device) : 0;
}

void Context::end_metering(std::uint64_t interval, DeviceReadings& readings) {
  if (interval == 0) return;
  if (DeviceMeter* m = meter()) m->end(interval, readings);
}

void Context::cancel_metering(std::uint64_t interval) {
  if (interval == 0) return;
  if (DeviceMeter* m = meter()) m->cancel(interval);
}

}  // namespace vxperf::internal
