// How one timed call's host and device spans become its time, for inference and training alike:
// the larger of the two (whichever saw the work: a device call returns to the host once queued, a
// host call leaves an empty device span), or the host time when the device cannot tell.
#pragma once

#include <algorithm>
#include <optional>

#include "vxperf/device.h"

namespace vxperf::internal {

struct Resolved {
  double ms = 0;                    // the call's time
  std::optional<double> device_ms;  // the device's span, when it was read
};

// Both events must have been recorded and be complete for the device span to count.
inline Resolved resolve_call(DeviceBackend& backend, double host_start_s, double host_end_s,
                             EventId start, EventId end) {
  Resolved r;
  r.ms = (host_end_s - host_start_s) * 1000.0;
  if (start != kNoEvent && end != kNoEvent && backend.query(start) && backend.query(end)) {
    if (auto elapsed = backend.elapsed_ms(start, end)) {
      r.ms = std::max(r.ms, *elapsed);
      r.device_ms = elapsed;
    }
  }
  return r;
}

}  // namespace vxperf::internal
