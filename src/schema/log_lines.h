// Every "[Perf]" line vxperf prints, made here and nowhere else: the request and window lines
// (format_log_line in vxperf/records.h), the level-2 dumps and the exit summaries. The formats are
// the reference's, character for character.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/records.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

// "[Perf][rank{N}]"
std::string log_tag(int rank);

// Level 2, after the request line: "<tag> <stage> steps(ms): 12.3, 45.6", stages by name.
std::vector<std::string> request_dump_lines(const RequestRecord& record,
                                            const RequestDetail& detail);
// Level 2, after the window line: "<tag> step 7 1.234s: data 0.010 fwd 0.600 ...", one per step.
std::vector<std::string> window_dump_lines(const TrainWindowRecord& record,
                                           const WindowDetail& detail);

// Rank 0's line after a window with a cross-rank view (VIDEOX_PERF_XRANK=1): "<tag> xrank step
// 10-19 | 4 ranks: p50 0.10s (rank 3) to 0.15s (rank 1), median 0.12s | stragglers: rank 1
// (+0.050s/step, most in data)", "stragglers: none" when none. "" without a view.
std::string xrank_log_line(const TrainWindowRecord& record);

// "=== N reqs (k warmup excluded) | e2e p50 …s p95 …s | transformer mean …ms/step | … reqs/hour
// ==="
struct InferenceSummaryLine {
  int rank = 0;
  std::int64_t measured = 0;
  std::int64_t warmup = 0;
  double e2e_p50_s = 0, e2e_p95_s = 0;
  std::optional<double> step_mean_ms;  // when any transformer step was measured
  double total_e2e_s = 0;
};
std::string format_summary(const InferenceSummaryLine& s);

// "=== N steps | p50 …s/step p95 …s | …h in-loop ==="
struct TrainingSummaryLine {
  int rank = 0;
  std::int64_t steps = 0;
  double p50_s = 0, p95_s = 0;
  double total_s = 0;
};
std::string format_summary(const TrainingSummaryLine& s);

}  // namespace vxperf::internal
