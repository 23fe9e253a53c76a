#include "output/stderr_log.h"

#include <unistd.h>

#include "vxperf/file_io.h"

namespace vxperf::internal {

LogFn stderr_log() {
  return [](std::string_view line) { write_line(STDERR_FILENO, line); };
}

}  // namespace vxperf::internal
