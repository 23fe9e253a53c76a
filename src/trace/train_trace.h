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

#include "schema/json.h"
#include "vxperf/observer.h"

namespace vxperf::internal {

class TraceWriter;

class TrainTrace {
 public:
  // An event of no step (model, micro-step boundaries): written in order with the others.
  void add(Json event) { push(std::move(event), -1, 0); }
  // A timed call of a step: written once that step has settled.
  void add_call(const TrainCall& call);
  // What was said of a call after it closed.
  void note(std::uint64_t id, const TrainCallNote& note);
  // The call's device time (when read), `ready_after` steps after its own step closed.
  void settle(std::uint64_t id, std::optional<double> device_ms, std::int64_t ready_after);
  // A window's readings, placed before the call that closed it (where replay reads them), or last.
  void add_memory(const DeviceReadings& readings, std::optional<std::uint64_t> closing_call);
  // Writes what can be written in order: everything up to the first unsettled call, or all.
  void flush(TraceWriter& writer, bool all);

 private:
  struct Entry {
    Json event;
    std::int64_t step = -1;  // the step holding its call; -1: not a call
    std::uint64_t id = 0;    // the call's id; 0: not a call
    bool settled = false;
    std::vector<std::string> before;  // lines to write just ahead of this one
  };
  void push(Json event, std::int64_t step, std::uint64_t id);
  // The pending entry of call `id`, or nullptr once written (or never seen).
  Entry* find(std::uint64_t id);

  std::deque<Entry> entries_;
  std::map<const void*, std::string> owners_;
};

}  // namespace vxperf::internal
