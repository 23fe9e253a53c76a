// The training half of the raw event trace (VIDEOX_PERF_TRACE). A step's events wait here until
// the step settles, because only then are their device times known; a replay then makes each
// event complete at the same moment the live run saw it complete.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/json_fields.h"
#include "training/marker.h"
#include "vxperf/training.h"

namespace vxperf::detail {

class TraceWriter;

class TrainTrace {
 public:
  // An event of no step (model, micro-step boundaries): written in order with the others.
  std::int64_t add(Json event) { return push(std::move(event), -1); }
  // A timed pair of `step`: written once that step has settled.
  std::int64_t add_pair(Phase phase, const Marker& start, const Marker& end, std::int64_t step,
                        std::int64_t tokens, std::int64_t samples, const void* optimizer,
                        bool synced, double fraction = 1.0);
  // The pair's device time was read `ready_after` steps after its own step closed.
  void set_device_time(std::int64_t entry, double device_ms, std::int64_t ready_after);
  void mark_settled(std::int64_t entry);
  // A forward's fraction, noted after the call closed.
  void set_fraction(std::int64_t entry, double fraction);
  // The dtype the forward of `entry` ran its matmuls in.
  void set_dtype(std::int64_t entry, Dtype dtype);
  // The optimizer call that will close the current step; -1: none.
  void set_closing(std::int64_t entry) { closing_ = entry; }
  // A window's peaks, placed before the call that closed it (where replay reads them).
  void add_memory(const MemoryPeaks& peaks);
  // Writes what can be written in order: everything up to the first unsettled pair, or all.
  void flush(TraceWriter& writer, bool all);

 private:
  struct Entry {
    Json event;
    std::int64_t step = -1;  // the step holding its pair; -1: not a pair
    bool settled = false;
    std::vector<std::string> before;  // lines to write just ahead of this one
  };
  std::int64_t push(Json event, std::int64_t step);
  bool holds(std::int64_t entry) const {
    return entry >= first_ && entry < first_ + static_cast<std::int64_t>(entries_.size());
  }
  Entry& at(std::int64_t entry) { return entries_[static_cast<std::size_t>(entry - first_)]; }

  std::deque<Entry> entries_;
  std::int64_t first_ = 0;     // sequence number of entries_.front()
  std::int64_t closing_ = -1;  // entry of the optimizer step closing the current step
  std::map<const void*, std::string> owners_;
};

}  // namespace vxperf::detail
