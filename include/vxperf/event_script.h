// Event scripts (format v1, see docs/EVENT_SCRIPTS.md): a run's observations as JSON lines, and
// their replay through the same engine on a virtual clock and a simulated device.
#pragma once

#include <istream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vxperf {

class Output;

// A malformed script: `line` is 1-based.
class ScriptError : public std::runtime_error {
 public:
  ScriptError(int line, const std::string& message)
      : std::runtime_error("line " + std::to_string(line) + ": " + message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

struct ReplayOptions {
  // Variables set over the script's own config env ("VIDEOX_PERF_EVERY", "10"); value "" unsets.
  std::vector<std::pair<std::string, std::string>> env_overrides;
};

// Drives every event of `script` through an engine built from its config line, writing records
// and log lines to `output` exactly as the live run would have. Throws ScriptError.
void replay(std::istream& script, Output& output, const ReplayOptions& options = {});

}  // namespace vxperf
