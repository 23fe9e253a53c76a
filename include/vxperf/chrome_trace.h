// `vxperf trace`: event scripts (a live run's VIDEOX_PERF_TRACE, one per rank) as one Chrome
// trace-event document for chrome://tracing and ui.perfetto.dev.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "vxperf/script_error.h"

namespace vxperf::analysis {

// Converts event scripts (one per rank, say) into one Chrome trace-event JSON document: a process
// per rank, a complete event per stage, phase, clip, optimizer call, micro-step, request and step,
// memory peaks as counters. Throws vxperf::ScriptError (from event_script.h) with the line.
class TraceBuilder {
 public:
  TraceBuilder();
  ~TraceBuilder();
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // A torn last line (no newline, not complete JSON) is skipped with a warning; an empty script
  // is an error, as for replay.
  void add_script(std::istream& script, const std::string& name);
  // "NAME: line N: torn last line skipped (not complete JSON)", one per script that had one.
  const std::vector<std::string>& warnings() const;
  std::string json() const;
  std::int64_t event_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vxperf::analysis
