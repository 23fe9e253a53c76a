// What-ifs as edits of the replay's graph (replay_graph.h): each spec gives the graph's weights
// changed (host overhead gone, communication or copies weighing nothing, kernels of a name faster,
// computation at the FLOPs' ideal, denoising steps skipped); replaying them predicts each range's
// span. The assumptions are in docs/EXPLAIN.md, "What-ifs".
#pragma once

#include <string>
#include <vector>

#include "explain/kineto_trace.h"
#include "explain/replay_graph.h"
#include "explain/waterfall.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// The graph's weights with `spec` applied. `why` is set (and the weights are the graph's own) when
// nothing in the trace is for it: no device rows (host), no range priced by FLOPs (peak), no
// request with two denoising steps (steps).
std::vector<double> what_if_weights(const ReplayGraph& g, const KinetoTrace& t,
                                    const std::vector<TraceRange>& ranges, const WhatIfSpec& spec,
                                    std::string& why);

}  // namespace vxperf::explain
