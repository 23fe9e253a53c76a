// libFuzzer entry point: the event-script reader of the trace conversion and the core's replay.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "vxperf/analysis.h"
#include "vxperf/event_script.h"
#include "vxperf/output.h"

namespace {

class NullOutput final : public vxperf::Output {
 public:
  void log(std::string_view) override {}
  void record(std::string_view, int, int) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    vxperf::analysis::TraceBuilder builder;
    builder.add_script(in, "fuzz");
    (void)builder.json();
  } catch (const vxperf::ScriptError&) {
  }
  try {
    std::istringstream in(text);
    NullOutput output;
    vxperf::replay(in, output);
  } catch (const vxperf::ScriptError&) {
  }
  return 0;
}
