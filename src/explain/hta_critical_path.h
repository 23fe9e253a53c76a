// HTA 0.6.1's critical path analysis, reproduced exactly for those who compare: for one rank and
// an annotation's instance (or range of instances), CriticalPathAnalysis.critical_path_analysis()
// builds a graph of the window's CPU ops, runtime calls and GPU ops (a start and an end node
// each), with edges of five types: an op's own time and the gaps inside a call stack
// (`critical_path_operator`), zero-weight links (`critical_path_dependency`: consecutive
// top-level ops of a thread, the runtime lock across threads), a launch's delay
// (`critical_path_kernel_launch_delay`), the gap from the previous op of a stream
// (`critical_path_kernel_kernel_delay`, which can be negative) and synchronisations
// (`critical_path_sync_dependency`, from cuda_sync events only). Its longest path, by networkx's
// dag_longest_path, is the critical path; summary() splits it by what bounds each edge
// (cpu_bound, gpu_compute_bound, gpu_communication_bound, gpu_kernel_launch_overhead,
// gpu_kernel_kernel_overhead). Where HTA returns None, raises or fails, that is said instead.
//
// The rules, with HTA's blind spots kept (a synchronize's wait and host idle time never count;
// without cuda_sync events the path crosses from host to device at most once), are in
// docs/EXPLAIN.md. The graph is made of PathGraph's blocks (path_graph.h), which know nothing of
// HTA: a graph of vxperf's own can reuse them.
#pragma once

#include <string>
#include <vector>

#include "explain/hta_analysis.h"
#include "explain/kineto_trace.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// What the analysis of one rank takes from all of them: HTA's symbols are every rank's names and
// categories, and its times are shifted by the earliest start of every rank.
struct CriticalPathContext {
  double min_ts = 0;
  bool annotation_found = false;  // a name or category contains the annotation
  bool sync_events = false;       // one is "cuda_sync"
  bool event_record = false;      // one is "cudaEventRecord"
  bool stream_wait = false;       // "cudaStreamWaitEvent" and "Stream Wait Event" both are
};

// The traces must have been read with ReadOptions::every_row.
CriticalPathContext critical_path_context(const std::vector<const KinetoTrace*>& traces,
                                          const std::string& annotation);

// HTA's critical path of each instance asked for, on the rank of `w` (its trace read with every
// row).
RankCriticalPath hta_critical_path(const RankWindow& w, const CriticalPathRequest& request,
                                   const CriticalPathContext& context);

}  // namespace vxperf::explain
