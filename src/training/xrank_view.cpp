#include "training/xrank_view.h"

#include <algorithm>
#include <map>

#include "base/strings.h"

namespace vxperf::internal {

RankWindow rank_window_of(const TrainWindowRecord& r) {
  RankWindow w;
  w.rank = r.rank;
  w.world_size = r.world_size;
  w.step_first = r.step_first;
  w.step_last = r.step_last;
  w.step_s_p50 = r.step_s_p50;
  w.step_s_p95 = r.step_s_p95;
  for (const auto& [name, seconds] : r.phases_s) {
    if (auto phase = phase_from_name(name)) w.phase_s[static_cast<std::size_t>(*phase)] = seconds;
  }
  if (r.throughput) {
    w.samples_per_s = r.throughput->samples_per_s;
    if (r.throughput->priced) w.tflops = r.throughput->tflops;
  }
  if (r.device) w.peak_alloc_bytes = r.readings.value_or(DeviceReadings{}).allocated;
  return w;
}

std::string check_answers(const std::vector<RankWindow>& answers, const RankWindow& mine) {
  if (static_cast<int>(answers.size()) != mine.world_size) {
    return strprintf("%zu ranks answered in a world of %d", answers.size(), mine.world_size);
  }
  std::map<int, int> claims;
  for (const auto& a : answers) {
    if (a.world_size != mine.world_size) {
      return strprintf("rank %d counts a world of %d, rank %d one of %d", a.rank, a.world_size,
                       mine.rank, mine.world_size);
    }
    ++claims[a.rank];
  }
  for (const auto& [rank, count] : claims) {
    if (count > 1) {
      return strprintf(
          "rank %d is claimed by %d processes (check RANK and WORLD_SIZE, or set_topology)", rank,
          count);
    }
  }
  // Distinct ranks in [0, world) (unpacking checks the range), as many as the world: all there.
  for (const auto& a : answers) {
    if (a.step_first != mine.step_first || a.step_last != mine.step_last) {
      return strprintf(
          "rank %d closed this window at steps %lld-%lld, rank %d at %lld-%lld "
          "(VIDEOX_PERF_EVERY must be the same on every rank)",
          a.rank, static_cast<long long>(a.step_first), static_cast<long long>(a.step_last),
          mine.rank, static_cast<long long>(mine.step_first),
          static_cast<long long>(mine.step_last));
    }
  }
  return {};
}

CrossRankView cross_rank_view(const std::vector<RankWindow>& answers, int sharing,
                              XrankHistory& history) {
  std::vector<const RankWindow*> by_rank;
  for (const auto& a : answers) by_rank.push_back(&a);
  std::sort(by_rank.begin(), by_rank.end(),
            [](const RankWindow* a, const RankWindow* b) { return a->rank < b->rank; });

  std::vector<RankTimes> times;
  CrossRankView v;
  double samples = 0;
  bool all_samples = true;
  double tflops = 0;
  int priced = 0;
  for (const RankWindow* w : by_rank) {
    RankTimes t;
    t.rank = w->rank;
    t.step_s = w->step_s_p50;
    for (int k = 0; k < kPhaseCount; ++k) {
      double seconds = w->phase_s[static_cast<std::size_t>(k)];
      if (seconds != 0.0) t.phases_s.emplace_back(phase_name(static_cast<Phase>(k)), seconds);
    }
    times.push_back(std::move(t));
    v.step_s_p50.push_back(w->step_s_p50);
    if (w->step_s_p50 < by_rank[static_cast<std::size_t>(v.min_rank)]->step_s_p50) {
      v.min_rank = w->rank;
    }
    if (w->step_s_p50 > by_rank[static_cast<std::size_t>(v.max_rank)]->step_s_p50) {
      v.max_rank = w->rank;
    }
    if (w->samples_per_s) {
      samples += *w->samples_per_s;
    } else {
      all_samples = false;
    }
    if (w->tflops) {
      tflops += *w->tflops;
      ++priced;
    }
    if (w->peak_alloc_bytes && (!v.peak_alloc || *w->peak_alloc_bytes > v.peak_alloc->second)) {
      v.peak_alloc = std::make_pair(w->rank, *w->peak_alloc_bytes);
    }
  }
  StragglerVerdict verdict = find_stragglers(times);
  v.median_s = verdict.median_s;
  v.excess_s = verdict.excess_s;
  v.stragglers = verdict.stragglers;
  v.straggler_phases = verdict.where;
  if (all_samples && !by_rank.empty()) v.samples_per_s = samples / std::max(1, sharing);
  if (priced > 0) v.tflops = tflops / priced;
  // The scores, and the window's slowest rank charged its excess for the window's steps.
  const std::size_t ranks = by_rank.size();
  history.best_p50.resize(ranks, 0.0);
  history.best_phase_s.resize(ranks, std::array<double, kPhaseCount>{});
  history.lost_s.resize(ranks, 0.0);
  auto keep_best = [](double& best, double seconds) {
    if (seconds > 0 && (best <= 0 || seconds < best)) best = seconds;
  };
  std::vector<double> p50s;
  for (const RankWindow* w : by_rank) p50s.push_back(w->step_s_p50);
  v.relative_score = relative_scores(p50s);
  std::size_t slowest = 0;
  for (std::size_t i = 0; i < ranks; ++i) {
    const double p50 = by_rank[i]->step_s_p50;
    double& best = history.best_p50[i];
    keep_best(best, p50);
    v.individual_score.push_back(individual_score(best, p50));
    if (v.excess_s[i] > v.excess_s[slowest]) slowest = i;
  }
  // Phase by phase, of the phases some rank spent time in: where a collective evens the steps
  // out, the slow rank's own phase still shows.
  for (int k = 0; k < kPhaseCount; ++k) {
    const auto p = static_cast<std::size_t>(k);
    std::vector<double> seconds;
    bool any = false;
    for (const RankWindow* w : by_rank) {
      seconds.push_back(w->phase_s[p]);
      any = any || w->phase_s[p] > 0;
    }
    if (!any) continue;
    PhaseScores scores;
    scores.name = phase_name(static_cast<Phase>(k));
    scores.relative = relative_scores(seconds);
    for (std::size_t i = 0; i < ranks; ++i) {
      double& best = history.best_phase_s[i][p];
      keep_best(best, seconds[i]);
      scores.individual.push_back(individual_score(best, seconds[i]));
    }
    v.phase_scores.push_back(std::move(scores));
  }
  if (ranks > 0 && v.excess_s[slowest] > 0) {
    const double steps = static_cast<double>(by_rank[0]->step_last - by_rank[0]->step_first + 1);
    history.lost_s[slowest] += v.excess_s[slowest] * steps;
  }
  v.lost_s = history.lost_s;
  return v;
}

}  // namespace vxperf::internal
