// Offline analysis of what vxperf writes: records files read back (vxperf/records_reader.h) and
// summarized into a report (vxperf/report.h), event scripts converted to Chrome trace-event files
// (vxperf/chrome_trace.h), and the FLOPs of a Wan2.1-style DiT from its dimensions
// (vxperf/flops.h). Used by the `report`, `trace` and `flops` commands, their tests and fuzzers;
// the library is vxperf::analysis.
#pragma once

#include "vxperf/chrome_trace.h"
#include "vxperf/flops.h"
#include "vxperf/records_reader.h"
#include "vxperf/report.h"
