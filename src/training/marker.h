// A timing marker of the training half: host seconds plus an optional device event.
#pragma once

#include "vxperf/device.h"

namespace vxperf::internal {

struct Marker {
  double host_s = 0;
  EventId event = kNoEvent;
};

}  // namespace vxperf::internal
