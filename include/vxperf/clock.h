// Host clocks. The engine never reads a clock of its own: it is handed one, so that tests and
// replay can run it on virtual time (vxperf/simulation.h has a manual clock).
//
// Thread safety: now_s() may be called from any thread concurrently.
#pragma once

namespace vxperf {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds on a monotonic clock with an arbitrary origin.
  virtual double now_s() = 0;
};

// std::chrono::steady_clock.
class SteadyClock final : public Clock {
 public:
  double now_s() override;
};

}  // namespace vxperf
