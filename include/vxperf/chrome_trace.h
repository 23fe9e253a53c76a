// `vxperf trace`: event scripts (a live run's VIDEOX_PERF_TRACE, one per rank) as one Chrome
// trace-event document for chrome://tracing and ui.perfetto.dev.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "vxperf/script_error.h"

namespace vxperf::analysis {

// Converts event scripts (one per rank, say) into one Chrome trace-event JSON document: a process
// per rank, a complete event per stage, phase, clip, optimizer call, micro-step, request and step,
// memory peaks as counters. Throws vxperf::ScriptError (from event_script.h) with the line.
//
// TraceWriter writes the document onto `out` as the scripts are read (its head with the first
// script, each event as it is made, its tail at finish()), keeping per-script state only, so its
// memory does not grow with the input. After an exception (a bad line, std::bad_alloc) what was
// written is not a whole document: discard it (`vxperf trace` writes into a temporary file that
// only a complete run renames into place).
class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // As TraceBuilder::add_script; not after finish().
  void add_script(std::istream& script, const std::string& name);
  // Writes the document's tail (the sources read); once, after the last script.
  void finish();
  const std::vector<std::string>& warnings() const;
  std::int64_t event_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same document as one string (the events held in memory until json()); byte for byte what
// TraceWriter writes for the same scripts.
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
