// The time-share rule (#28) for one energy counter (an NVML device, the host's powercap zones):
// what the counter gained between two consecutive readings is split equally among the intervals
// open between them, and so is the time. Intervals that overlap on one counter (two requests
// served at once, an eval request during a training window) then add up to the counter's gain
// over their union, and an interval alone on it gets the whole gain.
//
// Readings are taken at interval boundaries only (and by a sampler where power stands in for the
// counter); each one is handed here with what the counter gained since the previous one.
//
// Not thread-safe: its meter's lock guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace vxperf::internal {

class EnergyShares {
 public:
  // Where a segment's gain came from.
  enum class Source : std::uint8_t { kCounter, kPower };

  struct Share {
    double energy_j = 0;   // its share of the gains
    double share_s = 0;    // its share of the time: each segment's seconds over the intervals open
    bool shared = false;   // some of its time another interval was open on the counter too
    bool spoiled = false;  // a gain over its time is unknown (a bad reading): no energy
    bool counter = false, power = false;  // the sources its segments' gains came from
  };

  // A reading `dt` seconds after the previous one, the counter having gained `gain_j` since
  // (nullopt: unknown). Every open interval gets its share.
  void advance(double dt, std::optional<double> gain_j, Source source) {
    if (open_.empty()) return;
    const auto n = static_cast<double>(open_.size());
    for (auto& [id, share] : open_) {
      share.share_s += dt / n;
      if (open_.size() > 1) share.shared = true;
      if (!gain_j) {
        share.spoiled = true;
        continue;
      }
      share.energy_j += *gain_j / n;
      (source == Source::kCounter ? share.counter : share.power) = true;
    }
  }

  // Opens `id` at the latest reading.
  void open(std::uint64_t id) { open_[id] = Share{}; }
  // Closes `id` at the latest reading; what it came to (empty when it was not open).
  std::optional<Share> close(std::uint64_t id) {
    auto it = open_.find(id);
    if (it == open_.end()) return std::nullopt;
    Share share = it->second;
    open_.erase(it);
    return share;
  }
  // What `id` has come to so far (empty when it is not open).
  std::optional<Share> peek(std::uint64_t id) const {
    auto it = open_.find(id);
    if (it == open_.end()) return std::nullopt;
    return it->second;
  }
  std::size_t open_count() const { return open_.size(); }

 private:
  std::map<std::uint64_t, Share> open_;
};

}  // namespace vxperf::internal
