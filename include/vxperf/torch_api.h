// Deprecated name of the LibTorch adapter's Torch-free headers: include vxperf/torch_reading.h
// (model readings, `vxperf inspect`) or vxperf/torch_probe.h (the peak probe) instead.
#pragma once

#include "vxperf/torch_probe.h"
#include "vxperf/torch_reading.h"
