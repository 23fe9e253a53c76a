// Writing whole lines to file descriptors, and the default log (stderr).
#pragma once

#include <string_view>

#include "vxperf/sink.h"

namespace vxperf::internal {

// Writes `line` and '\n' to `fd` with a single write(2) where possible (so concurrent writers of
// whole lines to an O_APPEND file never interleave). Returns false, with errno set, on failure.
bool write_line(int fd, std::string_view line);

// A LogFn writing to stderr.
LogFn stderr_log();

}  // namespace vxperf::internal
