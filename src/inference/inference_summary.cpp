#include "inference/inference_summary.h"

#include <algorithm>

namespace vxperf::internal {

void InferenceSummary::add(bool warmup, double e2e_s, const std::vector<double>& transformer_ms) {
  if (warmup) {
    ++warmup_;
    return;
  }
  e2e_s_.push_back(e2e_s);
  total_e2e_s_ += e2e_s;
  for (double ms : transformer_ms) step_ms_.add(ms);
  steps_ += static_cast<std::int64_t>(transformer_ms.size());
}

std::optional<InferenceSummaryLine> InferenceSummary::line(int rank) const {
  if (e2e_s_.empty()) return std::nullopt;
  std::vector<double> sorted = e2e_s_;
  std::sort(sorted.begin(), sorted.end());
  InferenceSummaryLine s;
  s.rank = rank;
  s.measured = static_cast<std::int64_t>(sorted.size());
  s.warmup = warmup_;
  s.e2e_p50_s = percentile(sorted, 50);
  s.e2e_p95_s = percentile(sorted, 95);
  if (steps_ > 0) s.step_mean_ms = step_ms_.value() / static_cast<double>(steps_);
  s.total_e2e_s = total_e2e_s_;
  return s;
}

}  // namespace vxperf::internal
