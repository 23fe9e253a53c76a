// libFuzzer entry point: `vxperf explain`'s Kineto trace reader, analyses and the three forms it
// is shown in. The input is a trace file's text (written to a temporary file: the reader reads
// files, plain or gzip, as users give them).
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
  const vxperf::explain::Explanation e = vxperf::explain::explain_traces({input_path()}, options);
  (void)vxperf::explain::explanation_json(e);
  (void)vxperf::explain::explanation_text(e);
  (void)vxperf::explain::explanation_html(e);
  std::remove(input_path().c_str());
  return 0;
}
