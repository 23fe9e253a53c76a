#include "vxperf/version.h"

namespace vxperf {

const char* version() { return VXPERF_VERSION_STRING; }

}  // namespace vxperf
