// The Prometheus text exposition format, version 0.0.4, written from collected snapshots.
//
//   # HELP name help text (backslash and newline escaped)
//   # TYPE name counter|gauge|histogram
//   name{label="value",...} 1.5
//   name_bucket{label="value",le="0.05"} 3     (cumulative, ending with le="+Inf")
//   name_sum{label="value"} 1.25
//   name_count{label="value"} 3
//
// Label values escape backslash, double quote and newline; text that is not valid UTF-8 has each
// bad byte replaced by U+FFFD, so one odd stage name cannot make a whole scrape unparsable.
// Numbers are the shortest text that reads back to the same double; NaN and the infinities are
// spelled NaN, +Inf and -Inf. Bucket bounds ("le") keep a ".0" on whole numbers (le="1.0"), as
// Python's prometheus_client writes them and Prometheus 3 normalizes them, so the C++ endpoint
// and a Python collector give the same series.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "serving/metrics.h"

namespace vxperf::serving {

std::string to_exposition_text(const std::vector<FamilySnapshot>& families);

// The pieces, for tests and for other writers of the same format.
std::string format_number(double value);
std::string format_bucket_bound(double bound);
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);

}  // namespace vxperf::serving
