// What-ifs as edits of the replay's graph (replay_graph.h): each edit changes the graph's weights
// (host overhead gone, communication or copies weighing nothing, kernels of a name faster,
// computation at the FLOPs' ideal, denoising steps skipped), several together in one set of
// weights; replaying them predicts each range's span. The assumptions are in docs/EXPLAIN.md,
// "What-ifs".
#pragma once

#include <string>
#include <vector>

#include "explain/kineto_trace.h"
#include "explain/replay_graph.h"
#include "explain/waterfall.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// `w`: the graph's weights with every edit applied, in the kinds' order whatever the order given
// (a kernel's factor before peak, a floor that never makes a row slower than another edit made
// it). When an edit has nothing in the trace for it (no device rows: host; no range priced by
// FLOPs: peak; no request with two denoising steps: steps), `why` says so ("peak: ..." among
// several) and `w` is the graph's own weights.
void what_if_weights(const ReplayGraph& g, const KinetoTrace& t,
                     const std::vector<TraceRange>& ranges, std::vector<const WhatIfEdit*> edits,
                     std::vector<double>& w, std::string& why);

}  // namespace vxperf::explain
