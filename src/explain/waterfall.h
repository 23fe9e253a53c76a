// The loss waterfall: vxperf's ranges in a trace (`request N` and its stages, `step N` and its
// phases), the device work each one's host calls launched (by the launch link), and that work's
// span split into parts that add up to it, priced against the FLOPs the run's records give.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "explain/kineto_trace.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// What the records say of the ranges: which requests and steps they hold, the stages each request
// ran, and what a range's work should have taken at the peak.
struct Records {
  std::vector<std::string> files;
  // The stage names the requests' records list, each once; a request holds indices into it.
  std::vector<std::string> stage_names;
  // (rank, request number) -> the request: the stages it ran, and when it was priced, its priced
  // calls' ideal seconds and FLOPs and how many calls.
  struct Request {
    std::uint32_t file = 0;  // into `files`
    bool priced = false;
    double ideal_s = 0;
    std::int64_t calls = 0;
    double flops = 0;
    std::vector<std::uint32_t> stages;  // into `stage_names`
  };
  std::map<std::pair<int, std::int64_t>, Request> requests;
  // rank -> windows: [first, last] step; when priced, the ideal seconds and FLOPs per step and the
  // FLOPs coefficient.
  struct Window {
    std::uint32_t file = 0;
    bool priced = false;
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

// One of vxperf's ranges as the waterfall found it, for what reads the ranges again (the replay):
// its row, the device work it owns, its FLOPs at the peak and the waterfall rows it adds to.
struct TraceRange {
  std::uint32_t row = 0;         // position in KinetoTrace::rows
  std::int64_t parent = -1;      // the enclosing one of vxperf's ranges (into the list), -1: a root
  std::int64_t root = -1;        // its request or step (into the list)
  bool request = false;          // of a request (else of a training step)
  std::int64_t step_index = -1;  // a denoising step's index in its request
  std::vector<std::uint32_t> device;  // positions of the device rows it owns, sorted
  std::optional<double> ideal_s;      // its FLOPs at the peak, when the records price it
  struct Key {
    int order = 0;
    std::string range, kind;
    std::int64_t step_index = -1;
    bool operator<(const Key& o) const {
      return std::tie(order, range, step_index) < std::tie(o.order, o.range, o.step_index);
    }
  };
  std::vector<Key> keys;  // the waterfall rows it is aggregated into
};

// One trace's waterfall and what its join with the records came to.
struct RankWaterfall {
  // Aggregated per request stage, denoising step index, training step and phase.
  std::vector<WaterfallRow> rows;
  // The request and step numbers of the trace's ranges that no record holds (sorted, each once).
  std::vector<std::int64_t> requests_without_record, steps_without_record;
  // Per records file: the trace's requests and steps a record of it holds, and those it priced.
  std::vector<std::int64_t> matched, priced;
  // With `keep_ranges`: each of vxperf's ranges, parents before their children.
  std::vector<TraceRange> ranges;
};

RankWaterfall waterfall_of(const KinetoTrace& trace, const Records& records,
                           bool keep_ranges = false);

// "request 0, steps 3-4, 7": the numbers as runs of consecutive ones, at most `max_runs` of each
// kind shown ("... and N more").
std::string numbered_runs(const std::vector<std::int64_t>& requests,
                          const std::vector<std::int64_t>& steps, std::size_t max_runs = 16);

// Consecutive numbers (sorted) as [first, last] runs.
std::vector<std::pair<std::int64_t, std::int64_t>> runs_of(const std::vector<std::int64_t>& sorted);

}  // namespace vxperf::explain
