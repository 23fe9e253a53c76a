// Host clocks. The engine never reads a clock of its own: it is handed one, so that tests and
// replay can run it on virtual time.
//
// Thread safety: now_s() may be called from any thread concurrently.
#pragma once

#include <atomic>

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

// Virtual time set by its owner (replay, tests). Reads are atomic, so other threads may read it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double start_s = 0.0) : now_(start_s) {}
  double now_s() override { return now_.load(std::memory_order_relaxed); }
  void set(double t) { now_.store(t, std::memory_order_relaxed); }
  void advance(double dt) { set(now_s() + dt); }

 private:
  std::atomic<double> now_;
};

}  // namespace vxperf
