// A copy of a value other threads write, taken under the mutex that guards it: what the getters of
// the test doubles (SimulatedBackend, MemoryOutput) hand out.
#pragma once

#include <mutex>

namespace vxperf::internal {

template <class T>
T copy_under(std::mutex& mu, const T& value) {
  std::lock_guard<std::mutex> lock(mu);
  return value;
}

}  // namespace vxperf::internal
