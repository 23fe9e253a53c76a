// A malformed event script (format v1, see docs/EVENT_SCRIPTS.md), as its readers report it:
// replay (vxperf/event_script.h) and the Chrome trace conversion (vxperf/chrome_trace.h).
#pragma once

#include <stdexcept>
#include <string>

namespace vxperf {

// A malformed script: `line` is 1-based.
class ScriptError : public std::runtime_error {
 public:
  ScriptError(int line, const std::string& message)
      : std::runtime_error("line " + std::to_string(line) + ": " + message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

}  // namespace vxperf
