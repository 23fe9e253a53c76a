// libFuzzer entry point: the records reader and the report over whatever it accepts. Every line the
// reader's fast path (the line's text read straight) takes is read again the general way (DOM): the
// two must agree.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "vxperf/analysis.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  vxperf::analysis::RecordSet records;
  try {
    vxperf::analysis::ReadOptions options;
    options.check_fast_path = true;
    vxperf::analysis::read_records(in, "fuzz", records, options);
  } catch (const vxperf::analysis::InputError&) {
    return 0;
  }
  vxperf::analysis::Report report = vxperf::analysis::build_report(records);
  (void)vxperf::analysis::format_report(report);
  (void)vxperf::analysis::report_json(report);
  (void)vxperf::analysis::report_html(report, records);
  return 0;
}
