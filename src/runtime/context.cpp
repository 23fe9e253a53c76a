#include "runtime/context.h"

#include <algorithm>

namespace vxperf::internal {

Context::Context(Settings settings, std::shared_ptr<Clock> clock)
    : settings_(std::move(settings)),
      level_(settings_.level),
      clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()) {}

int Context::dp_degree() const {
  Topology t = topology();
  return std::max(1, t.world_size / std::max(1, t.sp));
}

bool Context::should_log() const { return settings_.log_all_ranks || topology().rank == 0; }

void Context::start_readings(DeviceBackend& backend, int device) {
  backend.reset_peak_memory(device);
}

DeviceReadings Context::read_readings(DeviceBackend& backend, int device) {
  return backend.peak_memory(device).value_or(DeviceReadings{});
}

}  // namespace vxperf::internal
