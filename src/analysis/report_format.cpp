// What the report's forms share (report_format.h): absent numbers as JSON nulls.
#include "analysis/report_format.h"

namespace vxperf::analysis::report_format {

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_json(const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace vxperf::analysis::report_format
