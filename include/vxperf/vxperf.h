// vxperf: stage-level timing, FLOPs and MFU for diffusion-transformer inference and training.
// The one header an instrumented program needs.
#pragma once

#include "vxperf/config.h"
#include "vxperf/cost_model.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/model.h"
#include "vxperf/observer.h"
#include "vxperf/phases.h"
#include "vxperf/record_walk.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"
#include "vxperf/stages.h"
#include "vxperf/training.h"
#include "vxperf/version.h"
#include "vxperf/xrank.h"
