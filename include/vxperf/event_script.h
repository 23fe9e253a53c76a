// Event scripts (format v1, see docs/EVENT_SCRIPTS.md): a run's observations as JSON lines, and
// their replay through the same engine on a virtual clock and a simulated device.
#pragma once

#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "vxperf/script_error.h"
#include "vxperf/sink.h"

namespace vxperf {

struct ReplayOptions {
  // Variables set over the script's own config env ("VIDEOX_PERF_EVERY", "10"); value "" unsets.
  std::vector<std::pair<std::string, std::string>> env_overrides;
  // Where a warning goes ("line N: torn last line skipped (not complete JSON)"); default: the log.
  LogFn warn;
};

// Drives every event of `script` through an engine built from its config line, on a virtual clock
// and a simulated device: log lines go to `log` and records to `records` exactly as the live run
// made them. A torn last line (no newline, not complete JSON) is skipped with a warning; a request
// the script never ends is not recorded. Throws ScriptError (an empty script included).
void replay(std::istream& script, const LogFn& log, RecordSink& records,
            const ReplayOptions& options = {});

}  // namespace vxperf
