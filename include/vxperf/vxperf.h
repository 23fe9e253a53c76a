// vxperf: stage-level timing, FLOPs and MFU for diffusion-transformer inference and training.
// The one header an instrumented program needs.
#pragma once

#include "vxperf/cost_model.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"
