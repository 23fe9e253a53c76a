// The loss waterfall: vxperf's ranges in a trace (`request N` and its stages, `step N` and its
// phases), the device work each one's host calls launched (by the launch link), and that work's
// span split into parts that add up to it, priced against the FLOPs the run's records give.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "explain/kineto_trace.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// What the records say of the ranges: the stages each request ran, and what a range's work should
// have taken at the peak.
struct Records {
  std::vector<std::string> files;
  // The stage names the requests' records list, each once; a request holds indices into it.
  std::vector<std::string> stage_names;
  // (rank, request number) -> the request: the stages it ran, and when it was priced, its priced
  // calls' ideal seconds and FLOPs and how many calls.
  struct Request {
    bool priced = false;
    double ideal_s = 0;
    std::int64_t calls = 0;
    double flops = 0;
    std::vector<std::uint32_t> stages;  // into `stage_names`
  };
  std::map<std::pair<int, std::int64_t>, Request> requests;
  // rank -> windows: [first, last] step, ideal seconds and FLOPs per step, the FLOPs coefficient.
  struct Window {
    std::int64_t first = 0, last = 0;
    double ideal_step_s = 0, flops_step = 0, coef = 0;
  };
  std::map<int, std::vector<Window>> windows;
};

// Reads the records `given`, else those the traces name (`named`) where they exist, else the
// files beside the traces whose name holds ".jsonl" (a rank's "records.jsonl.rank3" too) and that
// hold records. A file given or named that cannot be read goes to `problems`.
Records load_records(const std::vector<std::string>& given, const std::vector<std::string>& named,
                     const std::vector<std::string>& trace_files,
                     std::vector<std::string>& problems);

// The waterfall rows of one trace, aggregated per request stage, denoising step index, training
// step and phase.
std::vector<WaterfallRow> waterfall_of(const KinetoTrace& trace, const Records& records);

}  // namespace vxperf::explain
