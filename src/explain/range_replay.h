// vxperf's ranges replayed (replay_graph.h): each range's span measured and replayed, the
// replay's critical path through it by bound type, and each what-if's predicted span
// (what_if.h), aggregated into the waterfall's rows.
#pragma once

#include <string>
#include <vector>

#include "explain/kineto_trace.h"
#include "explain/waterfall.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// The trace must have been read with every row; `ranges` are the waterfall's (keep_ranges).
// What could not be done goes to `problems`.
RankReplay replay_ranges(const KinetoTrace& t, const std::vector<TraceRange>& ranges,
                         const ReplayRequest& request, std::vector<std::string>& problems);

}  // namespace vxperf::explain
