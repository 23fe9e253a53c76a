// The live cross-rank view (VIDEOX_PERF_XRANK=1) and the one straggler rule.
//
// At every training window end each rank hands a few numbers (a RankWindow) to a rank exchange, an
// all-gather the program provides; the engine itself runs no collective. Rank 0's window record
// then carries an `xrank` object (every rank's step p50, the fastest and slowest, the stragglers)
// and rank 0 logs one line naming the stragglers. The Python package provides the exchange
// itself (torch.distributed over a CPU gloo group of its own); a C++ program gives its own:
//
//   engine->set_rank_exchange([comm](const vxperf::RankWindow& mine)
//                                 -> std::optional<std::vector<vxperf::RankWindow>> {
//     std::vector<double> send(vxperf::kRankWindowDoubles), all(send.size() * comm.size());
//     vxperf::pack_rank_window(mine, send.data());
//     if (!comm.allgather(send, all, /*timeout=*/30s)) return std::nullopt;  // the view goes off
//     std::vector<vxperf::RankWindow> out;
//     for (int r = 0; r < comm.size(); ++r) {
//       auto w = vxperf::unpack_rank_window(all.data() + r * vxperf::kRankWindowDoubles);
//       if (!w) return std::nullopt;
//       out.push_back(*w);
//     }
//     return out;
//   });
//
// Every rank calls the exchange at the same point of its loop: window k's numbers are exchanged
// when step `step_last + 2` closes (by then every rank has settled the window, whatever its
// device lagged), or at finish. The exchange must return within a bounded time
// (settings().xrank_timeout_s): a failure (nullopt or an exception) switches the view off on that
// rank with one notice, and training goes on. Answers that cannot be compared (another world
// size, two processes claiming one rank, windows ending at different steps) switch it off too,
// with one notice saying which.
//
// Thread safety: the exchange is called on the training thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vxperf/phases.h"

namespace vxperf {

// ---- the straggler rule -------------------------------------------------------------------------

// How far above the ranks' median a rank may run before it is a straggler (of the median step).
inline constexpr double kStragglerMargin = 0.05;

// One rank's times, as the rule reads them.
struct RankTimes {
  int rank = 0;
  double step_s = 0;  // its median step (or request) time
  // Mean seconds per step by phase; empty: the step time is the one "phase".
  std::vector<std::pair<std::string, double>> phases_s;
};

struct StragglerVerdict {
  double median_s = 0;             // median step time across ranks
  std::vector<double> excess_s;    // per input rank, in input order
  std::vector<int> stragglers;     // ascending
  std::vector<std::string> where;  // per straggler: the phase holding most of its excess
};

// The rule shared by the live view and `vxperf report`. A rank's excess is the time per step it
// spends above the cross-rank median, phase by phase (only where it is above). A rank is a
// straggler when its excess exceeds the smallest rank's excess by more than kStragglerMargin of
// the median step time.
//
// Why phases: in a synchronized job (DDP, FSDP) every rank's step lasts as long as the slowest
// one's, so step times agree; the straggler's extra time sits in its own phases (data, fwd) while
// the others wait in the phase holding the collective (bwd), where the majority sets the median.
// Without phases it is the old rule: step time over (1 + margin) times the median. With two ranks
// of a synchronized job, each is above the other in one phase by the same amount, so neither is
// named: two ranks cannot tell the slow one from the one waiting for it.
//
// Needs two ranks or more; fewer give an empty verdict.
StragglerVerdict find_stragglers(const std::vector<RankTimes>& ranks);

// ---- NVIDIA Resiliency's scores -----------------------------------------------------------------

// NVRx's straggler detection scores each rank, on its step and on each section (here: phase), in
// (0, 1], 1 best. The live view scores a window's numbers, `vxperf report` the ranks' medians over
// their windows; both by these two rules.
//
// Relative, by rank: the fastest rank's time over this rank's, the fastest being the lowest
// positive time; 1 where a rank's time is 0 (it spent nothing there).
std::vector<double> relative_scores(const std::vector<double>& times);
// Individual: this rank's best (lowest positive) time so far over its latest; 1 where the latest
// is 0.
double individual_score(double best, double latest);
// A score below this is worth naming (the report's text), where the time it costs is material.
inline constexpr double kLowScore = 0.9;

// ---- the rank exchange --------------------------------------------------------------------------

// What one rank contributes at a window end.
struct RankWindow {
  int rank = 0;
  int world_size = 1;
  std::int64_t step_first = 0, step_last = 0;
  double step_s_p50 = 0, step_s_p95 = 0;
  std::array<double, kPhaseCount> phase_s{};  // mean seconds per step, indexed by Phase
  std::optional<double> samples_per_s;        // local
  std::optional<double> tflops;               // the job rate this rank's window prices
  std::optional<std::uint64_t> peak_alloc_bytes;
};

// A RankWindow as a fixed number of doubles, for an all-gather of plain numbers: a tag, six
// numbers of the window, one per phase (indexed by Phase), three optional ones. The tag names the
// layout (and the phase count), so that ranks running different versions are told apart.
inline constexpr std::size_t kRankWindowDoubles = 7 + kPhaseCount + 3;
void pack_rank_window(const RankWindow& window, double* out);
// nullopt when `in` does not hold a packed RankWindow of this layout.
std::optional<RankWindow> unpack_rank_window(const double* in);

// Handed this rank's numbers, returns every rank's (in any order), or nullopt when the exchange
// failed.
using RankExchange = std::function<std::optional<std::vector<RankWindow>>(const RankWindow& mine)>;

}  // namespace vxperf
