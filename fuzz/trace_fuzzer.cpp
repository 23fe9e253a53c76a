// libFuzzer entry point: `vxperf explain`'s Kineto trace reader, analyses and the three forms it
// is shown in, then the same with HTA's critical path (every row kept, each profiler step's
// graph, or the whole trace's when there is no step), then with vxperf's replay and what-ifs. The
// input is a trace file's text (written to a temporary file: the reader reads files, plain or gzip,
// as users give them).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "vxperf/explain.h"

namespace {

const std::string& input_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/vxperf-trace-fuzz-" +
           std::to_string(::getpid()) + ".json";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(input_path().c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  vxperf::explain::ExplainOptions options;
  options.threads = 1;
  options.records = {"/dev/null"};  // no records beside the input
  auto show = [](const vxperf::explain::Explanation& e) {
    (void)vxperf::explain::explanation_json(e);
    (void)vxperf::explain::explanation_text(e);
    (void)vxperf::explain::explanation_html(e);
  };
  show(vxperf::explain::explain_traces({input_path()}, options));
  vxperf::explain::CriticalPathRequest steps;
  steps.max_instances = 64;  // a step's graph each: bounded, so that an input costs milliseconds
  options.critical_path = steps;
  const vxperf::explain::Explanation e = vxperf::explain::explain_traces({input_path()}, options);
  show(e);
  // Without profiler steps (HTA returns None at once), the whole trace's graph instead.
  bool none = false;
  for (const vxperf::explain::RankExplanation& r : e.ranks) {
    none = none || (r.critical_path && !r.critical_path->instances.empty() &&
                    r.critical_path->instances[0].hta == "None");
  }
  if (none) {
    options.critical_path->annotation = "";
    show(vxperf::explain::explain_traces({input_path()}, options));
  }
  // vxperf's own replay: its graph of every row, each range replayed with its critical path, and
  // every kind of what-if (the standard ones, a kernel regex, edits together) and their stacking.
  options.critical_path.reset();
  vxperf::explain::ReplayRequest replay{vxperf::explain::standard_what_ifs()};
  replay.what_ifs.push_back(vxperf::explain::parse_what_if("kernel:^g.*m=0.5"));
  replay.what_ifs.push_back(vxperf::explain::parse_what_if("steps:3"));
  replay.what_ifs.push_back(vxperf::explain::parse_what_if("kernel:^g.*m=0.5,peak,host"));
  options.replay = replay;
  show(vxperf::explain::explain_traces({input_path()}, options));
  std::remove(input_path().c_str());
  return 0;
}
