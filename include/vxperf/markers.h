// The scopes' measurement points as plain begin/end calls: for language bindings (the Python
// package) and for code whose begin and end sit in different functions, such as a pre- and a
// post-hook. In C++, prefer the scopes of vxperf/inference.h and vxperf/training.h: they are
// these calls, closed on every path.
//
// Thread safety: as the scopes. A request belongs to the thread that began it.
#pragma once

#include "vxperf/inference_markers.h"
#include "vxperf/training_markers.h"

