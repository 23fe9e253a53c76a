// The live cross-rank view's arithmetic: a window record into the numbers a rank exchanges, the
// answers checked, and rank 0's view made from them. Pure functions, tested without a trainer.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "vxperf/records.h"
#include "vxperf/xrank.h"

namespace vxperf::internal {

RankWindow rank_window_of(const TrainWindowRecord& record);

// Why the answers of an exchange cannot be compared ("" when they can): another world size, a
// rank claimed twice or missing, windows ending at different steps, this rank's numbers absent.
std::string check_answers(const std::vector<RankWindow>& answers, const RankWindow& mine);

// What rank 0's view keeps from one window to the next, by rank: each rank's best step p50 and
// best mean per phase (for the individual scores), and the seconds lost to it as a window's
// slowest rank.
struct XrankHistory {
  std::vector<double> best_p50;
  std::vector<std::array<double, kPhaseCount>> best_phase_s;  // 0: never spent in the phase
  std::vector<double> lost_s;
};

// Every rank's numbers (checked: one per rank of the world) into rank 0's view. `sharing`: ranks
// sharing one sample (cp x tp), so that the job's samples/s counts each sample once. `history`
// (updated): for the individual scores and the seconds lost.
CrossRankView cross_rank_view(const std::vector<RankWindow>& answers, int sharing,
                              XrankHistory& history);

}  // namespace vxperf::internal
