// The vxperf version. CMake reads the project version from here, so this is the one place to bump.
#pragma once

#define VXPERF_VERSION_MAJOR 0
#define VXPERF_VERSION_MINOR 2
#define VXPERF_VERSION_PATCH 0
#define VXPERF_VERSION_STRING "0.2.0"

namespace vxperf {
// The library's version, "MAJOR.MINOR.PATCH": what `vxperf --version` prints.
const char* version();
}  // namespace vxperf
