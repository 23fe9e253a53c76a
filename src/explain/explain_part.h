// `vxperf explain` cut in two: what each trace gives on its own (a TracePart: its rank, its
// profiler-step strings, its analyses, its waterfall and replay), then the job's step that every
// Explanation is made by (merge_parts: the ranks in order, HTA's window across ranks, the
// problems in the order one process says them, the kernel types summed). One process makes the
// parts in memory and merges them; `--partial` writes them as a document (partial_json) and
// `--merge` reads documents back (read_partial) into the same merge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/explain.h"

namespace vxperf::explain {

// The analyses of one trace in one window: HTA's window ends at the last profiler step's start
// when the job's traces hold at least two step strings, else it is the whole trace.
struct WindowedAnalysis {
  // analyse_rank's fields (has_device_rows, temporal, idle_by_stream, comm_comp_overlap_pct,
  // kernel_types, kernels, launches), the steps the window keeps, the critical path when asked.
  RankExplanation rank;
  std::vector<std::string> problems;  // analyse_rank's and the critical path's, without the file
};

struct TracePart {
  std::string file;
  std::string error;                  // the trace could not be read: why (the rest is empty)
  std::vector<std::string> warnings;  // the reader's, without the file
  int rank = 0;
  bool rank_found = false;
  // The first two of its profiler_step_strings (sorted): whether the job's traces hold two or
  // more together is all HTA's window takes from them.
  std::vector<std::string> step_strings;
  bool analysed = false;                  // false: left out (a rank read again), or unreadable
  // The window the job takes, or both where the trace alone cannot tell which it takes (a
  // partial of fewer than two step strings, with host rows): `filtered` ends at the last step's
  // start, `whole` is the trace.
  std::optional<WindowedAnalysis> filtered, whole;
  std::vector<WaterfallRow> waterfall;
  // Sorted numbers of the trace's requests and steps no record holds.
  std::vector<std::int64_t> requests_without_record, steps_without_record;
  // Per records file (ExplainParts::records_files): requests and steps a record of it holds,
  // and those it priced.
  std::vector<std::int64_t> matched, priced;
  std::optional<RankReplay> replay;
  std::vector<std::string> replay_problems;
};

// What some traces give before the job's step: a whole job's, or one partial's.
struct ExplainParts {
  // What the analyses were asked (a merge takes only parts asked the same): the replay, and its
  // what-ifs as written.
  bool replay = false;
  std::vector<std::string> what_ifs;
  // The records joined (load_records): the files read and what was said of those that could not be.
  std::vector<std::string> records_files, records_problems;
  std::vector<TracePart> traces;  // in file order
};

// Reads and analyses the traces. `partial`: every readable trace is analysed (a rank read again
// too: another partial may hold none of it), in both windows where these traces alone cannot
// tell; else only the first trace of each rank, in the job's window.
ExplainParts explain_parts(const std::vector<std::string>& paths, const ExplainOptions& options,
                           bool partial);

// The job's step: several parts (partials in order) as one Explanation. Throws
// std::invalid_argument where they were made with different options or records.
Explanation merge_parts(std::vector<ExplainParts> parts);

// The versioned partial document (docs/EXPLAIN.md, "Split and merged"), and back: throws
// std::invalid_argument naming what is wrong (not a partial, another version, another command's).
std::string partial_json(const ExplainParts& parts);
ExplainParts read_partial(const std::string& text);

}  // namespace vxperf::explain
