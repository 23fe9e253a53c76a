// libFuzzer entry point: the event-script reader of the trace conversion and the core's replay.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "vxperf/analysis.h"
#include "vxperf/event_script.h"
#include "vxperf/sink.h"

namespace {}  // namespace

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
    vxperf::RecordSink drop;
    vxperf::replay(
        in, [](std::string_view) {}, drop);
  } catch (const vxperf::ScriptError&) {
  }
  return 0;
}
