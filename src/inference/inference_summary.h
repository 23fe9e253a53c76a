// The inference exit summary, kept small: a few numbers per request (its end-to-end time), not
// whole records, so that a server running for months does not grow.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/stats.h"
#include "schema/log_lines.h"

namespace vxperf::internal {

class InferenceSummary {
 public:
  // One settled request: its end-to-end time and every transformer call's milliseconds.
  void add(bool warmup, double e2e_s, const std::vector<double>& transformer_ms);
  // The summary line's numbers; nullopt when no request outside warmup was measured.
  std::optional<InferenceSummaryLine> line(int rank) const;

 private:
  std::int64_t warmup_ = 0;
  std::vector<double> e2e_s_;  // measured requests, in settle order
  double total_e2e_s_ = 0;     // left to right, as the reference's sum()
  ExactSum step_ms_;           // exactly rounded, as its fmean()
  std::int64_t steps_ = 0;
};

}  // namespace vxperf::internal
