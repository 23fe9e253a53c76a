// The default log: whole lines on stderr.
#pragma once

#include "vxperf/sink.h"

namespace vxperf::internal {

// A LogFn writing each line to stderr in one write (vxperf/file_io.h's write_line).
LogFn stderr_log();

}  // namespace vxperf::internal
