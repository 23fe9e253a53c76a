// A record's JSON text back into its struct through its field table (schema/field_reader.h over
// simdjson's DOM), one at a time: what tests and small readers use. Files of records are streamed
// by vxperf/records_reader.h.
#pragma once

#include <string_view>

#include "vxperf/records.h"

namespace vxperf::internal {

// FieldError on text that is no JSON object or a wrong field ("kind" is the caller's).
RequestRecord read_request(std::string_view json);
TrainWindowRecord read_window(std::string_view json);
TrainEndRecord read_end(std::string_view json);

}  // namespace vxperf::internal
