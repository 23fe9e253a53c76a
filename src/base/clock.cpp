#include "vxperf/clock.h"

#include <chrono>

namespace vxperf {

double SteadyClock::now_s() {
  auto since_origin = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_origin).count();
}

}  // namespace vxperf
